// Malformed messages for the bad-input scenario, invalid by construction (no oracle:
// each kind breaks a rule the decoder or the subject check must enforce), made from a
// seeded generator so a run can be repeated exactly.
import { createEvent, encodeEvent, newId, type JetloopEvent } from "../../../src/index.js";
import type { Coords } from "./workload.js";

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

export interface BadMessage {
  readonly kind: string;
  /**
   * `poison`: must be reported and never yielded. `stripped`: a valid event with an extra
   * envelope key, which the decoder ignores by design (reader leniency, as the Go runtime
   * does): it is yielded, without the key.
   */
  readonly expect: "poison" | "stripped";
  /** Where it is sent: the journal (raw JetStream publish) or a live subject (core NATS). */
  readonly channel: "journal" | "live";
  readonly subject: string;
  readonly data: Uint8Array;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A secret that must never reach the stream or a log (scanned for by the tests). */
export const SECRET_GRANT = "gt-SECRET-7f3c9a1e-DO-NOT-LEAK";
export const SECRET_ARGUMENT = "rm -rf /srv/SECRET-ARG-51d2";

function subjectOf(ns: string, channel: "journal" | "live", e: JetloopEvent, family: string): string {
  const h = e as { sessionId: string; loopId?: string; type: string };
  return `${ns}.${channel}.${h.sessionId}.${h.loopId ?? "_"}.${family}.${h.type}`;
}

function withJson(bytes: Uint8Array, edit: (o: Record<string, unknown>) => void): Uint8Array {
  const o = JSON.parse(dec.decode(bytes)) as Record<string, unknown>;
  edit(o);
  return enc.encode(JSON.stringify(o));
}

/** Kinds of malformed journal messages; each is invalid whatever the random details. */
export const JOURNAL_KINDS = [
  "random-bytes",
  "truncated",
  "not-utf8",
  "bom",
  "empty",
  "not-an-object",
  "duplicate-key",
  "unknown-type",
  "missing-type",
  "wrong-version",
  "unknown-field",
  "smuggled-grant-token",
  "request-arguments",
  "envelope-arguments",
  "too-deep",
  "bad-uuid",
  "other-session-on-subject",
  "ephemeral-in-journal",
  "oversize",
] as const;

export const LIVE_KINDS = [
  "random-bytes",
  "truncated",
  "not-utf8",
  "empty",
  "not-an-object",
  "duplicate-key",
  "unknown-type",
  "unknown-field",
  "envelope-arguments",
  "too-deep",
  "other-loop-on-subject",
  "enduring-on-live",
  "oversize",
] as const;

/** Kinds the decoder accepts by design, dropping the unknown envelope key. */
export const STRIPPED_KINDS: ReadonlySet<string> = new Set(["unknown-field", "envelope-arguments"]);

/**
 * `repeat` messages of every kind, for one session/loop, on namespace `ns`. `capBytes` is
 * the reader's decode cap: the oversize kind exceeds it (while staying under the stream's
 * and the server's limits, so the server accepts it).
 */
export function badMessages(ns: string, c: Coords, repeat: number, seed: number, capBytes: number): BadMessage[] {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const out: BadMessage[] = [];
  const decided = () => createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "approve" });
  const preview = () => createEvent("ToolCallStarted", { ...c, toolExecutionId: newId(), toolName: "bash" });
  const requested = () =>
    createEvent("PermissionRequested", {
      ...c,
      toolExecutionId: newId(),
      request: { toolName: "bash", requirements: [{ kind: "fs.read", match: "/tmp", description: "read /tmp" }] },
    });
  for (let r = 0; r < repeat; r++) {
    for (const kind of JOURNAL_KINDS) {
      const e = decided();
      const subject = subjectOf(ns, "journal", e, "tool");
      const valid = encodeEvent(e);
      let data: Uint8Array;
      let on = subject;
      switch (kind) {
        case "random-bytes":
          data = Uint8Array.from({ length: 1 + int(200) }, () => int(256));
          data[0] = 0x80 + int(0x40); // a continuation byte first: never UTF-8, never JSON
          break;
        case "truncated":
          data = valid.slice(0, 1 + int(valid.length - 2));
          break;
        case "not-utf8": {
          const at = 1 + int(valid.length - 2);
          data = new Uint8Array([...valid.slice(0, at), 0xc3, 0x28, ...valid.slice(at)]);
          break;
        }
        case "bom":
          data = new Uint8Array([0xef, 0xbb, 0xbf, ...valid]);
          break;
        case "empty":
          data = new Uint8Array();
          break;
        case "not-an-object":
          data = enc.encode(["[]", "null", "42", '"PermissionDecided"', "true", "[{}]"][int(6)]);
          break;
        case "duplicate-key":
          data = enc.encode(dec.decode(valid).replace("{", `{"session_id":"${newId()}",`));
          break;
        case "unknown-type":
          data = withJson(valid, (o) => (o.type = `NotAType${int(1000)}`));
          break;
        case "missing-type":
          data = withJson(valid, (o) => delete o.type);
          break;
        case "wrong-version":
          data = withJson(valid, (o) => (o.v = 2 + int(5)));
          break;
        case "unknown-field":
          data = withJson(valid, (o) => (o[`extra_${int(100)}`] = int(10)));
          break;
        case "smuggled-grant-token": {
          const req = requested();
          on = subjectOf(ns, "journal", req, "tool");
          data = withJson(encodeEvent(req), (o) => ((o.request as Record<string, unknown>).grant_token = SECRET_GRANT));
          break;
        }
        case "request-arguments": {
          // Raw tool arguments inside the typed request: its decoder is strict.
          const req = requested();
          on = subjectOf(ns, "journal", req, "tool");
          data = withJson(encodeEvent(req), (o) => {
            const r = o.request as { requirements: Record<string, unknown>[] } & Record<string, unknown>;
            if (int(2) === 0) r.arguments = { command: SECRET_ARGUMENT };
            else r.requirements[0]!.raw_arguments = SECRET_ARGUMENT;
          });
          break;
        }
        case "envelope-arguments":
          data = withJson(valid, (o) => (o.arguments = { command: SECRET_ARGUMENT, grant_token: SECRET_GRANT }));
          break;
        case "too-deep": {
          // Past the strict parser's nesting limit of 512 (src/codec/strict-json.ts).
          const depth = 513 + int(40);
          data = enc.encode(dec.decode(valid).replace(/}$/, `,"nested":${"[".repeat(depth)}1${"]".repeat(depth)}}`));
          break;
        }
        case "bad-uuid":
          data = withJson(valid, (o) => (o.tool_execution_id = ["not-a-uuid", "*", "a.b", ">", "", newId().toUpperCase()][int(6)]));
          break;
        case "other-session-on-subject":
          data = encodeEvent(createEvent("PermissionDecided", { ...c, sessionId: newId(), toolExecutionId: newId(), effect: "deny" }));
          break;
        case "ephemeral-in-journal": {
          const p = preview();
          on = subjectOf(ns, "journal", p, "tool");
          data = encodeEvent(p);
          break;
        }
        case "oversize": {
          const step = createEvent("StepDone", { ...c, messages: [{ role: "assistant", blocks: [{ type: "text", text: "x".repeat(capBytes + 1 + int(capBytes)) }] }] });
          on = subjectOf(ns, "journal", step, "step");
          data = encodeEvent(step);
          break;
        }
      }
      out.push({ kind, expect: STRIPPED_KINDS.has(kind) ? "stripped" : "poison", channel: "journal", subject: on, data });
    }
    for (const kind of LIVE_KINDS) {
      const e = preview();
      const subject = subjectOf(ns, "live", e, "tool");
      const valid = encodeEvent(e);
      let data: Uint8Array;
      let on = subject;
      switch (kind) {
        case "random-bytes":
          data = Uint8Array.from({ length: 1 + int(200) }, () => int(256));
          data[0] = 0x80 + int(0x40);
          break;
        case "truncated":
          data = valid.slice(0, 1 + int(valid.length - 2));
          break;
        case "not-utf8": {
          const at = 1 + int(valid.length - 2);
          data = new Uint8Array([...valid.slice(0, at), 0xff, ...valid.slice(at)]);
          break;
        }
        case "empty":
          data = new Uint8Array();
          break;
        case "not-an-object":
          data = enc.encode(["[]", "null", "0", '"x"'][int(4)]);
          break;
        case "duplicate-key":
          data = enc.encode(dec.decode(valid).replace("{", `{"type":"ToolCallStarted",`));
          break;
        case "unknown-type":
          data = withJson(valid, (o) => (o.type = "ToolCallExploded"));
          break;
        case "unknown-field":
          data = withJson(valid, (o) => (o.secret = int(10)));
          break;
        case "envelope-arguments":
          data = withJson(valid, (o) => (o.arguments = [SECRET_ARGUMENT]));
          break;
        case "too-deep": {
          const depth = 513 + int(20);
          data = enc.encode(dec.decode(valid).replace(/}$/, `,"x":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`));
          break;
        }
        case "other-loop-on-subject":
          data = encodeEvent(createEvent("ToolCallStarted", { ...c, loopId: newId(), toolExecutionId: newId(), toolName: "bash" }));
          break;
        case "enduring-on-live": {
          const d = decided();
          on = subjectOf(ns, "live", d, "tool");
          data = encodeEvent(d);
          break;
        }
        case "oversize": {
          const big = createEvent("ToolCallCompleted", { ...c, toolExecutionId: newId() });
          data = withJson(encodeEvent(big), (o) => (o.result_preview = "y".repeat(capBytes + 1 + int(capBytes))));
          break;
        }
      }
      out.push({ kind, expect: STRIPPED_KINDS.has(kind) ? "stripped" : "poison", channel: "live", subject: on, data });
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
