/**
 * The differential gate of the generated decoders (src/codec/generated/decoders.ts): on
 * every input, `decodeEvent` (the fast reader, then the type's generated decoder, else the
 * reference path) and `decodeEventByReference` (the guided reader, fromWire, zod) give the
 * same verdict; for a refusal the same error (class, code, reason, field, message); for an
 * acceptance the same event, compared strictly (prototypes, key order, RawJson text and
 * depth, frozen) and written back to the same bytes. A disagreement is a failing test, never
 * a fallback.
 *
 * Inputs: every text of every Go file in test/conformance/data/; events generated from the
 * model (test/unit/arbitraries.ts) and edits of them; and mutations of the Go-written events
 * (a field deleted, a value's type swapped, numbers at and past their caps, strings at byte
 * caps and of every enumeration, the nil UUID, times and base64 at their edges, unknown and
 * case-folded keys, nulls, empty containers, another event type's name), one to three at a
 * time. At least 50,000 cases here; `npm run fuzz` runs the same with JETLOOP_FUZZ_CASES
 * (1,000,000 by default there). The seed is printed on failure (JETLOOP_SEED reproduces it).
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeEventByReference, encodeEvent, envelopeGuide, fastDecodeWire } from "../../src/codec/codec.js";
import { NOT_MINE } from "../../src/codec/fast-model.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { parseOrdinaryJson } from "../../src/wire/fast-json.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { readJsonl, type GoVerdict, type GoWritten } from "../conformance/go-oracle.js";
import { reportFigure } from "../harness/figures-log.js";
import { anyEventArb } from "./arbitraries.js";

const FUZZ = Number(process.env.JETLOOP_FUZZ_CASES ?? 0);
/** Mutation cases: enough for 50,000 in all here; the fuzz run's figure when it is set. */
const MUTATION_CASES = FUZZ > 0 ? FUZZ : 47_500;
// Generated events are large (about 10 ms a case with both decoders): fewer of them.
const MODEL_CASES = FUZZ > 0 ? Math.ceil(FUZZ / 50) : 1_000;
const TIMEOUT_MS = FUZZ > 0 ? 24 * 3600_000 : 300_000;

const guide = envelopeGuide(defaultRegistry);
const utf8 = new TextEncoder();
const written = readJsonl<GoWritten>("go-written-events.jsonl");
const verdictInputs: (string | Uint8Array)[] = [...readJsonl<GoVerdict>("go-verdicts.jsonl"), ...readJsonl<GoVerdict>("go-verdicts-extra.jsonl")]
  .filter((c) => c.kind !== "request")
  .map((c) => (typeof c.json === "string" ? c.json : Uint8Array.from(Buffer.from(c.json_b64!, "base64"))));
const gatewayTexts: string[] = ["go-http-bodies.jsonl", "go-sse-frames.jsonl"].flatMap((f) =>
  readJsonl<unknown>(f).flatMap((line) => stringsIn(line).filter((s) => s.startsWith("{"))),
);

function stringsIn(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(stringsIn);
  if (v !== null && typeof v === "object") return Object.values(v).flatMap(stringsIn);
  return [];
}

/** Where two decoded values differ (prototype, key order, RawJson, frozen), or undefined. */
function difference(a: unknown, b: unknown, at = "event"): string | undefined {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) {
    return Object.is(a, b) ? undefined : `${at}: ${String(a)} vs ${String(b)}`;
  }
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return `${at}: another prototype`;
  if (Object.isFrozen(a) !== Object.isFrozen(b)) return `${at}: frozen differs`;
  if (a instanceof RawJson) {
    const r = b as RawJson;
    return a.text === r.text && a.depth === r.depth ? undefined : `${at}: raw ${a.text} vs ${r.text}`;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.join("\u0000") !== kb.join("\u0000")) return `${at}: keys [${ka.join(",")}] vs [${kb.join(",")}]`;
  for (const k of ka) {
    const d = difference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

type Outcome = { ok: unknown } | { error: Record<string, unknown> };

function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: fn() };
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    return { error: { class: e.constructor.name, name: e.name, message: e.message, ...(e as object) } };
  }
}

const counts = { cases: 0, generated: 0, notMine: 0, accepted: 0, refused: 0 };

/** What the generated decoder alone says of `text`: "accepted", "not mine", or "none" (the fast reader or the envelope did not get it there). */
function generatedAnswer(text: string): "accepted" | "not mine" | "none" {
  const wire = parseOrdinaryJson(text, guide);
  if (wire === undefined || typeof wire.type !== "string") return "none";
  const def = defaultRegistry.get(wire.type);
  if (def === undefined || (wire.v !== undefined && wire.v !== 0 && wire.v !== 1)) return "none";
  const r = fastDecodeWire(def, wire);
  return r === undefined ? "none" : r === NOT_MINE ? "not mine" : "accepted";
}

