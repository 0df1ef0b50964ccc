/**
 * Fuzzes every untrusted decoder: the event decoders (`decodeEvent` for either class, the
 * journal's `unmarshalEvent`, the live channel's `unmarshalPreview`, and their safe forms)
 * and `decodePermissionRequest`. The property: a decoder either returns a value that
 * passes validation, or throws one of its typed errors — never a TypeError, RangeError,
 * SyntaxError or anything else, and never a value carrying a grant token or raw arguments.
 * The three event decoders agree (each accepts exactly its class), and what is accepted
 * re-encodes to a fixed point of bytes in the Go runtime's form.
 *
 * Run counts are fixed (exported for the reliability report); the seed is fast-check's
 * random one unless FUZZ_SEED is set, and a failure prints the seed and path to replay it.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import {
  decodePermissionRequest,
  encodeEvent,
  encodePermissionRequest,
  EventDecodeError,
  EventEncodeError,
  EventValidationError,
  JetloopError,
  marshalEvent,
  NIL_UUID,
  RequestDecodeError,
  safeUnmarshalEvent,
  unmarshalEvent,
  unmarshalPreview,
  validateEvent,
  validatePermissionRequest,
} from "../../src/index.js";
import { decodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { toSnake } from "../../src/wire/wire.js";
import { defaultRegistry } from "../../src/index.js";
import { builtInTypes, compact, uuidArb } from "./arbitraries.js";
import { sample } from "./fixtures.js";

/** Runs of each fuzz target: about 20 s of CPU in all. */
export const FUZZ_RUNS = {
  // Random input: cheap per run, mostly refused early.
  eventRandomBytes: 20_000,
  eventRandomText: 20_000,
  eventRandomJson: 20_000,
  requestRandomBytes: 20_000,
  // Structured input: reaches validation, and an accepted value is re-encoded and re-decoded.
  eventRandomEnvelope: 10_000,
  eventMutations: 10_000,
  eventDeepNesting: 1_000,
  eventHugeStrings: 100,
  eventInjections: 2_000,
  requestRandomJson: 10_000,
  requestMutations: 10_000,
  requestInjections: 2_000,
} as const;
export const FUZZ_TOTAL_RUNS = Object.values(FUZZ_RUNS).reduce((a, b) => a + b, 0);

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const params = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(seed === undefined ? {} : { seed }) });
const TIMEOUT_MS = 120_000;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();
const FORBIDDEN_KEYS = /^(grant_?token|grantToken|raw_?arguments|rawArguments|arguments)$/;

/** Every key anywhere in a JSON-like value. */
function* keysOf(v: unknown): Generator<string> {
  if (Array.isArray(v)) for (const x of v) yield* keysOf(x);
  else if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      yield k;
      yield* keysOf(x);
    }
  }
}

type Outcome = "accepted" | "rejected";

/**
 * Deep equality, cheaply: both sides are outputs of the same zod schema, so their keys come
 * in the same order and JSON text is a faithful comparison (toEqual costs ~10× more per run).
 */
function expectSame(a: unknown, b: unknown): void {
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja !== jb) expect(a).toEqual(b); // for the readable diff
}

const isTyped = (e: unknown): e is EventDecodeError | EventValidationError | RequestDecodeError | EventEncodeError =>
  e instanceof EventDecodeError || e instanceof EventValidationError || e instanceof RequestDecodeError || e instanceof EventEncodeError;

/** Runs `decode`: its value, or the typed error it threw (anything else fails the property). */
function attempt<T>(decode: () => T): { ok: true; value: T } | { ok: false; error: JetloopError } {
  try {
    return { ok: true, value: decode() };
  } catch (e) {
    if (!isTyped(e)) throw e; // fails the property, and fast-check reports the input
    // Plain checks on this hot path: expect() costs more than a rejected decode.
    if (!(e instanceof JetloopError) || typeof e.code !== "string") expect.fail(`untyped error ${String(e)}`);
    return { ok: false, error: e };
  }
}

/** Characters Go escapes in strings, which jetloop's writer must never write raw. */
const GO_ESCAPED = /[<>&\u2028\u2029]/;

/**
 * The event property: a validated event or a typed error, nothing else, from each of the
 * event decoders, which agree; the outcome is decodeEvent's.
 */
