// The feed reads its three republish headers from the received bytes instead of NATS.js's
// header map (src/sources/republish-headers.ts). Its answer must be the one the map
// gives, for any header block: checked on NATS.js's own message class, against NATS.js's
// own header decoding, for blocks the server writes and blocks nobody should.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MsgHdrsImpl, MsgImpl } from "@nats-io/nats-core/internal";
import type { Msg } from "@nats-io/transport-node";
import { RepublishReader, rawHeaderEnd, type FeedPosition } from "../../src/sources/republish-headers.js";

const STREAM = "JETLOOP_t1";
const reader = new RepublishReader(STREAM);
const encoder = new TextEncoder();

/** A message as NATS.js's parser hands it to a subscription: header block, then payload. */
function message(block: string | Uint8Array, payload = '{"type":"X"}'): Msg {
  const hdr = typeof block === "string" ? encoder.encode(block) : block;
  const data = new Uint8Array([...hdr, ...encoder.encode(payload)]);
  const arg = { subject: encoder.encode("t1.feed.a.b.tool.X"), sid: 1, hdr: hdr.length, size: data.length };
  return new MsgImpl(arg, data, { publish() {} });
}

/**
 * What NATS.js's header map says the server wrote: the last value of each key (the server
 * appends its block after the headers the writer stored).
 */
function oracle(block: Uint8Array): FeedPosition | undefined | "unreadable" {
  let h: MsgHdrsImpl;
  try {
    h = MsgHdrsImpl.decode(block);
  } catch {
    return "unreadable";
  }
  const last = (k: string) => h.values(k).at(-1) ?? "";
  const seq = Number(last("Nats-Sequence"));
  const lastSeq = Number(last("Nats-Last-Sequence") || "0");
  if (last("Nats-Stream") !== STREAM || !Number.isSafeInteger(seq) || seq < 1 || !Number.isSafeInteger(lastSeq)) return undefined;
  return { seq, lastSeq };
}

function block(lines: string[]): string {
  return `NATS/1.0\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`;
}

const republished = block([
  "Nats-Msg-Id: 0190f2a1-5b3c-7aaa-8f60-000000001234",
  `Nats-Stream: ${STREAM}`,
  "Nats-Subject: t1.journal.a.b.tool.X",
  "Nats-Sequence: 4711",
  "Nats-Time-Stamp: 2026-11-30T16:20:00.123456789Z",
  "Nats-Last-Sequence: 4700",
]);

