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
import { decodePermissionRequest, encodePermissionRequest } from "../../src/events/request.js";
import { goRuleOf, jetloopRuleOf, type RefusalRule, refusedUnder, sameRule, type StricterRule, stricterRulesOf, wireVocabulary } from "./refusal-rules.js";

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
  /** Why Go's MarshalEvent failed on what it read, where it did. */
  go_reencode_error?: string;
  /** Why Go refused, where it did; `go_error_variants` where the text varies (map order). */
  go_error?: string;
  go_error_variants?: string[];
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

export type { StricterRule } from "./refusal-rules.js";

export type Outcome =
  | { kind: "agree" }
  /** Both refuse, for the same rule (class, and field where the rule is a field's). */
  | { kind: "agree-refused" }
  /** Go accepts; the data says the input falls under `rule`, and jetloop refuses under it. */
  | { kind: "stricter"; rule: StricterRule }
  /** Both refuse; jetloop's stricter rule, which the data says the input falls under, speaks first. */
  | { kind: "refused-first"; rule: StricterRule }
  /** Both refuse, for different rules. */
  | { kind: "other-rule"; go: string; jetloop: string }
  /** jetloop refuses for a reason no documented rule the data shows covers. */
  | { kind: "refuses"; error: string }
  /** jetloop accepts what Go refuses, or what the data says a stricter rule refuses. */
  | { kind: "accepts"; reencoded: string; rules?: StricterRule[] }
  /** Both accept, and jetloop writes it back differently. */
  | { kind: "differs"; reencoded: string; expected: string };

/** A stricter rule a jetloop refusal names (go-rules.test.ts asks which). */
export function stricterRuleOf(error: unknown): StricterRule | undefined {
  const r = jetloopRuleOf(error);
  return r !== undefined && "stricter" in r ? r.stricter : undefined;
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

/** The wire keys Go writes, per place (refusal-rules.ts), from all of Go's output in the data. */
let vocabulary: Map<string, Set<string>> | undefined;
function goVocabulary(): Map<string, Set<string>> {
  return (vocabulary ??= wireVocabulary([
    ...readJsonl<GoWritten>("go-written-events.jsonl").map((w) => ({ json: w.json })),
    ...allVerdicts().flatMap(({ c }) => (typeof c.go_reencoded === "string" ? [{ ...(c.kind ? { kind: c.kind } : {}), json: c.go_reencoded }] : [])),
  ]));
}

const stricterOf = new WeakMap<GoVerdict, Set<StricterRule>>();

/** The stricter rules Go's data says a case's input falls under, read without jetloop's codec (once per case). */
export function dataStricterRules(c: GoVerdict): Set<StricterRule> {
  const known = stricterOf.get(c);
  if (known) return known;
  const rules = stricterRulesOf(
    { ...(c.kind ? { kind: c.kind } : {}), input: inputOf(c), goOk: c.go_ok, ...(c.go_reencoded !== undefined ? { goReencoded: c.go_reencoded } : {}), ...(c.go_reencode_error ? { goReencodeError: c.go_reencode_error } : {}) },
    goVocabulary(),
  );
  stricterOf.set(c, rules);
  return rules;
}

/** Go's rule for a case it refused: one per variant of its error text (they differ in map order only). */
export function goRulesOf(c: GoVerdict): (RefusalRule | undefined)[] {
  return (c.go_error_variants ?? [c.go_error ?? ""]).map(goRuleOf);
}

const said = (r: RefusalRule | undefined): string => (r === undefined ? "(no rule)" : r.field === undefined ? r.class : `${r.class} ${r.field}`);

export function judge(c: GoVerdict): Outcome {
  const r = jetloopReads(c.kind, inputOf(c));
  const stricter = dataStricterRules(c);
  if (r.ok) {
    if (!c.go_ok) return { kind: "accepts", reencoded: r.reencoded };
    if (stricter.size > 0) return { kind: "accepts", reencoded: r.reencoded, rules: [...stricter] };
    return r.reencoded === c.go_reencoded ? { kind: "agree" } : { kind: "differs", reencoded: r.reencoded, expected: c.go_reencoded ?? "" };
  }
  const under = [...stricter].find((rule) => refusedUnder(r.error, rule));
  if (c.go_ok) return under ? { kind: "stricter", rule: under } : { kind: "refuses", error: String(r.error) };
  const mine = jetloopRuleOf(r.error);
  if (mine !== undefined && "rule" in mine && goRulesOf(c).some((go) => go !== undefined && sameRule(go, mine.rule))) return { kind: "agree-refused" };
  if (under) return { kind: "refused-first", rule: under };
  return { kind: "other-rule", go: said(goRulesOf(c)[0]), jetloop: mine === undefined ? String(r.error) : "rule" in mine ? said(mine.rule) : mine.stricter };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const counts = new Map<string, number>();
  for (const { c, column } of allVerdicts()) {
    const o = judge(c);
    const key = o.kind === "stricter" || o.kind === "refused-first" ? `${o.kind}:${o.rule}:${column}` : `${o.kind}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (o.kind === "refuses") console.log(`REFUSES ${c.id}\n   ${o.error}`);
    if (o.kind === "accepts") console.log(`ACCEPTS ${c.id}${o.rules ? ` (the data says: ${o.rules.join(", ")})` : ""}\n   ${o.reencoded.slice(0, 300)}`);
    if (o.kind === "other-rule") console.log(`OTHER RULE ${c.id}\n   Go: ${o.go}; jetloop: ${o.jetloop}\n   ${c.go_error ?? ""}`);
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
