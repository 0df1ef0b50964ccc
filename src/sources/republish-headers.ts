/**
 * Where a republished feed message stands in the journal: its `Nats-Sequence` and
 * `Nats-Last-Sequence`, if its `Nats-Stream` is the events stream — read straight from
 * the message's header block.
 *
 * Why not `msg.headers`: NATS.js decodes a whole header block into a map on first access
 * (every line split and decoded, every key and value checked, each lookup building
 * arrays). A feed message has half a dozen headers and the feed reads three, for every
 * event of a namespace: that decoding cost as much as decoding and validating the event
 * itself (BENCHMARKS.md, benchmark 7). The client keeps the received bytes, but only on
 * its message class's own fields, so `rawHeaderEnd` checks their shape and the reader
 * falls back to `msg.headers` when they are not there; this module's test fails if the
 * installed client stops exposing them.
 *
 * Which value: the server republishes a stored message with the message's own headers
 * first and appends its own block (`Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, …,
 * `Nats-Last-Sequence`) after them, whatever keys the writer already set (measured on
 * 2.10.27 and 2.15.1). A writer may store `Nats-Sequence: 77` on its event; only the last
 * value of each key is the server's, so that is the one read (SECURITY.md). The answers
 * are those `msg.headers` gives for that value: the last of the exactly spelled key,
 * trimmed, read as a number. A value the scan is not sure of (not plain ASCII digits or
 * name, more than 15 digits) or a block with a status line is read through `msg.headers`.
 */
import type { Msg, MsgHdrs } from "@nats-io/transport-node";
import { RepublishHeaders } from "../subjects/nats-names.js";

/** A feed message's journal sequence and the previous sequence of its journal subject (0 for none). */
export interface FeedPosition {
  readonly seq: number;
  readonly lastSeq: number;
}

const PREAMBLE = "NATS/1.0\r\n";
const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;
const { Stream: STREAM, Sequence: SEQUENCE, LastSequence: LAST_SEQUENCE } = RepublishHeaders;
const KEYS = [STREAM, SEQUENCE, LAST_SEQUENCE] as const;
/** Digits a value may have to be read here exactly; longer ones go to `msg.headers`. */
const MAX_DIGITS = 15;
/** The scan could not decide: `msg.headers` reads the message. */
const UNSURE = -2;
/** Absent or empty. */
const NONE = -1;

/** What NATS.js's message class keeps of a received message. */
interface Received {
  readonly _msg?: { readonly hdr?: unknown };
  readonly _rdata?: unknown;
}

/**
 * Where the header block ends in the bytes the client received (`_rdata`, from 0), or -1
 * when the client does not expose them. No view is made: that would be one more object
 * per message.
 */
export function rawHeaderEnd(msg: Msg): number {
  const end = (msg as unknown as Received)._msg?.hdr;
  const bytes = (msg as unknown as Received)._rdata;
  return typeof end === "number" && bytes instanceof Uint8Array && end >= 0 && end <= bytes.length ? end : -1;
}

/** Reads the feed position of messages republished by one stream. */
export class RepublishReader {
  readonly #stream: string;
  readonly #streamBytes: Uint8Array;

  constructor(stream: string) {
    this.#stream = stream;
    this.#streamBytes = new TextEncoder().encode(stream);
  }

  /** The message's position, or undefined when it is not a republish of this stream with a valid sequence. */
  position(msg: Msg): FeedPosition | undefined {
    const end = rawHeaderEnd(msg);
    const scanned = end < 0 ? undefined : this.scan((msg as unknown as Received)._rdata as Uint8Array, end);
    if (scanned !== undefined) return scanned === null ? undefined : scanned;
    let h: MsgHdrs | undefined;
    try {
      h = msg.headers;
    } catch {
      return undefined; // a block NATS.js cannot read is not one the stream wrote
    }
    return this.#judge(serverValue(h, STREAM) === this.#stream, Number(serverValue(h, SEQUENCE)), Number(serverValue(h, LAST_SEQUENCE) || "0"));
  }