describe("RepublishReader", () => {
  it("reads a block as the server writes it from the bytes, without NATS.js's header map", () => {
    const m = message(republished);
    expect(rawHeaderEnd(m)).toBe(encoder.encode(republished).length);
    expect(reader.scan(encoder.encode(republished))).toEqual({ seq: 4711, lastSeq: 4700 });
    expect(reader.position(m)).toEqual({ seq: 4711, lastSeq: 4700 });
    expect((m as unknown as { _headers?: unknown })._headers).toBeUndefined();
  });

  it("reads the server's values, not those a writer stored on its event before the server's block (as 2.10.27 and 2.15.1 republish it)", () => {
    const forged = block([
      "Nats-Sequence: 77",
      `Nats-Stream: ${STREAM}`,
      "Nats-Last-Sequence: 5",
      `Nats-Stream: ${STREAM}`,
      "Nats-Subject: t1.journal.a.b.tool.X",
      "Nats-Sequence: 4711",
      "Nats-Time-Stamp: 2026-11-30T16:20:00.123456789Z",
      "Nats-Last-Sequence: 4700",
    ]);
    expect(reader.scan(encoder.encode(forged))).toEqual({ seq: 4711, lastSeq: 4700 });
    expect(reader.position(message(forged))).toEqual({ seq: 4711, lastSeq: 4700 });
    // Another stream's name forged first does not hide the event from the feed either.
    const hidden = block([`Nats-Stream: ${STREAM}X`, `Nats-Stream: ${STREAM}`, "Nats-Sequence: 9"]);
    expect(reader.position(message(hidden))).toEqual({ seq: 9, lastSeq: 0 });
  });

  it.each([
    ["another stream's republish", block([`Nats-Stream: ${STREAM}X`, "Nats-Sequence: 5"])],
    ["no stream", block(["Nats-Sequence: 5"])],
    ["no sequence", block([`Nats-Stream: ${STREAM}`])],
    ["sequence 0", block([`Nats-Stream: ${STREAM}`, "Nats-Sequence: 0"])],
    ["no previous sequence: 0", block([`Nats-Stream: ${STREAM}`, "Nats-Sequence: 9"])],
    ["spaces and tabs around values", block([`Nats-Stream: \t${STREAM} `, "Nats-Sequence:   12\t", "Nats-Last-Sequence:3"])],
    ["the last of repeated keys", block(["Nats-Sequence: 7", `Nats-Stream: ${STREAM}`, "Nats-Sequence: 8"])],
    ["a key in another letter case is another key", block(["nats-sequence: 7", `Nats-Stream: ${STREAM}`, "Nats-Sequence: 8"])],
    ["a number NATS.js's reading accepts in another form", block([`Nats-Stream: ${STREAM}`, "Nats-Sequence: 1e3"])],
    ["a sequence beyond 2^53", block([`Nats-Stream: ${STREAM}`, "Nats-Sequence: 9007199254740993"])],
    ["a value with bytes outside ASCII", block([`Nats-Stream: ${STREAM}`, "Nats-Sequence: \u00a012"])],
    ["a status line", `NATS/1.0 503\r\nNats-Stream: ${STREAM}\r\nNats-Sequence: 5\r\n\r\n`],
    ["a key with a space, which NATS.js refuses", block(["Bad Key: 1", `Nats-Stream: ${STREAM}`, "Nats-Sequence: 5"])],
  ])("%s: as NATS.js's header map", (_name, text) => {
    const bytes = encoder.encode(text);
    const expected = oracle(bytes);
    const scanned = reader.scan(bytes);
    expect(reader.position(message(bytes))).toEqual(expected === "unreadable" ? (scanned ?? undefined) : expected);
  });

  it("answers as NATS.js's header map for any block (a scan that is not sure leaves it to the map)", () => {
    const keys = fc.constantFrom("Nats-Stream", "Nats-Sequence", "Nats-Last-Sequence", "nats-sequence", "Nats-Subject", "Nats-Stream ", " Nats-Sequence", "X");
    const values = fc.oneof(
      fc.constantFrom(STREAM, `${STREAM}X`, "", " ", "0", "1", "12", "007", "1e3", "0x10", "-1", "1.5", "9007199254740991", "9007199254740992", "12345678901234567"),
      fc.stringMatching(/^[ \t]{0,2}[0-9]{1,17}[ \t]{0,2}$/),
      fc.string({ unit: "binary", maxLength: 8 }),
    );
    const line = fc.oneof({ weight: 8, arbitrary: fc.tuple(keys, fc.constantFrom(":", ": ", ":\t"), values).map(([k, c, v]) => `${k}${c}${v}`) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });
    const blocks = fc.tuple(fc.constantFrom("NATS/1.0", "NATS/1.0 503", "NATS/1.0 ", "NATS/2.0"), fc.array(line, { maxLength: 8 }), fc.constantFrom("\r\n\r\n", "\r\n", "")).map(
      ([first, lines, end]) => encoder.encode(`${first}${lines.map((l) => `\r\n${l}`).join("")}${end}`),
    );
    fc.assert(
      fc.property(blocks, (bytes) => {
        const expected = oracle(bytes);
        const scanned = reader.scan(bytes);
        const position = reader.position(message(bytes));
        if (expected === "unreadable") {
          // NATS.js throws on it (a key with a space, a value with a lone CR): the scan's answer where it is sure, else none.
          expect(position).toEqual(scanned ?? undefined);
          return;
        }
        if (scanned !== undefined) expect(scanned ?? undefined).toEqual(expected);
        expect(position).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it("reads a message without headers as no position", () => {
    const m = new MsgImpl({ subject: encoder.encode("t1.feed.a.b.tool.X"), sid: 1, hdr: -1, size: 2 }, encoder.encode("{}"), { publish() {} }) as unknown as Msg;
    expect(rawHeaderEnd(m)).toBe(-1);
    expect(reader.position(m)).toBeUndefined();
  });
});
