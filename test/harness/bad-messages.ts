// Malformed messages, one table for both channels (the journal and the live subjects):
// each mutation breaks a rule the decoder or the subject check must enforce (no oracle)
// and names the error the reader reports it with. The unit tests apply every row to the
// decoder; subscribe-poison and the bad-input scenario send every row on both channels.
// Seeded, so a run can be repeated exactly. (No vitest here: the soak uses it too.)
import {
  createEvent,
  defaultRegistry,
  encodeEvent,
  eventSubject,
  newId,
  type DecodeFailure,
  type JetloopErrorCode,
  type JetloopEvent,
} from "../../src/index.js";
import type { Coords } from "./reliability/workload.js";

/** A small seeded PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Channel = "journal" | "live";
export const CHANNELS: readonly Channel[] = ["journal", "live"];

/** What the reader reports for a poisonous mutation: the error's code, and its decode reason or field where one. */
export interface Expectation {
  readonly code: JetloopErrorCode;
  readonly reason?: DecodeFailure;
  /** The field an EVENT_INVALID names. */
  readonly field?: string;
}

/** A valid message of one channel, for a mutation to corrupt. */
export interface Valid {
  readonly ns: string;
  readonly channel: Channel;
  readonly coords: Coords;
  /** An event of the channel's class (enduring on the journal, a preview on live). */
  readonly event: JetloopEvent;
  readonly data: Uint8Array;
  /** The reader's decode cap. */
  readonly capBytes: number;
  /** A seeded random integer below n. */
  readonly int: (n: number) => number;
}

export interface Mutation {
  readonly name: string;
  /**
   * The error the reader reports it with, or `stripped`: a valid event with an extra
   * envelope key, which the decoder ignores by design (reader leniency, as the Go runtime
   * does): it is yielded, without the key.
   */
  readonly expect: Expectation | "stripped";
  /** The bytes, and the subject when not the valid message's, that the channel is sent. */
  readonly corrupt: (v: Valid) => { readonly data: Uint8Array; readonly subject?: string };
}

export interface BadMessage {
  readonly kind: string;
  readonly expect: Mutation["expect"];
  /** Where it is sent: the journal (raw JetStream publish) or a live subject (core NATS). */
  readonly channel: Channel;
  readonly subject: string;
  readonly data: Uint8Array;
  /** The id of the valid event it was made from (a `stripped` one is delivered with it). */
  readonly eventId: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A secret that must never reach the stream or a log (scanned for by the tests). */
export const SECRET_GRANT = "gt-SECRET-7f3c9a1e-DO-NOT-LEAK";
export const SECRET_ARGUMENT = "rm -rf /srv/SECRET-ARG-51d2";

function withJson(bytes: Uint8Array, edit: (o: Record<string, unknown>) => void): Uint8Array {
  const o = JSON.parse(dec.decode(bytes)) as Record<string, unknown>;
  edit(o);
  return enc.encode(JSON.stringify(o));
}

/** The subject of an event on `channel` (its own channel, or the wrong one). */
export function subjectOn(ns: string, channel: Channel, e: JetloopEvent): string {
  const h = e as { sessionId: string; loopId?: string; type: string };
  return eventSubject(ns, channel, { sessionId: h.sessionId, loopId: h.loopId, family: defaultRegistry.get(h.type)!.family, type: h.type });
}

/** A valid event of the channel's class: a decision for the journal, a preview for live. */
export function validOf(channel: Channel, c: Coords): JetloopEvent {
  return channel === "journal"
    ? createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "approve" })
    : createEvent("ToolCallStarted", { ...c, toolExecutionId: newId(), toolName: "bash" });
}

type RawRequest = Record<string, unknown> & { requirements: Record<string, unknown>[] };

/** A PermissionRequested sent on the channel, its request edited. */
function withRequest(v: Valid, edit: (request: RawRequest) => void) {
  const req = createEvent("PermissionRequested", {
    ...v.coords,
    toolExecutionId: newId(),
    request: { toolName: "bash", requirements: [{ kind: "fs.read", match: "/tmp", description: "read /tmp" }] },
  });
  return { subject: subjectOn(v.ns, v.channel, req), data: withJson(encodeEvent(req), (o) => edit(o.request as RawRequest)) };
}