  /**
   * The position in a header block (`block` up to `end`): null when it is not this
   * stream's republish or has no valid sequence, undefined when `msg.headers` should decide.
   */
  scan(block: Uint8Array, end: number = block.length): FeedPosition | null | undefined {
    for (let j = 0; j < PREAMBLE.length; j++) if (block[j] !== PREAMBLE.charCodeAt(j)) return undefined;
    // Per key, its last line's: -1 not seen (or empty); the stream: 1 ours, 0 not; the sequences: the number.
    const found = [NONE, NONE, NONE];
    // Line by line, as NATS.js splits the block on CRLF; a line's key runs to its first colon.
    for (let i = PREAMBLE.length; i < end; ) {
      const eol = block.indexOf(CR, i);
      if (eol < 0 || eol + 1 >= end || block[eol + 1] !== LF) return undefined;
      if (eol === i) break; // the blank line that ends the block
      const k = keyAt(block, i, eol);
      // Every line of a key is read: the last, the server's, stands.
      if (k >= 0) {
        const start = i + KEYS[k]!.length + 1;
        const v = k === 0 ? this.#isStream(block, start, eol) : digits(block, start, eol);
        if (v === UNSURE) return undefined;
        found[k] = v;
      }
      i = eol + 2;
    }
    // As `Number("")` (absent or empty): no sequence is 0; no previous one is 0 too.
    const seq = found[1] === NONE ? 0 : found[1]!;
    const lastSeq = found[2] === NONE ? 0 : found[2]!;
    return this.#judge(found[0] === 1, seq, lastSeq) ?? null;
  }

  // Only the stream writes on the feed (nobody is granted publish there); anything else is not an event of the journal.
  #judge(ours: boolean, seq: number, lastSeq: number): FeedPosition | undefined {
    if (!ours || !Number.isSafeInteger(seq) || seq < 1 || !Number.isSafeInteger(lastSeq)) return undefined;
    return { seq, lastSeq };
  }

  /** 1 when the value is the stream's name, 0 when not, NONE when empty, UNSURE for bytes outside plain ASCII. */
  #isStream(block: Uint8Array, from: number, to: number): number {
    const start = trimStart(block, from, to);
    const end = trimEnd(block, start, to);
    if (start === UNSURE || end === UNSURE) return UNSURE;
    if (start === end) return NONE;
    const name = this.#streamBytes;
    let same = end - start === name.length;
    for (let j = start; j < end; j++) {
      const c = block[j]!;
      if (c < 0x21 || c > 0x7e) return UNSURE;
      if (same && c !== name[j - start]) same = false;
    }
    return same ? 1 : 0;
  }
}

/** The server's value of a republish key: the last (it appends its block after the writer's headers), "" for none. */
function serverValue(h: MsgHdrs | undefined, key: string): string {
  return h?.values(key).at(-1) ?? "";
}

/** Which of KEYS the line from `start` has as its key (NATS.js's lookups are exact), or -1. */
function keyAt(block: Uint8Array, start: number, end: number): number {
  for (let k = 0; k < KEYS.length; k++) {
    const key = KEYS[k]!;
    if (start + key.length >= end || block[start + key.length] !== COLON) continue;
    let j = 0;
    while (j < key.length && block[start + j] === key.charCodeAt(j)) j++;
    if (j === key.length) return k;
  }
  return -1;
}

/** A value of plain decimal digits as a number, NONE when empty, UNSURE otherwise. */
function digits(block: Uint8Array, from: number, to: number): number {
  const start = trimStart(block, from, to);
  const end = trimEnd(block, start, to);
  if (start === UNSURE || end === UNSURE) return UNSURE;
  if (start === end) return NONE;
  if (end - start > MAX_DIGITS) return UNSURE;
  let n = 0;
  for (let j = start; j < end; j++) {
    const d = block[j]! - 0x30;
    if (d < 0 || d > 9) return UNSURE;
    n = n * 10 + d;
  }
  return n;
}

// A value's ends without the spaces and tabs around it; UNSURE when other bytes that
// JavaScript's trim would remove (or that are not ASCII) stand at an end.
const edge = (c: number) => c < 0x20 || c > 0x7e;

function trimStart(block: Uint8Array, start: number, end: number): number {
  while (start < end && (block[start] === 0x20 || block[start] === 0x09)) start++;
  return start < end && edge(block[start]!) ? UNSURE : start;
}

function trimEnd(block: Uint8Array, start: number, end: number): number {
  if (start === UNSURE) return UNSURE;
  while (end > start && (block[end - 1] === 0x20 || block[end - 1] === 0x09)) end--;
  return end > start && edge(block[end - 1]!) ? UNSURE : end;
}
