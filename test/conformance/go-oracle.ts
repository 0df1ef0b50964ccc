/**
 * Runs jetloop's codec over the Go runtime's own conformance data (test/conformance/data/,
 * see its README.md for where it came from) and sorts every case by how jetloop's verdict
 * relates to Go's. Used by go-wire.test.ts, and by `npx tsx test/conformance/go-oracle.ts`
 * to print the cases that disagree.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { marshalEvent, unmarshalEvent } from "../../src/codec/codec.js";
import { EventDecodeError, EventValidationError, RequestDecodeError } from "../../src/errors.js";
import { decodePermissionRequest, encodePermissionRequest } from "../../src/events/request.js";
import { StrictJsonError } from "../../src/wire/strict-json.js";
import { WireKeyError } from "../../src/wire/wire.js";

const here = dirname(fileURLToPath(import.meta.url));

/** The in-repository copy; new data arrives through scripts/sync-conformance.sh. */
export const conformanceDir = join(here, "data");

export function readJsonl<T>(name: string): T[] {
  return readFileSync(join(conformanceDir, name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

export interface GoWritten {
  id: string;
  type: string;
  json: string;
}

export interface GoVerdict {
  id: string;
  /** Absent in go-verdicts-extra.jsonl, whose cases are all events. */
  kind?: "event" | "request";
  json?: string;
  json_b64?: string;
  go_ok: boolean;
  go_reencoded?: string | null;
  mutation?: string;
  /** go-verdicts-extra.jsonl: the input is exactly Go's own output. */
  canonical?: boolean;
}

/** Every file of Go verdicts, and the column of CONFORMANCE.md's table that counts each. */
export const VERDICT_FILES = [
  { file: "go-verdicts.jsonl", column: (c: GoVerdict) => (c.kind === "request" ? "requests" : "events") },
  { file: "go-verdicts-extra.jsonl", column: () => "extra" },
] as const;
export const COLUMNS = ["events", "requests", "extra"] as const;
export type Column = (typeof COLUMNS)[number];

/** All verdict cases, each with the column it is counted in. */
export function allVerdicts(): { c: GoVerdict; column: Column }[] {
  return VERDICT_FILES.flatMap(({ file, column }) => readJsonl<GoVerdict>(file).map((c) => ({ c, column: column(c) as Column })));
}

/** The rules by which jetloop refuses input the Go runtime reads (CONFORMANCE.md). */
export type StricterRule =
  | "letter-case-keys"
  | "null-values"
  | "inexact-numbers"
  | "uppercase-uuids"
  | "decision-effect"
  | "unwritable-times"
  | "byte-cap"
  | "invalid-utf8"
  | "model-facing-detail"
  | "model-facing-bound";

export type Outcome =
  | { kind: "agree" }
  | { kind: "stricter"; rule: StricterRule }
  /** jetloop refuses for a reason no documented rule covers. */
  | { kind: "refuses"; error: string }
  /** jetloop accepts what Go refuses. */
  | { kind: "accepts"; reencoded: string }
  /** Both accept, and jetloop writes it back differently. */
  | { kind: "differs"; reencoded: string; expected: string };

const UUID_CASE = /canonical lowercase UUID/;

/** The documented rule a refusal falls under, if any. */
export function stricterRuleOf(error: unknown): StricterRule | undefined {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof WireKeyError) return cause.problem === "letter_case" ? "letter-case-keys" : cause.problem === "null" ? "null-values" : undefined;
  const reason = error instanceof EventDecodeError ? error.reason : cause instanceof StrictJsonError ? cause.reason : undefined;
  if (error instanceof RequestDecodeError && /not valid UTF-8/.test(error.message)) return "invalid-utf8";
  if (reason !== undefined) {
    switch (reason) {
      case "letter_case_key":
        return "letter-case-keys";
      case "null_value":
        return "null-values";
      case "inexact_number":
        return "inexact-numbers";
      case "too_large":
        return "byte-cap";
      case "not_utf8":
        return "invalid-utf8";
      default:
        return undefined;
    }
  }
  if (error instanceof EventValidationError) {
    if (UUID_CASE.test(error.detail ?? "")) return "uppercase-uuids";
    if (error.field === "effect") return "decision-effect";
    if (error.field === "createdAt") return "unwritable-times";
    if (error.field === "err.modelFacingDetail") return /needs model_facing/.test(error.detail ?? "") ? "model-facing-detail" : "model-facing-bound";
  }
  if (error instanceof RequestDecodeError && UUID_CASE.test(error.message)) return "uppercase-uuids";
  return undefined;
}

export function inputOf(c: GoVerdict): Uint8Array {
  return c.json_b64 !== undefined ? Buffer.from(c.json_b64, "base64") : Buffer.from(c.json ?? "", "utf8");
}

const text = new TextDecoder();

/** jetloop's reading of one input: its re-encoding, or the error it refused with. */
export function jetloopReads(kind: GoVerdict["kind"] = "event", input: Uint8Array): { ok: true; reencoded: string } | { ok: false; error: unknown } {
  try {
    if (kind === "request") return { ok: true, reencoded: encodePermissionRequest(decodePermissionRequest(input)) };
    return { ok: true, reencoded: text.decode(marshalEvent(unmarshalEvent(input))) };
  } catch (error) {
    return { ok: false, error };
  }
}

export function judge(c: GoVerdict): Outcome {
  const r = jetloopReads(c.kind, inputOf(c));
  if (r.ok) {
    if (!c.go_ok) return { kind: "accepts", reencoded: r.reencoded };
    return r.reencoded === c.go_reencoded ? { kind: "agree" } : { kind: "differs", reencoded: r.reencoded, expected: c.go_reencoded ?? "" };
  }
  if (!c.go_ok) return { kind: "agree" };
  const rule = stricterRuleOf(r.error);
  return rule ? { kind: "stricter", rule } : { kind: "refuses", error: String(r.error) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const counts = new Map<string, number>();
  for (const { c, column } of allVerdicts()) {
    const o = judge(c);
    const key = o.kind === "stricter" ? `stricter:${o.rule}:${column}` : `${o.kind}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (o.kind === "refuses") console.log(`REFUSES ${c.id}\n   ${o.error}`);
    if (o.kind === "accepts") console.log(`ACCEPTS ${c.id}\n   ${o.reencoded.slice(0, 300)}`);
    if (o.kind === "differs") console.log(`DIFFERS ${c.id}\n   got ${o.reencoded.slice(0, 600)}\n   exp ${o.expected.slice(0, 600)}`);
  }
  let identical = 0;
  for (const w of readJsonl<GoWritten>("go-written-events.jsonl")) {
    const r = jetloopReads("event", Buffer.from(w.json));
    if (r.ok && r.reencoded === w.json) identical++;
    else console.log(`WRITTEN ${w.id}: ${r.ok ? `differs\n   got ${r.reencoded}\n   exp ${w.json}` : String(r.error)}`);
  }
  console.log([...counts].sort().map(([k, v]) => `${k}: ${v}`).join("\n"));
  const canonical = allVerdicts().filter(({ c }) => c.canonical);
  const canonicalIdentical = canonical.filter(({ c }) => {
    const r = jetloopReads("event", inputOf(c));
    return r.ok && r.reencoded === c.json;
  }).length;
  console.log(`Go-written byte-identical: ${identical}/59, canonical verdict inputs ${canonicalIdentical}/${canonical.length}`);
}
