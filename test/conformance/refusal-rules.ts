/**
 * Why an input is refused, as a rule, on both sides: Go's error texts in the conformance
 * data (test/conformance/data/) mapped by pattern to the rule classes of CONFORMANCE.md
 * ("How jetloop reads"), and jetloop's typed errors mapped to the same classes. Two
 * refusals agree when their rule is the same: the same class and, for a field's rule, the
 * same field. A verdict of "both refuse" is not agreement by itself.
 *
 * The table is keyed by Go's error text pattern, never by case: a change of the codec's
 * rules moves cases between classes without touching it. Go's texts vary from run to run
 * only in map order (the data's `go_error_variants`): a refusal agrees with any variant.
 */
import { EventDecodeError, EventValidationError, RequestDecodeError } from "../../src/errors.js";
import { StrictJsonError } from "../../src/wire/strict-json.js";
import { WireKeyError } from "../../src/wire/wire.js";

/** A rule class of CONFORMANCE.md's "How jetloop reads", plus the fields' own rules. */
export type RuleClass =
  /** The JSON grammar: a bad character, nothing, or data after the value. */
  | "json-grammar"
  /** Nesting past Go's 10,000. */
  | "nesting-depth"
  /** Two keys Go reads as one (an exact repeat, or equal in Go's strings.ToLower). */
  | "duplicate-key"
  /** Bytes, or a string, that are not UTF-8 text. */
  | "not-utf8"
  /** The event (or request) is not a JSON object. */
  | "not-an-object"
  /** The envelope's type is absent or no event type Go knows. */
  | "unknown-event-type"
  /** The envelope's schema version `v`. */
  | "schema-version"
  /** A coordinate of the identity profile set where it must be zero, or absent where required. */
  | "coordinate"
  /** One field's value or JSON type: compared with the field it names. */
  | "field"
  /** A number outside float64 where any JSON value is read. */
  | "number-range";

export interface RefusalRule {
  readonly class: RuleClass;
  /**
   * The field the rule is about, for "field" and "coordinate": the path's segments in
   * lower case without separators or indices (`requirements.candidates.match`), or one of
   * the kinds `@uuid`, `@time` where Go's text says only what kind of value failed.
   */
  readonly field?: string;
}

const norm = (s: string): string => s.toLowerCase().replace(/[_-]/g, "");
const pathOf = (p: string): string =>
  p
    .split(/[.[\]]+/)
    .filter((seg) => seg !== "" && !/^\d+$/.test(seg))
    .map(norm)
    .join(".");

/** Go's names for fields whose JSON name jetloop's path spells otherwise. */
const GO_ALIASES: Readonly<Record<string, string>> = { modelkey: "key", contextlimits: "limits" };

const COORDINATES = new Set(["sessionid", "loopid", "turnid", "stepid", "eventid", "toolexecutionid"]);

/**
 * Go's error text → rule, first match wins. Every error text in the data must match one
 * (go-wire.test.ts checks it), so a new kind of Go error is a change to this table.
 */