function unmarshalOutcome(input: Uint8Array | string): Outcome {
  const any = attempt(() => decodeEvent(input));
  const journal = attempt(() => unmarshalEvent(input));
  const preview = attempt(() => unmarshalPreview(input));
  const safe = safeDecodeEvent(input);
  const safeJournal = safeUnmarshalEvent(input);
  if (safe.success !== any.ok || safeJournal.success !== journal.ok) expect.fail("a safe decoder disagrees with its throwing form");
  if (!any.ok) {
    if (any.error instanceof EventEncodeError) expect.fail("a decoder threw an encode error");
    if (journal.ok || preview.ok) expect.fail("a class decoder accepted what decodeEvent refused");
    if (!safe.success && safe.error.code !== any.error.code) expect.fail("safeDecodeEvent refused with another code");
    return "rejected";
  }
  const event = any.value as { type: string };
  const enduring = defaultRegistry.get(event.type)!.class === "enduring";
  // Exactly one of the class decoders takes it, and reads the same event.
  expect([journal.ok, preview.ok]).toEqual([enduring, !enduring]);
  expectSame(enduring ? (journal.ok && journal.value) : (preview.ok && preview.value), event);
  expectSame(validateEvent(event), event);
  for (const k of keysOf(event)) if (FORBIDDEN_KEYS.test(k)) expect.fail(`decoded event carries ${k}`);
  // What was accepted re-encodes in Go's form, and encode∘decode is a fixed point of those bytes.
  const encode = enduring ? marshalEvent : encodeEvent;
  const encoded = attempt(() => encode(event));
  if (!encoded.ok) {
    // Go's escaping (<, >, & as \u003c…) may grow text written raw by another writer past
    // the byte cap; that is the only reason an accepted event may not encode again.
    expect(encoded.error).toBeInstanceOf(EventEncodeError);
    expect((encoded.error as EventEncodeError).reason).toBe("too_large");
    expect(typeof input === "string" ? input : utf8Decoder.decode(input)).toMatch(GO_ESCAPED);
    return "accepted";
  }
  const written = utf8Decoder.decode(encoded.value);
  expect(written).not.toMatch(GO_ESCAPED);
  const keys = Object.keys(JSON.parse(written) as object);
  expect(keys).toEqual([...keys].sort());
  const again = decodeEvent(written);
  expect(utf8Decoder.decode(encode(again))).toBe(written);
  return "accepted";
}

/** The request property. */
function requestOutcome(input: Uint8Array | string): Outcome {
  const r = attempt(() => decodePermissionRequest(input));
  if (!r.ok) {
    if (!(r.error instanceof RequestDecodeError)) expect.fail(`the request decoder threw ${r.error.name}`);
    return "rejected";
  }
  const request = r.value;
  expectSame(validatePermissionRequest(request), request);
  for (const k of keysOf(request)) if (FORBIDDEN_KEYS.test(k)) expect.fail(`decoded request carries ${k}`);
  // Re-encoding is a fixed point of bytes.
  const written = encodePermissionRequest(request);
  expect(written).not.toMatch(GO_ESCAPED);
  expect(encodePermissionRequest(decodePermissionRequest(written))).toBe(written);
  return "accepted";
}

// --- inputs ------------------------------------------------------------------------------

/**
 * A JSON value jetloop reads wherever it sits, ignored keys included: no integer beyond
 * 2^53 (inexact_number) and no two keys of one object equal ignoring letter case.
 */
function goReadable(v: unknown): boolean {
  if (typeof v === "number") return !Number.isInteger(v) || Number.isSafeInteger(v);
  if (Array.isArray(v)) return v.every(goReadable);
  if (v === null || typeof v !== "object") return true;
  const lower = Object.keys(v).map((k) => k.toLowerCase());
  return new Set(lower).size === lower.length && Object.values(v).every(goReadable);
}
const goReadableJson = fc.jsonValue({ maxDepth: 2 }).filter(goReadable);