/** Fails unless both decoders give the same answer on `input`. */
function agree(input: string | Uint8Array): void {
  counts.cases++;
  const text = typeof input === "string" ? input : new TextDecoder("utf-8", { fatal: false }).decode(input);
  const answer = generatedAnswer(text);
  if (answer === "accepted") counts.generated++;
  else if (answer === "not mine") counts.notMine++;
  const fast = outcome(() => decodeEvent(input));
  const reference = outcome(() => decodeEventByReference(input));
  if ("ok" in fast && "ok" in reference) {
    counts.accepted++;
    const d = difference(fast.ok, reference.ok);
    if (d !== undefined) expect.fail(`the decoders' events differ (${d}) on ${JSON.stringify(text)}`);
    const a = outcome(() => encodeEvent(fast.ok));
    const b = outcome(() => encodeEvent(reference.ok));
    if (!isDeepStrictEqual(a, b)) expect.fail(`the decoders' events are written differently on ${JSON.stringify(text)}`);
    return;
  }
  if ("error" in fast && "error" in reference) {
    counts.refused++;
    if (!isDeepStrictEqual(fast.error, reference.error)) expect(fast.error, `the decoders refuse differently on ${JSON.stringify(text)}`).toEqual(reference.error);
    return;
  }
  const refusal = "error" in fast ? fast.error : (reference as { error: unknown }).error;
  expect.fail(`one decoder accepts, the other refuses ${JSON.stringify(text)}: ${JSON.stringify(refusal)}`);
}

// --- mutations of wire objects -----------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Path = (string | number)[];

/** Every place in `v`: containers and leaves, with the path from the top. */
function places(v: Json, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (Array.isArray(v)) v.forEach((x, i) => places(x, [...path, i], out));
  else if (v !== null && typeof v === "object") for (const k of Object.keys(v)) places(v[k]!, [...path, k], out);
  return out;
}

function parentOf(root: Json, path: Path): { parent: Json[] | Record<string, Json>; key: string | number } | undefined {
  if (path.length === 0) return undefined;
  let p: Json = root;
  for (const k of path.slice(0, -1)) p = (p as Record<string, Json>)[k as string]!;
  return { parent: p as Json[] | Record<string, Json>, key: path[path.length - 1]! };
}

const uuid = "0190b3e2-7c4d-7a1b-8c3d-4e5f6a7b8c9d";
const NUMBERS: Json[] = [0, 1, -1, 2, 1.5, 255, 256, 65535, 4294967295, 4294967296, 10000, 10001, 9999, 9007199254740991, -9007199254740991, 1e21, 0.1];
const STRINGS: Json[] = [
  "x",
  " x",
  "x ",
  "\u0000",
  "<&>",
  "\u2028",
  "é",
  "K",
  "\u212a",
  uuid,
  uuid.toUpperCase(),
  "00000000-0000-0000-0000-000000000000",
  "2024-01-01T00:00:00Z",
  "2024-01-01T00:00:00.000+00:00",
  "2024-01-01T1:00:00,5+01:00",
  "2024-02-30T00:00:00Z",
  "2024-01-01T00:00:00+24:00",
  "0001-01-01T00:00:00Z",
  "0001-01-01T01:00:00+01:00",
  "AAAA",
  "AAA=",
  "AA==",
  "A",
  "AAB=",
  "AA\nAA",
  "approve",
  "deny",
  "maybe",
  "assistant",
  "tool",
  "user",
  "system",
  "text",
  "refusal",
  "thinking",
  "tool_use",
  "tool_result",
  "image",
  "audio",
  "document",
  "permission",
  "ask_user",
  "form",
  "session",
  "loop",
  "utf-8",
  "binary",
  "capture_ceiling",
  "command.execute",
  "command.start.v1",
  "public",
  "a".repeat(1024),
  "a".repeat(1025),
  "é".repeat(513),
];
const TYPES = [...defaultRegistry.types()].map((d) => d.type);
const EXTRA_KEYS = ["zz_extra", "Session_Id", "SESSION_ID", "ſession_id", "\u212aind", "Kind", "TEXT", "text", "Text", "Type", "v", "V", "input", "INPUT", "id", "Id"];