export const GO_ERROR_RULES: readonly { readonly pattern: RegExp; readonly rule: (m: RegExpMatchArray) => RefusalRule }[] = [
  { pattern: /exceeded max depth/, rule: () => ({ class: "nesting-depth" }) },
  { pattern: /duplicate (JSON )?field "/, rule: () => ({ class: "duplicate-key" }) },
  { pattern: /invalid UTF-8/, rule: () => ({ class: "not-utf8" }) },
  { pattern: /(invalid character|: EOF$|multiple JSON values|unexpected end of JSON input)/, rule: () => ({ class: "json-grammar" }) },
  { pattern: /unknown event type "/, rule: () => ({ class: "unknown-event-type" }) },
  { pattern: /unsupported event schema version/, rule: () => ({ class: "schema-version" }) },
  { pattern: /into Go struct field \.v of type/, rule: () => ({ class: "schema-version" }) },
  // Inside an event, a request or an audit that is not an object is that field's value.
  { pattern: /^event: decode \w+: gate: decode request: json: cannot unmarshal \w+ into Go value of type tool\.Request/, rule: () => ({ class: "field", field: "request" }) },
  { pattern: /^event: decode \w+: gate: decode response audit: json: cannot unmarshal \w+ into Go value of type/, rule: () => ({ class: "field", field: "audit" }) },
  { pattern: /into Go value of type (struct \{|tool\.Request)/, rule: () => ({ class: "not-an-object" }) },
  // A bare request that is `null`; inside an event it is the event's `request` field.
  { pattern: /^event: decode \w+: gate: decode request: null payload data$/, rule: () => ({ class: "field", field: "request" }) },
  { pattern: /: null payload data$/, rule: () => ({ class: "not-an-object" }) },
  { pattern: /cannot unmarshal number \S+ into Go value of type float64/, rule: () => ({ class: "number-range" }) },
  { pattern: /into Go struct field [\w.]*?\.?(\w+) of type uuid\.UUID/, rule: () => ({ class: "field", field: "@uuid" }) },
  { pattern: /into Go struct field [\w.]*?\.?(\w+) of type/, rule: (m) => ({ class: "field", field: pathOf(m[1]!) }) },
  { pattern: /uuid: (parse|invalid)/, rule: () => ({ class: "field", field: "@uuid" }) },
  { pattern: /(parsing time|Time\.UnmarshalJSON)/, rule: () => ({ class: "field", field: "@time" }) },
  { pattern: /invalid request \(\w+\): ([\w.[\]]+)$/, rule: (m) => ({ class: "field", field: pathOf(m[1]!) }) },
  { pattern: /unknown field "([^"]+)"/, rule: (m) => ({ class: "field", field: pathOf(m[1]!) }) },
  { pattern: /unknown block type "/, rule: () => ({ class: "field", field: "type" }) },
  { pattern: /unknown message role "/, rule: () => ({ class: "field", field: "role" }) },
  { pattern: /unknown response audit kind "/, rule: () => ({ class: "field", field: "kind" }) },
  { pattern: /(missing|null) response audit data/, rule: () => ({ class: "field", field: "data" }) },
  { pattern: /illegal base64 data/, rule: () => ({ class: "field", field: "data" }) },
  {
    pattern: /: (\w+) must be (set|zero)$/,
    rule: (m) => (COORDINATES.has(norm(m[1]!)) ? { class: "coordinate", field: norm(m[1]!) } : { class: "field", field: norm(m[1]!) }),
  },
  { pattern: /: (\w+) is invalid$/, rule: (m) => ({ class: "field", field: GO_ALIASES[norm(m[1]!)] ?? norm(m[1]!) }) },
];

/** The rule of one Go error text; undefined when no pattern of the table matches. */
export function goRuleOf(text: string): RefusalRule | undefined {
  for (const { pattern, rule } of GO_ERROR_RULES) {
    const m = text.match(pattern);
    if (m) return rule(m);
  }
  return undefined;
}

/**
 * The inputs both refuse for different rules, each with why (CONFORMANCE.md, "Refusals
 * compared by rule"). go-wire.test.ts fails on one not listed here, and on an entry that no
 * longer is one.
 */
export const OTHER_RULE_EXPLAINED: Readonly<Record<string, string>> = {
  "LoopIdle/minimal::not-object/null":
    "the text `null`: Go decodes it into an empty envelope and then finds no type (unknown event type \"\"); jetloop refuses a text that is not an object before it looks for a type",
};

/** The rules by which jetloop refuses input the Go runtime reads (CONFORMANCE.md's table). */
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

/** jetloop's refusal: one of Go's rules, or one of its own stricter ones. */
export type JetloopRule = { readonly rule: RefusalRule } | { readonly stricter: StricterRule };

const UUID_CASE = /canonical lowercase UUID/;

/** The rule a jetloop refusal names, from its typed error (never from its message's wording but where the type says no more). */
export function jetloopRuleOf(error: unknown): JetloopRule | undefined {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof WireKeyError) {
    if (cause.problem === "letter_case") return { stricter: "letter-case-keys" };
    if (cause.problem === "null") return { stricter: "null-values" };
  }
  const reason = error instanceof EventDecodeError ? error.reason : cause instanceof StrictJsonError ? cause.reason : undefined;
  switch (reason) {
    case "letter_case_key":
      // Two keys of one object equal in Go's strings.ToLower: Go's own duplicate rule. A key
      // that only folds onto a field's name: the stricter rule.
      return /keys that differ only in letter case/.test((error as Error).message) ? { rule: { class: "duplicate-key" } } : { stricter: "letter-case-keys" };
    case "null_value":
      return { stricter: "null-values" };
    case "inexact_number":
      return { stricter: "inexact-numbers" };
    case "number_out_of_range":
      // Go's duplicate-key scan reads every number as a float64: one past its range is refused wherever it stands.
      return { rule: { class: "number-range" } };
    case "too_large":
      return { stricter: "byte-cap" };
    case "not_utf8":
      return error instanceof RequestDecodeError ? { stricter: "invalid-utf8" } : { rule: { class: "not-utf8" } };
    case "malformed_json":
      return { rule: { class: "json-grammar" } };
    case "too_deep":
      return { rule: { class: "nesting-depth" } };
    case "duplicate_key":
      return { rule: { class: "duplicate-key" } };
    case "not_an_object":
      return { rule: { class: "not-an-object" } };
    case "missing_type":
      return { rule: { class: "unknown-event-type" } };
    case "escaped_time":
      return { rule: { class: "field", field: "@time" } };
    default:
      break;
  }
  if (error instanceof RequestDecodeError) {
    if (/not valid UTF-8/.test(error.message)) return { stricter: "invalid-utf8" };
    if (/must be a JSON object/.test(error.message)) return { rule: { class: "not-an-object" } };
    if (error.field !== "") return { rule: { class: "field", field: pathOf(error.field) } };
    return undefined;
  }
  if (error instanceof EventValidationError) {
    const field = pathOf(error.field);
    if (error.field === "err.modelFacingDetail") return { stricter: /needs model_facing/.test(error.detail ?? "") ? "model-facing-detail" : "model-facing-bound" };
    if (error.field === "type") return error.rule === "is invalid" ? { rule: { class: "field", field: "type" } } : { rule: { class: "unknown-event-type" } };
    if (error.field === "v") return { rule: { class: "schema-version" } };
    if ((error.rule === "must be set" || error.rule === "must be zero") && COORDINATES.has(field)) return { rule: { class: "coordinate", field } };
    return { rule: { class: "field", field } };
  }
  return undefined;
}

/**
 * Whether jetloop's refusal is for Go's rule: the same class, and for a field's rule the
 * same field — Go's path a prefix of jetloop's (Go names the requirement, jetloop the key
 * in it), or one name of jetloop's path (Go names the top-level field, jetloop the value
 * in it), or a uuid or time field where Go names only the kind of value.
 */
export function sameRule(go: RefusalRule, jl: RefusalRule): boolean {
  if (go.class !== jl.class) return false;
  if (go.field === undefined || jl.field === undefined) return go.field === jl.field;
  const segs = jl.field.split(".").filter((s) => s !== "request" && s !== "audit");
  const last = segs.at(-1) ?? "";
  if (go.field === "@uuid") return last.endsWith("id") || jl.field === "@uuid";
  if (go.field === "@time") return last.endsWith("at") || jl.field === "@time";
  // Go names a struct (a candidate's `grant`) where jetloop names the key in it (`grantClass`).
  const same = (w: string, seg: string | undefined) => seg !== undefined && (seg === w || seg.startsWith(w));
  const want = go.field.split(".");
  // Inside an event, jetloop's path starts at the event (`request.requirements…`), Go's at the request.
  return [segs, jl.field.split(".")].some((path) => (want.length > 1 ? want.every((w, i) => same(w, path[i])) : path.some((seg) => same(want[0]!, seg))));
}

/**
 * Whether jetloop's refusal is under `rule`. Two of the rules refuse a field's value, so
 * their errors name the field: a PermissionDecided's `effect`, a time.
 */
export function refusedUnder(error: unknown, rule: StricterRule): boolean {
  const named = jetloopRuleOf(error);
  if (named === undefined) return false;
  if ("stricter" in named) return named.stricter === rule;
  // Any id that is not a canonical lowercase UUID gets one message: the data says whether it was an upper-case one.
  if (rule === "uppercase-uuids") return UUID_CASE.test(error instanceof RequestDecodeError ? error.message : error instanceof EventValidationError ? (error.detail ?? "") : "");
  // Keys equal in Go's strings.ToLower are Go's duplicate rule where Go applies it (its event
  // decoder); where Go reads them (its bare request decoder), jetloop's letter-case rule.
  if (rule === "letter-case-keys") return (error instanceof EventDecodeError ? error.reason : error instanceof Error && error.cause instanceof StrictJsonError ? error.cause.reason : undefined) === "letter_case_key";
  if (rule === "decision-effect") return named.rule.class === "field" && named.rule.field === "effect";
  if (rule === "unwritable-times") return named.rule.class === "field" && (named.rule.field === "@time" || /at$/.test(named.rule.field ?? ""));
  return false;
}

// --- the stricter rules, read off Go's data ----------------------------------------------

/** What the data says about one case: its input, Go's verdict, Go's writing of it. */
export interface GoCase {
  readonly kind?: "event" | "request";
  readonly input: Uint8Array;
  readonly goOk: boolean;
  readonly goReencoded?: string | null;
  readonly goReencodeError?: string;
}

/** The byte cap jetloop's codec applies by default (CONFORMANCE.md, `byte-cap`). */
const DEFAULT_MAX_BYTES = 1024 * 1024;
/** Keys whose values are raw JSON (CONFORMANCE.md): the typed rules do not apply inside. */
const RAW_KEYS = new Set(["Input", "ProviderState", "metadata", "values", "default"]);
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** One scalar or key of a JSON text, with the keys of the objects it stands in. */
interface Token {
  readonly kind: "key" | "string" | "number" | "null" | "literal";
  readonly text: string;
  /** The keys from the top down to the one this value is under (arrays not counted). */
  readonly path: readonly string[];
}

/** The tokens of a JSON text, in order, with their paths; stops quietly at the first thing that is not JSON. */
export function tokens(json: string): Token[] {
  const out: Token[] = [];
  const stack: { kind: "object" | "array"; key?: string }[] = [];
  let pendingKey: string | undefined;
  const path = () => stack.map((f) => f.key).filter((k): k is string => k !== undefined);
  let i = 0;
  const str = (): string | undefined => {
    const m = /^"(?:[^"\\]|\\.)*"/s.exec(json.slice(i));
    if (!m) return undefined;
    i += m[0].length;
    try {
      return JSON.parse(m[0]) as string;
    } catch {
      return m[0].slice(1, -1);
    }
  };
  while (i < json.length) {
    const ch = json[i]!;
    if (/\s/.test(ch) || ch === "," || ch === ":") {
      i++;
      continue;
    }
    const top = stack.at(-1);
    if (ch === "{" || ch === "[") {
      stack.push({ kind: ch === "{" ? "object" : "array", ...(pendingKey === undefined ? {} : { key: pendingKey }) });
      pendingKey = undefined;
      i++;
      continue;
    }
    if (ch === "}" || ch === "]") {
      stack.pop();
      i++;
      continue;
    }
    const at = [...path(), ...(pendingKey === undefined ? [] : [pendingKey])];
    if (ch === '"') {
      const text = str();
      if (text === undefined) return out;
      const isKey = top?.kind === "object" && pendingKey === undefined && /^\s*:/.test(json.slice(i));
      if (isKey) {
        out.push({ kind: "key", text, path: path() });
        pendingKey = text;
      } else {
        out.push({ kind: "string", text, path: at });
        pendingKey = undefined;
      }
      continue;
    }
    const m = /^(-?\d[\d.eE+-]*|true|false|null)/.exec(json.slice(i));
    if (!m) return out;
    i += m[0].length;
    out.push({ kind: m[0] === "null" ? "null" : /^[tf]/.test(m[0]) ? "literal" : "number", text: m[0], path: at });
    pendingKey = undefined;
  }
  return out;
}

/** encoding/json's case folding of a key (ASCII case, and the two Unicode simple folds that reach ASCII). */
const fold = (key: string): string => [...key].map((ch) => (ch === "\u017f" ? "s" : ch === "\u212a" ? "k" : ch.toLowerCase())).join("");
const inRaw = (path: readonly string[]): boolean => path.some((k) => RAW_KEYS.has(k));

/**
 * The wire keys Go writes, per place: the event type (or "request") and the keys above the
 * object. Read off Go's own output (the written events and every re-encoding).
 */
export function wireVocabulary(outputs: readonly { kind?: "event" | "request"; json: string }[]): Map<string, Set<string>> {
  const vocab = new Map<string, Set<string>>();
  for (const { kind, json } of outputs) {
    const all = tokens(json);
    const type = kind === "request" ? "request" : (all.find((t) => t.kind === "string" && t.path.length === 1 && t.path[0] === "type")?.text ?? "");
    for (const t of all) {
      if (t.kind !== "key" || inRaw(t.path)) continue;
      const place = `${type}:${t.path.join(".")}`;
      for (const at of [place, `*:${t.path.join(".")}`]) (vocab.get(at) ?? vocab.set(at, new Set()).get(at)!).add(t.text);
    }
  }
  return vocab;
}

/** The stricter rules Go's data says an input falls under (none: jetloop must read it as Go does). */
export function stricterRulesOf(c: GoCase, vocab: Map<string, Set<string>>): Set<StricterRule> {
  const rules = new Set<StricterRule>();
  if (c.input.length > DEFAULT_MAX_BYTES) rules.add("byte-cap");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(c.input);
  } catch {
    if (c.kind === "request") rules.add("invalid-utf8");
    return rules;
  }
  if (c.goOk && typeof c.goReencoded !== "string" && /Time\.MarshalJSON/.test(c.goReencodeError ?? "")) rules.add("unwritable-times");
  const all = tokens(text);
  const type = c.kind === "request" ? "request" : (all.find((t) => t.kind === "string" && t.path.length === 1 && t.path[0] === "type")?.text ?? "");
  for (const t of all) {
    if (inRaw(t.path)) continue;
    if (t.kind === "key") {
      const known = vocab.get(`${type}:${t.path.join(".")}`) ?? vocab.get(`*:${t.path.join(".")}`);
      if (known && !known.has(t.text) && [...known].some((k) => fold(k) === fold(t.text))) rules.add("letter-case-keys");
    } else if (t.kind === "null") {
      // A document block's Data is the one null Go writes.
      if (t.path.at(-1) !== "Data") rules.add("null-values");
    } else if (t.kind === "number") {
      const plain = /^-?(0|[1-9]\d*)$/.test(t.text) && t.text !== "-0";
      if (!plain || BigInt(t.text) > BigInt(Number.MAX_SAFE_INTEGER) || BigInt(t.text) < -BigInt(Number.MAX_SAFE_INTEGER)) rules.add("inexact-numbers");
    } else if (t.kind === "string") {
      // An id Go reads as a UUID: Go writes it back in lower case (a plain string it keeps).
      if (UUID.test(t.text) && t.text !== t.text.toLowerCase() && !(typeof c.goReencoded === "string" && c.goReencoded.includes(t.text))) rules.add("uppercase-uuids");
      // "" is Go's zero effect, written as absent: read as absent.
      if (type === "PermissionDecided" && t.path.length === 1 && t.path[0] === "effect" && !["", "approve", "deny"].includes(t.text)) rules.add("decision-effect");
    }
  }
  return rules;
}