const JSON_TOKENS = [
  '{', '}', '[', ']', '"', ':', ',', ' ', '\\', '\\u0074', '\\"', 'type', 'Type', 'v', '1', '1.0', '1e2', '-0', '1e400', '9007199254740993', 'null', 'true',
  '"type"', '"TYPE"', '"v"', '"session_id"', '"Session_ID"', '\u0000', '\ud800', '\\ud800', '😀', '<', '&', '\u2028',
];
const jsonishText = fc.string({ unit: fc.constantFrom(...JSON_TOKENS), maxLength: 64 });

const TYPE_NAMES = [...builtInTypes, "", "Unknown", "permissionRequested", "__proto__", "constructor"];
/** Every wire key the catalogue knows, so random envelopes reach the body rules. */
const WIRE_KEYS = [
  "type", "v", "session_id", "loop_id", "turn_id", "step_id", "agent_name", "event_id", "created_at", "cause", "visibility",
  ...["toolExecutionId", "request", "effect", "reason", "subject", "audit", "question", "choices", "toolName", "summary", "isError", "resultPreview",
    "gate", "gateId", "resolver", "action", "source", "messages", "turnIndex", "err", "message", "usage", "runtime", "agentRuntime", "config", "manifest"].map(toSnake),
  "Type", "Session_Id", "EVENT_ID",
  "grant_token", "raw_arguments", "__proto__",
];
const wireValue = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
  { arbitrary: uuidArb, weight: 3 },
  {
    arbitrary: fc.constantFrom(
      NIL_UUID, "2025-06-01T12:34:56Z", "2025-06-01T12:34:56.500+02:00", "0001-01-01T00:00:00Z", "approve", "deny", "ask", "loop", "session", "answered", 0, 1, 2, 255, 256, "", null,
      { kind: "ask_user", data: { answer_preview: "x" } }, [{ role: "assistant", blocks: [{ type: "text", Text: "<b>" }] }], { kind: "k", message: "m" },
    ),
    weight: 2,
  },
);
const randomEnvelope = fc
  .tuple(
    fc.constantFrom(...TYPE_NAMES),
    fc.dictionary(fc.oneof(fc.constantFrom(...WIRE_KEYS), fc.string({ maxLength: 8 })), wireValue, { maxKeys: 14 }),
  )
  .map(([type, rest]) => JSON.stringify({ type, v: 1, ...rest }));

/**
 * Mutation targets come from a corpus of valid encodings generated once per file run
 * (generating a valid request costs milliseconds; mutating one costs microseconds).
 */
export const CORPUS_SIZE = { events: 500, requests: 300 } as const;
let eventCorpus: Uint8Array[] = [];
let requestCorpus: string[] = [];
/** PermissionRequested events around the corpus requests: targets for request injections. */
let requestEventCorpus: Uint8Array[] = [];
const corpusPick = <T>(corpus: () => T[]) => fc.nat().map((i) => corpus()[i % corpus().length]!);
const validEventBytes = corpusPick(() => eventCorpus);
const validRequestText = corpusPick(() => requestCorpus);
const validRequestEventBytes = corpusPick(() => requestEventCorpus);

beforeAll(() => {
  const draw = <T>(arb: fc.Arbitrary<T>, numRuns: number) => fc.sample(arb, { numRuns, ...(seed === undefined ? {} : { seed }) });
  eventCorpus = draw(compact.anyEventArb, CORPUS_SIZE.events).map((e) => encodeEvent(e));
  const requests = draw(compact.permissionRequestArb, CORPUS_SIZE.requests);
  requestCorpus = requests.map((r) => encodePermissionRequest(r));
  requestEventCorpus = requests.map((request) => encodeEvent({ ...sample("PermissionRequested"), request }));
}, TIMEOUT_MS);