const decode = (reason: DecodeFailure): Expectation => ({ code: "EVENT_DECODE", reason });

/**
 * The malformed messages, each invalid whatever its random details and on either channel:
 * every row is sent raw into the journal and onto a live subject.
 */
export const MUTATIONS: readonly Mutation[] = [
  {
    name: "random-bytes",
    expect: decode("not_utf8"),
    corrupt: ({ int }) => {
      const data = Uint8Array.from({ length: 1 + int(200) }, () => int(256));
      data[0] = 0x80 + int(0x40); // a continuation byte first: never UTF-8, never JSON
      return { data };
    },
  },
  { name: "truncated", expect: decode("malformed_json"), corrupt: ({ data, int }) => ({ data: data.slice(0, 1 + int(data.length - 2)) }) },
  {
    name: "not-utf8",
    expect: decode("not_utf8"),
    corrupt: ({ data, int }) => {
      const at = 1 + int(data.length - 2);
      return { data: new Uint8Array([...data.slice(0, at), ...[[0xc3, 0x28], [0xff]][int(2)]!, ...data.slice(at)]) };
    },
  },
  { name: "bom", expect: decode("malformed_json"), corrupt: ({ data }) => ({ data: new Uint8Array([0xef, 0xbb, 0xbf, ...data]) }) },
  { name: "empty", expect: decode("malformed_json"), corrupt: () => ({ data: new Uint8Array() }) },
  { name: "not-an-object", expect: decode("not_an_object"), corrupt: ({ int }) => ({ data: enc.encode(["[]", "null", "42", '"PermissionDecided"', "true", "[{}]"][int(6)]) }) },
  {
    name: "duplicate-key",
    expect: decode("duplicate_key"),
    corrupt: ({ data, event, int }) => ({ data: enc.encode(dec.decode(data).replace("{", int(2) ? `{"session_id":"${newId()}",` : `{"type":"${event.type}",`)) }),
  },
  {
    // JSON.parse quotes the text around a syntax error: the report and the log must not.
    name: "malformed-around-secret",
    expect: decode("malformed_json"),
    corrupt: ({ event }) => ({ data: enc.encode(`{"type":"${event.type}","grant_token":${SECRET_GRANT}}`) }),
  },
  { name: "unknown-type", expect: { code: "EVENT_TYPE_UNKNOWN" }, corrupt: ({ data, int }) => ({ data: withJson(data, (o) => (o.type = `NotAType${int(1000)}`)) }) },
  { name: "missing-type", expect: decode("missing_type"), corrupt: ({ data }) => ({ data: withJson(data, (o) => delete o.type) }) },
  { name: "wrong-version", expect: { code: "EVENT_INVALID", field: "v" }, corrupt: ({ data, int }) => ({ data: withJson(data, (o) => (o.v = 2 + int(5))) }) },
  { name: "unknown-field", expect: "stripped", corrupt: ({ data, int }) => ({ data: withJson(data, (o) => (o[`extra_${int(100)}`] = int(10))) }) },
  {
    // A field of other types (turn events' turn_index, a StepDone's messages) that this
    // type lacks, with a value their rules refuse: Go ignores the key here, so does jetloop.
    name: "other-types-field",
    expect: "stripped",
    corrupt: ({ data, int }) => {
      const value = int(2) ? ["1.0", "-0", "1e2", "9007199254740993"][int(4)]! : `[{"role":"assistant","blocks":[{"Text":1.0,"type":"text"}]}]`;
      return { data: enc.encode(dec.decode(data).replace(/}$/, `,"${value.startsWith("[") ? "messages" : "turn_index"}":${value}}`)) };
    },
  },
  // The typed request's decoder is strict: no grant token, no raw tool arguments.
  {
    name: "smuggled-grant-token",
    expect: { code: "EVENT_INVALID", field: "request.grant_token" },
    corrupt: (v) => withRequest(v, (r) => (r.grant_token = SECRET_GRANT)),
  },
  {
    name: "request-arguments",
    expect: { code: "EVENT_INVALID", field: "request.arguments" },
    corrupt: (v) => withRequest(v, (r) => (r.arguments = { command: SECRET_ARGUMENT })),
  },
  {
    name: "requirement-arguments",
    expect: { code: "EVENT_INVALID", field: "request.requirements.0.raw_arguments" },
    corrupt: (v) => withRequest(v, (r) => (r.requirements[0]!.raw_arguments = SECRET_ARGUMENT)),
  },
  {
    name: "envelope-arguments",
    expect: "stripped",
    corrupt: ({ data }) => ({ data: withJson(data, (o) => (o.arguments = { command: SECRET_ARGUMENT, grant_token: SECRET_GRANT })) }),
  },
  {
    // Past the reader's nesting limit, Go's 10,000 (MAX_DEPTH in src/wire/strict-json.ts).
    name: "too-deep",
    expect: decode("too_deep"),
    corrupt: ({ data, int, capBytes }) => {
      const depth = 10_000 + int(40);
      // Arrays or objects; objects need 5 bytes a level, so they nest only as far as the cap allows past the limit.
      const nested = int(2) || capBytes < 6 * depth ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
      return { data: enc.encode(dec.decode(data).replace(/}$/, `,"nested":${nested}}`)) };
    },
  },
  {
    name: "bad-uuid",
    expect: { code: "EVENT_INVALID", field: "toolExecutionId" },
    corrupt: ({ data, int }) => ({ data: withJson(data, (o) => (o.tool_execution_id = ["not-a-uuid", "*", "a.b", ">", newId().toUpperCase()][int(5)])) }),
  },
  { name: "other-session-on-subject", expect: { code: "DELIVERY_INVALID" }, corrupt: ({ channel, coords }) => ({ data: encodeEvent(validOf(channel, { ...coords, sessionId: newId() })) }) },
  { name: "other-loop-on-subject", expect: { code: "DELIVERY_INVALID" }, corrupt: ({ channel, coords }) => ({ data: encodeEvent(validOf(channel, { ...coords, loopId: newId() })) }) },
  {
    // An event of the other class on this channel: a preview in the journal, an enduring event on live.
    name: "wrong-channel",
    expect: { code: "DELIVERY_INVALID" },
    corrupt: ({ ns, channel, coords }) => {
      const e = validOf(channel === "journal" ? "live" : "journal", coords);
      return { subject: subjectOn(ns, channel, e), data: encodeEvent(e) };
    },
  },
  {
    // Over the reader's cap, under the stream's and the server's limits (the server accepts it).
    name: "oversize",
    expect: decode("too_large"),
    corrupt: ({ data, capBytes, int }) => ({ data: withJson(data, (o) => (o.padding = "x".repeat(capBytes + 1 + int(capBytes)))) }),
  },
];