/** Applies mutation `kind` (with parameter `n`) at place `at` of `root`; returns the new root. */
function mutate(root: Json, at: number, kind: number, n: number): Json {
  const all = places(root);
  const path = all[at % all.length]!;
  const where = parentOf(root, path);
  const set = (v: Json): Json => {
    if (where === undefined) return v;
    (where.parent as Record<string, Json>)[where.key as string] = v;
    return root;
  };
  const target = where === undefined ? root : (where.parent as Record<string, Json>)[where.key as string]!;
  switch (kind % 16) {
    case 0: // delete
      if (where === undefined) return root;
      if (Array.isArray(where.parent)) where.parent.splice(where.key as number, 1);
      else delete where.parent[where.key as string];
      return root;
    case 1:
      return set(null);
    case 2:
      return set(["", 0, false, true, {}, []][n % 6]!);
    case 3:
      return set(NUMBERS[n % NUMBERS.length]!);
    case 4:
      return set(STRINGS[n % STRINGS.length]!);
    case 5: // an unknown or case-folded key beside the others
    case 6: {
      const obj = target !== null && typeof target === "object" && !Array.isArray(target) ? target : root;
      if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return root;
      const keys = Object.keys(obj);
      const k = kind % 16 === 5 || keys.length === 0 ? EXTRA_KEYS[n % EXTRA_KEYS.length]! : keys[n % keys.length]!.toUpperCase();
      obj[k] = keys.length > 0 ? obj[keys[n % keys.length]!]! : 1;
      return root;
    }
    case 7: // renamed in other letter case
      if (where === undefined || Array.isArray(where.parent)) return root;
      {
        const v = where.parent[where.key as string]!;
        delete where.parent[where.key as string];
        where.parent[(where.key as string).toUpperCase()] = v;
      }
      return root;
    case 8: // wrapped in an array, or an array's element repeated
      if (Array.isArray(target) && target.length > 0) {
        target.push(structuredClone(target[n % target.length]!));
        return root;
      }
      return set([target]);
    case 9: // another place's value (a type swap)
      return set(structuredClone((parentOf(root, all[n % all.length]!)?.parent as Record<string, Json> | undefined)?.[all[n % all.length]!.at(-1) as string] ?? null));
    case 10: // another event type
      if (root !== null && typeof root === "object" && !Array.isArray(root)) root.type = TYPES[n % TYPES.length]!;
      return root;
    case 11: // the envelope's version
      if (root !== null && typeof root === "object" && !Array.isArray(root)) root.v = [0, 1, 2, "1", null, 1.5][n % 6]!;
      return root;
    case 12: // a number one past or at a cap
      return typeof target === "number" ? set([target + 1, target - 1, -target, 2 ** 53, 2 ** 53 - 1, 2 ** 32][n % 6]!) : set(NUMBERS[n % NUMBERS.length]!);
    case 13: // a string edited
      return typeof target === "string" ? set([`${target} `, target.slice(1), target.toUpperCase(), `${target}\u0000`, target + target][n % 5]!) : set(STRINGS[n % STRINGS.length]!);
    case 14: // an empty container
      return set(Array.isArray(target) ? [] : {});
    default: // a whole object from elsewhere in the event
      {
        const objects = all.filter((p) => {
          const v = p.length === 0 ? root : (parentOf(root, p)!.parent as Record<string, Json>)[p.at(-1) as string];
          return v !== null && typeof v === "object";
        });
        const p = objects[n % objects.length];
        if (p === undefined) return root;
        const v = p.length === 0 ? root : (parentOf(root, p)!.parent as Record<string, Json>)[p.at(-1) as string]!;
        return p.length === 0 ? root : set(structuredClone(v));
      }
  }
}

const goObjects: Json[] = written.map((w) => JSON.parse(w.json) as Json);

describe("the generated decoders agree with the reference path", () => {
  it("take every Go-written event, and decode it as the reference path does", () => {
    let generated = 0;
    for (const w of written) {
      agree(w.json);
      if (generatedAnswer(w.json) === "accepted") generated++;
    }
    // Every type's generated decoder takes every Go-written event of it.
    expect(generated).toBe(written.length);
  });

  it("on every input of every Go verdict file and the gateway's Go files", () => {
    for (const input of [...verdictInputs, ...gatewayTexts]) agree(input);
    expect(verdictInputs.length).toBeGreaterThan(1800);
  }, TIMEOUT_MS);

  it(
    "on events generated from the model, and mutations of them",
    () => {
      fc.assert(
        fc.property(anyEventArb, fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { maxLength: 2 }), (event, edits) => {
          const bytes = encodeEvent(event);
          agree(bytes);
          if (edits.length === 0) return;
          let root = JSON.parse(new TextDecoder().decode(bytes)) as Json;
          for (const [at, kind, n] of edits) root = mutate(root, at, kind, n);
          agree(JSON.stringify(root));
        }),
        { numRuns: MODEL_CASES },
      );
    },
    TIMEOUT_MS,
  );

  it(
    "on mutations of the Go-written events: one to three at a time",
    () => {
      const before = { ...counts };
      fc.assert(
        fc.property(fc.nat(goObjects.length - 1), fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { minLength: 1, maxLength: 3 }), fc.boolean(), (i, edits, asBytes) => {
          let root = structuredClone(goObjects[i] as Json);
          for (const [at, kind, n] of edits) root = mutate(root, at, kind, n);
          const text = JSON.stringify(root);
          agree(asBytes ? utf8.encode(text) : text);
        }),
        { numRuns: MUTATION_CASES },
      );
      // Both answers of the generated decoders are exercised, and both verdicts.
      expect(counts.generated - before.generated).toBeGreaterThan(MUTATION_CASES / 20);
      expect(counts.notMine - before.notMine).toBeGreaterThan(MUTATION_CASES / 20);
      expect(counts.refused - before.refused).toBeGreaterThan(MUTATION_CASES / 10);
    },
    TIMEOUT_MS,
  );

  it("counted at least 50,000 cases", () => {
    expect(counts.cases).toBeGreaterThanOrEqual(FUZZ > 0 ? FUZZ : 50_000);
    reportFigure(
      `fast-decode differential: ${counts.cases} cases: ${counts.generated} taken by a generated decoder, ${counts.notMine} not its, ${counts.accepted} accepted and ${counts.refused} refused by both paths alike`,
    );
  });
});