// Mutations: on bytes, on text, and on the parsed JSON.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path to a value inside `v` (the root included). */
function pathsOf(v: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...prefix, i], out));
  else if (v !== null && typeof v === "object") for (const [k, x] of Object.entries(v)) pathsOf(x, [...prefix, k], out);
  return out;
}
function containerAt(root: Json, path: (string | number)[]): { parent: Json; key: string | number } | undefined {
  if (path.length === 0) return undefined;
  let parent: Json = root;
  for (const k of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[k]!;
  return { parent, key: path[path.length - 1]! };
}

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("insertToken" as const), at: fc.nat(), token: fc.constantFrom(...JSON_TOKENS) }),
  fc.record({ kind: fc.constant("deleteRange" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant("duplicateKey" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("escapeKey" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("deleteField" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("replaceValue" as const), pick: fc.nat(), value: wireValue }),
  fc.record({ kind: fc.constant("swapType" as const), type: fc.constantFrom(...TYPE_NAMES) }),
  fc.record({ kind: fc.constant("nilUuid" as const), pick: fc.nat() }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Applies `m`; returns the mutated input and whether it must still decode to the original. */
function mutate(bytes: Uint8Array, m: Mutation): { input: Uint8Array | string; equivalent: boolean } {
  const n = bytes.length;
  const text = utf8Decoder.decode(bytes);
  switch (m.kind) {
    case "flip": {
      const out = bytes.slice();
      out[m.at % n]! ^= m.xor;
      return { input: out, equivalent: false };
    }
    case "truncate":
      return { input: bytes.slice(0, m.at % n), equivalent: false };
    case "insert": {
      const at = m.at % (n + 1);
      return { input: concat(bytes.subarray(0, at), m.bytes, bytes.subarray(at)), equivalent: false };
    }
    case "insertToken": {
      const at = m.at % (text.length + 1);
      return { input: text.slice(0, at) + m.token + text.slice(at), equivalent: false };
    }
    case "deleteRange": {
      const at = m.at % n;
      return { input: concat(bytes.subarray(0, at), bytes.subarray(at + m.length)), equivalent: false };
    }
    case "duplicateKey": {
      // Repeat one "key": of the text right before itself, with another value.
      const keys = [...text.matchAll(/"([a-z_]+)":/g)];
      const k = keys[m.pick % keys.length];
      if (!k) return { input: bytes, equivalent: true }; // "{}": no key to repeat
      return { input: text.slice(0, k.index) + `${k[0]}"dup",` + text.slice(k.index), equivalent: false };
    }
    case "escapeKey": {
      // Spell one key's first character as a \u escape: same JSON, must decode the same.
      const keys = [...text.matchAll(/"([a-z_]+)":/g)];
      const k = keys[m.pick % keys.length];
      if (!k) return { input: bytes, equivalent: true }; // "{}": no key to escape
      const escaped = `"\\u${k[1]!.charCodeAt(0).toString(16).padStart(4, "0")}${k[1]!.slice(1)}":`;
      return { input: text.slice(0, k.index) + escaped + text.slice(k.index + k[0].length), equivalent: true };
    }
    case "deleteField":
    case "replaceValue":
    case "nilUuid":
    case "swapType": {
      const root = JSON.parse(text) as Json;
      if (m.kind === "swapType") {
        (root as Record<string, Json>).type = m.type;
        return { input: JSON.stringify(root), equivalent: false };
      }
      const paths = pathsOf(root).filter((p) => p.length > 0);
      if (paths.length === 0) return { input: text, equivalent: true }; // `{}`: nothing to change
      const at = containerAt(root, paths[m.pick % paths.length]!)!;
      const parent = at.parent as Record<string | number, Json>;
      if (m.kind === "deleteField") {
        if (Array.isArray(parent)) parent.splice(at.key as number, 1);
        else delete parent[at.key];
      } else if (m.kind === "nilUuid") {
        parent[at.key] = NIL_UUID;
      } else {
        parent[at.key] = m.value as Json;
      }
      return { input: JSON.stringify(root), equivalent: false };
    }
  }
}

// --- event decoder ------------------------------------------------------------------------

describe("fuzz unmarshalEvent", () => {
  it(`random bytes (${FUZZ_RUNS.eventRandomBytes} runs)`, () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 256 }), (b) => void unmarshalOutcome(b)), params(FUZZ_RUNS.eventRandomBytes));
  }, TIMEOUT_MS);

  it(`random JSON-ish text (${FUZZ_RUNS.eventRandomText} runs)`, () => {
    fc.assert(
      fc.property(fc.oneof(jsonishText, fc.string({ unit: "binary", maxLength: 64 })), (t) => void unmarshalOutcome(t)),
      params(FUZZ_RUNS.eventRandomText),
    );
  }, TIMEOUT_MS);

  it(`random JSON values (${FUZZ_RUNS.eventRandomJson} runs)`, () => {
    fc.assert(
      fc.property(fc.oneof(fc.json({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? "null")), (t) => void unmarshalOutcome(t)),
      params(FUZZ_RUNS.eventRandomJson),
    );
  }, TIMEOUT_MS);

  it(`random envelopes with known keys (${FUZZ_RUNS.eventRandomEnvelope} runs)`, () => {
    fc.assert(fc.property(randomEnvelope, (t) => void unmarshalOutcome(t)), params(FUZZ_RUNS.eventRandomEnvelope));
  }, TIMEOUT_MS);

  it(`mutations of valid events (${FUZZ_RUNS.eventMutations} runs)`, () => {
    fc.assert(
      fc.property(validEventBytes, mutation, (bytes, m) => {
        const { input, equivalent } = mutate(bytes, m);
        const outcome = unmarshalOutcome(input);
        if (equivalent) {
          expect(outcome).toBe("accepted");
          expectSame(decodeEvent(input), decodeEvent(bytes));
        }
      }),
      params(FUZZ_RUNS.eventMutations),
    );
  }, TIMEOUT_MS);

  it(`deep nesting (${FUZZ_RUNS.eventDeepNesting} runs)`, () => {
    const nested = fc.record({
      // Mostly around Go's limit of 10,000, sometimes far past it.
      depth: fc.oneof({ arbitrary: fc.integer({ min: 9_980, max: 10_020 }), weight: 6 }, { arbitrary: fc.integer({ min: 1, max: 64 }), weight: 3 }, { arbitrary: fc.integer({ min: 1, max: 40_000 }), weight: 1 }),
      open: fc.constantFrom("[", '{"a":'),
      key: fc.constantFrom("future", "request", "cause", "messages"),
      asBytes: fc.boolean(),
    });
    fc.assert(
      fc.property(nested, ({ depth, open, key, asBytes }) => {
        const close = open === "[" ? "]" : "}";
        const text = `{"type":"SessionStopped","v":1,"session_id":"0190f2a1-5b3c-7d4e-8f60-000000000001","event_id":"0190f2a1-5b3c-7d4e-8f60-000000000005","created_at":"2025-06-01T12:34:56Z","${key}":${open.repeat(depth)}1${close.repeat(depth)}}`;
        const input = asBytes ? utf8.encode(text) : text;
        // The envelope is one level: more than 10,000 in all is always too_deep; less is ordinary JSON.
        if (depth + 1 > 10_000) {
          for (const decode of [decodeEvent, unmarshalEvent, unmarshalPreview]) expect(() => decode(input)).toThrow(/nesting deeper than 10000|nesting too deep/);
        }
        else unmarshalOutcome(input);
      }),
      params(FUZZ_RUNS.eventDeepNesting),
    );
  }, TIMEOUT_MS);

  it(`huge strings (${FUZZ_RUNS.eventHugeStrings} runs)`, () => {
    const huge = fc
      .tuple(fc.integer({ min: 1, max: 2_000_000 }), fc.constantFrom("x", "é", "😀", "\\u0000", "\\n", "<"), fc.constantFrom("reason", "agent_name", "future", "type"))
      .map(([n, unit, key]) => {
        const s = unit.repeat(Math.ceil(n / unit.length));
        return `{"type":"SessionStopped","v":1,"session_id":"0190f2a1-5b3c-7d4e-8f60-000000000001","event_id":"0190f2a1-5b3c-7d4e-8f60-000000000005","created_at":"2025-06-01T12:34:56Z","${key}":"${s}"}`;
      });
    fc.assert(fc.property(huge, (t) => void unmarshalOutcome(t)), params(FUZZ_RUNS.eventHugeStrings));
  }, TIMEOUT_MS);

  it(`injected grant tokens and raw arguments (${FUZZ_RUNS.eventInjections} runs)`, () => {
    fc.assert(
      fc.property(
        fc.oneof(validRequestEventBytes, validEventBytes),
        fc.constantFrom("grant_token", "raw_arguments", "arguments", "grantToken"),
        goReadableJson,
        fc.nat(),
        (bytes, key, value, pick) => {
          const wire = JSON.parse(utf8Decoder.decode(bytes)) as Record<string, Json>;
          type Obj = Record<string, Json>;
          const request = wire.request as (Obj & { requirements?: (Obj & { candidates?: Obj[] })[] }) | undefined;
          if (!request) {
            // Beside the envelope: ignored, never carried into the event.
            wire[key] = value as Json;
            expect(unmarshalOutcome(JSON.stringify(wire))).toBe("accepted");
            return;
          }
          // Anywhere inside the request: always refused.
          const reqs = request.requirements ?? [];
          const req = reqs[pick % Math.max(reqs.length, 1)];
          const targets: Obj[] = [request, ...(req ? [req, ...(req.candidates ?? [])] : [])];
          targets[pick % targets.length]![key] = value as Json;
          const text = JSON.stringify(wire);
          expect(unmarshalOutcome(text)).toBe("rejected");
          expect(() => unmarshalEvent(text)).toThrow(/not a known field/);
        },
      ),
      params(FUZZ_RUNS.eventInjections),
    );
  }, TIMEOUT_MS);
});

// --- request decoder -------------------------------------------------------------------------

describe("fuzz decodePermissionRequest", () => {
  it(`random bytes and text (${FUZZ_RUNS.requestRandomBytes} runs)`, () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 256 }), jsonishText, fc.string({ unit: "binary", maxLength: 64 })), (b) => void requestOutcome(b)),
      params(FUZZ_RUNS.requestRandomBytes),
    );
  }, TIMEOUT_MS);

  it(`random JSON (${FUZZ_RUNS.requestRandomJson} runs)`, () => {
    const REQ_KEYS = ["tool_name", "summary", "execution_id", "command", "working_directory", "expires_at_unix_milli", "requirements", "grant_token"];
    const requestish = fc
      .record({
        tool_name: fc.oneof(fc.constant("bash"), fc.jsonValue({ maxDepth: 1 })),
        requirements: fc.array(
          fc.dictionary(fc.constantFrom("kind", "scope", "match", "description", "grant_class", "grant_target", "candidates", "raw_arguments"), fc.oneof(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })), {
            maxKeys: 7,
          }),
          { maxLength: 3 },
        ),
        extra: fc.dictionary(fc.constantFrom(...REQ_KEYS), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      })
      .map(({ extra, ...r }) => JSON.stringify({ ...r, ...extra }));
    fc.assert(
      fc.property(fc.oneof(fc.json({ maxDepth: 4 }), requestish), (t) => void requestOutcome(t)),
      params(FUZZ_RUNS.requestRandomJson),
    );
  }, TIMEOUT_MS);

  it(`mutations of valid requests (${FUZZ_RUNS.requestMutations} runs)`, () => {
    fc.assert(
      fc.property(validRequestText, mutation, (text, m) => {
        const bytes = utf8.encode(text);
        const { input, equivalent } = mutate(bytes, m);
        const outcome = requestOutcome(input);
        if (equivalent) {
          expect(outcome).toBe("accepted");
          expectSame(decodePermissionRequest(input), decodePermissionRequest(text));
        }
      }),
      params(FUZZ_RUNS.requestMutations),
    );
  }, TIMEOUT_MS);

  it(`injected grant tokens and raw arguments are always refused (${FUZZ_RUNS.requestInjections} runs)`, () => {
    fc.assert(
      fc.property(validRequestText, fc.constantFrom("grant_token", "raw_arguments", "arguments", "token", "grantToken"), fc.jsonValue({ maxDepth: 2 }), fc.nat(), (text, key, value, pick) => {
        const wire = JSON.parse(text) as Record<string, Json> & { requirements?: Record<string, Json>[] };
        const reqs = wire.requirements ?? [];
        const req = reqs[pick % Math.max(reqs.length, 1)];
        const targets = [wire, ...(req ? [req, ...((req.candidates as Record<string, Json>[] | undefined) ?? [])] : [])];
        targets[pick % targets.length]![key] = value as Json;
        expect(() => decodePermissionRequest(JSON.stringify(wire))).toThrow(RequestDecodeError);
      }),
      params(FUZZ_RUNS.requestInjections),
    );
  }, TIMEOUT_MS);
});