/** One message of every mutation on each channel, `repeat` times, for one session/loop on namespace `ns`. */
export function badMessages(ns: string, c: Coords, repeat: number, seed: number, capBytes: number): BadMessage[] {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const out: BadMessage[] = [];
  for (let r = 0; r < repeat; r++) {
    for (const channel of CHANNELS) {
      for (const m of MUTATIONS) {
        const event = validOf(channel, c);
        const subject = subjectOn(ns, channel, event);
        const bad = m.corrupt({ ns, channel, coords: c, event, data: encodeEvent(event), capBytes, int });
        out.push({ kind: m.name, expect: m.expect, channel, subject: bad.subject ?? subject, data: bad.data, eventId: event.eventId });
      }
    }
  }
  return out;
}

/** Ids that an attacker might try to smuggle subject tokens through. */
export const INJECTION_IDS = [
  "a.b",
  "*",
  ">",
  "x.>",
  "0190f2a1-5b3c-7d4e-8f60-000000000001.>",
  "0190f2a1-5b3c-7d4e-8f60-000000000001.*",
  "0190f2a1-5b3c-7d4e-8f60-00000000000*",
  "0190f2a1 5b3c 7d4e 8f60 000000000001",
  "0190f2a1-5b3c-7d4e-8f60-000000000001\n",
  "0190F2A1-5B3C-7D4E-8F60-000000000001",
  "",
  "_",
  "$JS.API.>",
  "..",
  "0190f2a1-5b3c-7d4e-8f60-00000000000１", // a fullwidth digit
] as const;
