/**
 * The one place where TypeScript's camelCase objects meet the wire's JSON, written the
 * way the Go runtime's encoding/json writes it.
 *
 * The mapping is derived from each zod schema, compiled once per schema:
 * - a field's wire name is its snake_case name, or the one `wireField` gives (the model's
 *   content blocks keep Go's PascalCase field names: `Text`, `ID`, `Input`);
 * - an object's fields are written in schema order (Go's struct order), or sorted by wire
 *   name where Go writes a map (the event envelope, content blocks, `map[string]X`), in
 *   Go's order: by UTF-8 bytes, not UTF-16 code units (`compareUtf8`);
 * - zero values ("", 0, false, empty arrays, objects with nothing to write) are omitted,
 *   as Go's `omitempty`/`omitzero`, except for fields `wireField` marks `always` (Go fields
 *   without omitempty), which write their zero when absent;
 * - strings are escaped as Go escapes them: `<`, `>`, `&`, U+2028 and U+2029 as `\u003c`…
 *
 * Reading is stricter than writing needs, and never different from Go: a key that matches
 * a field only ignoring letter case is refused (Go would take it as that field); `null`
 * is refused except where Go itself writes it (`nullable`); unknown keys are ignored,
 * as Go ignores them, except in strict objects, which refuse them.
 */
import { z } from "zod";
import { goFold, goLower } from "./go-fold.js";
import { RAW_GUIDE, RawJson } from "./raw-json.js";
import { GENERIC_GUIDE, type JsonGuide, keyTable, parseStrictJson, QUOTED_GUIDE, RefusedValue, wellFormedText } from "./strict-json.js";

export interface ValueCodec {
  toWire(value: unknown): unknown;
  fromWire(value: unknown): unknown;
  /**
   * How the reader takes the value from the text: `raw` keeps its JSON text (a Go
   * json.RawMessage, read as a RawJson); `quoted` reads a string's quoted bytes without
   * unescaping them (a Go time.Time, which refuses any escape).
   */
  readonly readsAs?: "raw" | "quoted";
  /**
   * The value's wire form as a JSON Schema (draft 2020-12), for other languages: a codec
   * changes what the wire holds (a number for an enum, text for bytes), so the zod schema
   * it sits on cannot say it. `wire-json-schema.ts` refuses a codec without one.
   */
  readonly jsonSchema?: Readonly<Record<string, unknown>>;
  /** The wire value this codec reads as absent (the nil UUID): a required field may not hold it. */
  readonly wireZero?: unknown;
}

/** How one field sits on the wire, beyond what its schema says. */
export interface WireFieldOptions {
  /** The wire name, when it is not the snake_case of the field name. */
  readonly name?: string;
  /** Written even when zero or absent, as a Go field without omitempty is. */
  readonly always?: boolean;
  /** `null` is this field's zero on the wire (a Go nil slice without omitempty). */
  readonly nullable?: boolean;
  /**
   * An empty value stays present rather than counting as absent: an empty object behind a
   * Go pointer, and an empty (non-nil) slice or map under `omitzero`, which omits only nil.
   */
  readonly keepEmpty?: boolean;
}

/**
 * What a schema declares about its wire form, in zod's own registry. A clone made by
 * `wireField` or a check (`.regex`, `.refine`) inherits its parent's entry key by key
 * (zod's registry merges along `_zod.parent`), so `field` options are replaced whole.
 */
interface WireMeta {
  readonly codec?: ValueCodec;
  readonly field?: WireFieldOptions;
  /** Written with its keys sorted (a Go map). */
  readonly sorted?: boolean;
  /** A Go map (`go-map-schema.ts`): the schema of its values (typed unknown: zod's registry rewrites a schema-typed meta). */
  readonly goMap?: unknown;
}

const wireMeta = z.registry<WireMeta>();

function declare(schema: z.ZodType, meta: WireMeta): void {
  wireMeta.add(schema, { ...wireMeta.get(schema), ...meta });
}

/** Attaches a wire codec to a schema; the schema is returned for chaining. */
export function withValueCodec<S extends z.ZodType>(schema: S, codec: ValueCodec): S {
  declare(schema, { codec });
  return schema;
}

/** A copy of `schema` that sits on the wire as `options` say (its codec and key order inherited). */
export function wireField<S extends z.ZodType>(schema: S, options: WireFieldOptions): S {
  const copy = schema.clone();
  declare(copy, { field: options });
  return copy;
}

/**
 * What `schema` declares about its wire form: its codec, field options and key order (the
 * field options looked up through the wrappers around it, as the compiler does). For
 * describers of the wire (`wire-json-schema.ts`), which read what the writer reads.
 */
export function wireMetaOf(schema: z.ZodType): { readonly codec?: ValueCodec; readonly field?: WireFieldOptions; readonly sorted?: boolean; readonly [more: string]: unknown } {
  return { ...wireMeta.get(schema), field: optionsOf(schema) };
}

/** @internal Marks `schema` as a Go map of `value`s (go-map-schema.ts builds it). */
export function asGoMap<S extends z.ZodType>(schema: S, value: z.ZodType): S {
  declare(schema, { goMap: value });
  return schema;
}

/** Marks an object schema as written with its keys sorted (Go writes it as a map). Records always are. */
export function sortedKeys<S extends z.ZodType>(schema: S): S {
  declare(schema, { sorted: true });
  return schema;
}

export function toSnake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

interface Field {
  readonly camel: string;
  readonly wire: string;
  /** `"wire":`, as it is written. */
  readonly key: string;
  readonly node: WireNode;
  readonly always: boolean;
  readonly nullable: boolean;
  readonly keepEmpty: boolean;
  /** What an absent `always` field writes. */
  readonly zero: string;
}

interface ObjectNode {
  readonly kind: "object";
  /** In the order they are written. */
  readonly fields: Field[];
  readonly byWire: Map<string, Field>;
  /** Wire names folded as Go folds them, to recognize a key Go would match to a field. */
  readonly byFold: Map<string, Field>;
  readonly strict: boolean;
  sorted: boolean;
}

type ScalarKind = "string" | "number" | "boolean" | "other";

/** A discriminated union of objects: each value is written and read as its own option. */
interface VariantNode {
  readonly kind: "variant";
  /** The discriminator's wire name and camelCase name. */
  readonly wire: string;
  readonly camel: string;
  readonly options: Map<unknown, ObjectNode>;
}

type WireNode =
  | ObjectNode
  | VariantNode
  | { readonly kind: "array"; readonly element: WireNode }
  /** A Go map: written with its keys sorted, as encoding/json writes every map. */
  | {
      readonly kind: "record";
      readonly element: WireNode;
      /**
       * Declared with zod's `z.record`, whose validation drops a `__proto__` key: such a
       * key is refused when read rather than lost (`goMapSchema` keeps every key).
       */
      readonly dropsProto: boolean;
    }
  | { readonly kind: "value"; readonly scalar: ScalarKind; readonly codec?: ValueCodec }
  | { readonly kind: "opaque" };

const OPAQUE: WireNode = { kind: "opaque" };

const compiled = new WeakMap<z.ZodType, WireNode>();

// zod keeps its definitions on `def`; only the structural kinds matter here.
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  values?: unknown[];
}

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { def: Def }).def;
}

/** The options of a field, looked up through the wrappers (optional, default…) around it. */
function optionsOf(schema: z.ZodType): WireFieldOptions | undefined {
  let s: z.ZodType | undefined = schema;
  while (s) {
    const o = wireMeta.get(s)?.field;
    if (o) return o;
    s = defOf(s).innerType;
  }
  return undefined;
}

function makeField(camel: string, child: z.ZodType): Field {
  const options = optionsOf(child);
  const wire = options?.name ?? toSnake(camel);
  const node = compile(child);
  return {
    camel,
    wire,
    key: `${JSON.stringify(wire)}:`,
    node,
    always: options?.always ?? false,
    nullable: options?.nullable ?? false,
    keepEmpty: options?.keepEmpty ?? false,
    zero: options?.always ? zeroText(node, options.nullable ?? false) : "",
  };
}

function zeroText(node: WireNode, nullable: boolean): string {
  if (nullable) return "null";
  switch (node.kind) {
    case "object":
      return writeObject({}, node);
    case "array":
    case "opaque":
      return "null";
    case "record":
      return "{}";
    case "variant":
      return "null";
    case "value":
      return node.scalar === "string" ? '""' : node.scalar === "number" ? "0" : node.scalar === "boolean" ? "false" : "null";
  }
}

function scalarOf(schema: z.ZodType): ScalarKind {
  let s: z.ZodType | undefined = schema;
  for (let i = 0; s && i < 8; i++) {
    const def = defOf(s);
    switch (def.type) {
      case "string":
        return "string";
      case "number":
      case "int":
      case "bigint":
        return "number";
      case "boolean":
        return "boolean";
      case "enum":
      case "literal":
        return "string";
      default:
        s = def.innerType ?? def.in;
    }
  }
  return "other";
}

function objectNode(strict: boolean, sorted: boolean): ObjectNode {
  return { kind: "object", fields: [], byWire: new Map(), byFold: new Map(), strict, sorted };
}

function addField(node: ObjectNode, field: Field): void {
  if (node.byWire.has(field.wire)) return;
  node.fields.push(field);
  node.byWire.set(field.wire, field);
  node.byFold.set(goFold(field.wire), field);
}

function finish(node: ObjectNode): void {
  if (node.sorted) node.fields.sort((a, b) => compareUtf8(a.wire, b.wire));
}

const SURROGATE = /[\ud800-\udfff]/;

/**
 * Go's order of map keys (strings.Compare of their UTF-8 bytes, which is code point order).
 * It differs from UTF-16 code unit order only where one string has a surrogate (a code
 * point past U+FFFF) and the other a unit from U+E000 to U+FFFF at the same place.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800 && x < 0xe000 !== y < 0xe000) return x < 0xe000 ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

/**
 * A map's keys as Go writes them, in Go's order: each as the UTF-8 text it stands for (a
 * lone surrogate is written U+FFFD), sorted by UTF-8 bytes. The usual keys (no surrogate)
 * take one native sort, whose UTF-16 order is then Go's order; only a key with a surrogate
 * costs the code point comparison.
 */
function goMapKeys(value: Record<string, unknown>): { written: string[]; keys: string[] } {
  const keys = Object.keys(value).sort();
  if (!keys.some((k) => SURROGATE.test(k))) return { written: keys, keys };
  const pairs = keys.map((k) => ({ k, w: wellFormedText(k) })).sort((a, b) => compareUtf8(a.w, b.w));
  return { written: pairs.map((p) => p.w), keys: pairs.map((p) => p.k) };
}

function compile(schema: z.ZodType): WireNode {
  const cached = compiled.get(schema);
  if (cached) return cached;
  const meta = wireMeta.get(schema);
  if (meta?.goMap !== undefined) {
    const map: WireNode = { kind: "record", element: compile(meta.goMap as z.ZodType), dropsProto: false };
    compiled.set(schema, map);
    return map;
  }
  const codec = meta?.codec;
  if (codec) return { kind: "value", scalar: scalarOf(schema), codec };
  const def = defOf(schema);
  let node: WireNode;
  switch (def.type) {
    case "object": {
      const strict = def.catchall !== undefined && defOf(def.catchall).type === "never";
      const obj = objectNode(strict, wireMeta.get(schema)?.sorted === true);
      compiled.set(schema, obj); // before the fields, so recursion terminates
      for (const [camel, child] of Object.entries(def.shape ?? {})) addField(obj, makeField(camel, child));
      finish(obj);
      return obj;
    }
    case "union": {
      if (def.discriminator !== undefined) {
        const variant = variantNode(def.discriminator, def.options ?? []);
        if (variant) {
          node = variant;
          break;
        }
      }
      const obj = objectNode(true, wireMeta.get(schema)?.sorted === true);
      for (const option of def.options ?? []) {
        const child = compile(option);
        if (child.kind !== "object") return OPAQUE;
        if (!child.strict) (obj as { strict: boolean }).strict = false;
        obj.sorted ||= child.sorted;
        for (const f of child.fields) addField(obj, f);
      }
      finish(obj);
      node = obj;
      break;
    }
    case "array":
      node = { kind: "array", element: compile(def.element!) };
      break;
    case "record":
      node = { kind: "record", element: compile(def.valueType!), dropsProto: true };
      break;
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "catch":
    case "readonly":
    case "nonoptional":
      node = compile(def.innerType!);
      break;
    case "pipe":
      node = compile(def.in!);
      break;
    case "map":
    case "any":
    case "unknown":
    case "lazy":
      node = OPAQUE;
      break;
    default:
      node = { kind: "value", scalar: scalarOf(schema) };
  }
  compiled.set(schema, node);
  return node;
}

function variantNode(camel: string, options: z.ZodType[]): VariantNode | undefined {
  const byValue = new Map<unknown, ObjectNode>();
  let wire = toSnake(camel);
  for (const option of options) {
    const node = compile(option);
    const shape = defOf(option).shape;
    const discriminator = shape?.[camel];
    if (node.kind !== "object" || discriminator === undefined) return undefined;
    wire = node.fields.find((f) => f.camel === camel)?.wire ?? wire;
    const values = defOf(discriminator).values;
    if (!values) return undefined;
    for (const v of values) byValue.set(v, node);
  }
  return { kind: "variant", wire, camel, options: byValue };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The Go encoder's notion of an empty value, which `omitempty` omits. */
function isZero(v: unknown): boolean {
  return v === undefined || v === null || v === "" || v === false || v === 0 || (Array.isArray(v) && v.length === 0);
}

/** A value Go's `omitzero` would omit: nothing in it but zeros, at any depth. */
export function isZeroValue(v: unknown): boolean {
  if (isZero(v)) return true;
  if (!isPlainObject(v)) return false;
  for (const k in v) if (!isZeroValue(v[k])) return false;
  return true;
}

// JSON.stringify's own output for a string of printable ASCII without `"`, `\\`, `<`, `>`
// or `&`: the common case (ids, timestamps, names) written without a call into the runtime.
const PLAIN_STRING = /^[\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\x5b\x5d-\x7e]*$/;
const GO_ESCAPED = /[<>&\u2028\u2029]/g;
const GO_ESCAPES: Record<string, string> = {
  "<": "\\u003c",
  ">": "\\u003e",
  "&": "\\u0026",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};

/** A string as Go's encoding/json writes it (HTML-safe, invalid UTF-16 as U+FFFD). */
export function goString(s: string): string {
  if (PLAIN_STRING.test(s)) return `"${s}"`;
  return JSON.stringify(wellFormedText(s)).replace(GO_ESCAPED, (c) => GO_ESCAPES[c]!);
}

/** A value the wire cannot carry so that it reads back the same (see strict-json.ts). */
export class UnwritableJsonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnwritableJsonError";
  }
}

function goNumber(v: number): string {
  if (!Number.isFinite(v) || Object.is(v, -0) || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
    throw new UnwritableJsonError(`the number ${String(v)} cannot be written so that it reads back exactly`);
  }
  return String(v);
}

/**
 * Any JSON value as Go writes a json.RawMessage: order kept, compact, HTML-safe. Refuses
 * what the reader would refuse (keys differing only in letter case, inexact numbers), so
 * that nothing is written that cannot be read back.
 */
export function goJson(v: unknown): string {
  if (typeof v === "string") return goString(v);
  if (typeof v === "number") return goNumber(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v === null || v === undefined) return "null";
  if (RawJson.is(v)) {
    if (v.depth > deepestRaw) deepestRaw = v.depth;
    return v.text;
  }
  // What else would be written as `{}` or not at all: a BigInt, a boxed number (NaN,
  // Infinity), a Date, a Map, a function, a forged RawJson. Refused, never written lossily.
  if (typeof v !== "object" || !(Array.isArray(v) || isPlainData(v))) throw new UnwritableJsonError(`${unwritableKind(v)} cannot be written as JSON that reads back the same`);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += `${i === 0 ? "" : ","}${goJson(v[i])}`;
    return `${out}]`;
  }
  const keys = Object.keys(v);
  // Checked as written: two keys with lone surrogates can be written as one (U+FFFD).
  checkFoldedKeys(keys.some((k) => SURROGATE.test(k)) ? keys.map(wellFormedText) : keys);
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    out += `${i === 0 ? "" : ","}${goString(k)}:${goJson((v as Record<string, unknown>)[k])}`;
  }
  return `${out}}`;
}

/** An object of plain data: Object.prototype's or none (a Go map's null-prototype object). */
function isPlainData(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function unwritableKind(v: unknown): string {
  if (typeof v === "object" && v !== null) return `an object (${Object.prototype.toString.call(v)})`;
  return typeof v === "bigint" ? `the BigInt ${String(v)}` : `a ${typeof v}`;
}

/** The deepest raw value written since the last `takeDeepestRaw`: the codec checks the event's depth only when it may matter. */
let deepestRaw = 0;

export function takeDeepestRaw(): number {
  const d = deepestRaw;
  deepestRaw = 0;
  return d;
}

/** Keys the reader would refuse as one key (strings.ToLower equal) are not written. */
function checkFoldedKeys(keys: readonly string[]): void {
  if (keys.length < 2) return;
  const folded = new Set<string>();
  for (const k of keys) {
    const f = goLower(k);
    if (folded.has(f)) throw new UnwritableJsonError(`keys that differ only in letter case: ${JSON.stringify(k)}`);
    folded.add(f);
  }
}

/** The fields of an object node, in the node's order, zero values omitted. */
function writeObject(value: Record<string, unknown>, node: ObjectNode, extra?: Record<string, unknown>): string {
  let out = "{";
  let sep = "";
  for (const field of node.fields) {
    const v = extra !== undefined && field.wire in extra ? extra[field.wire] : value[field.camel];
    const text = writeField(v, field);
    if (text === undefined) continue;
    out += `${sep}${field.key}${text}`;
    sep = ",";
  }
  return `${out}}`;
}

/** A field's JSON text, or undefined when Go omits it. */
function writeField(v: unknown, field: Field): string | undefined {
  const node = field.node;
  if (v === undefined || v === null) return field.always ? field.zero : undefined;
  switch (node.kind) {
    case "object": {
      if (!isPlainObject(v)) return goJson(v);
      if (!field.always && !field.keepEmpty && isZeroValue(v)) return undefined;
      const text = writeObject(v, node);
      return text === "{}" && !field.always && !field.keepEmpty ? undefined : text;
    }
    case "variant": {
      const option = isPlainObject(v) ? node.options.get(v[node.camel]) : undefined;
      return option ? writeObject(v as Record<string, unknown>, option) : goJson(v);
    }
    case "array":
      if (!Array.isArray(v)) return goJson(v);
      if (v.length === 0) return field.always || field.keepEmpty ? "[]" : undefined;
      return writeArray(v, node.element);
    case "record":
      if (!isPlainObject(v)) return goJson(v);
      if (Object.keys(v).length === 0 && !field.always && !field.keepEmpty) return undefined;
      return writeRecord(v, node);
    case "value": {
      const wire = node.codec ? node.codec.toWire(v) : v;
      if (isZero(wire)) return field.always ? (wire === undefined || wire === null ? field.zero : goJson(wire)) : undefined;
      return goJson(wire);
    }
    case "opaque":
      return isZero(v) && !field.always ? undefined : goJson(v);
  }
}

/** A value's JSON text where nothing is omitted: an array element, or the top level. */
function writeValue(v: unknown, node: WireNode): string {
  switch (node.kind) {
    case "object":
      return isPlainObject(v) ? writeObject(v, node) : goJson(v);
    case "variant": {
      const option = isPlainObject(v) ? node.options.get(v[node.camel]) : undefined;
      return option ? writeObject(v as Record<string, unknown>, option) : goJson(v);
    }
    case "array":
      return Array.isArray(v) ? writeArray(v, node.element) : goJson(v);
    case "record":
      return isPlainObject(v) ? writeRecord(v, node) : goJson(v);
    case "value":
      return goJson(node.codec ? node.codec.toWire(v) : v);
    case "opaque":
      return goJson(v);
  }
}

function writeArray(values: readonly unknown[], element: WireNode): string {
  let out = "[";
  for (let i = 0; i < values.length; i++) out += `${i === 0 ? "" : ","}${writeValue(values[i], element)}`;
  return `${out}]`;
}

/** A Go map: keys in Go's order (`goMapKeys`), none that the reader would refuse as a repeat. */
function writeRecord(value: Record<string, unknown>, node: { element: WireNode }): string {
  const { written, keys } = goMapKeys(value);
  checkFoldedKeys(written);
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    out += `${i === 0 ? "" : ","}${goString(written[i]!)}:${writeValue(value[keys[i]!], node.element)}`;
  }
  return `${out}}`;
}

export type WireKeyProblem = "unknown" | "letter_case" | "null" | "dropped";

/** A key the wire form may not have, found at `path` (wire names, dotted). */
export class WireKeyError extends Error {
  constructor(
    readonly path: string,
    readonly problem: WireKeyProblem,
  ) {
    super(
      problem === "unknown"
        ? `${path} is not a known field`
        : problem === "letter_case"
          ? `${path} differs from a known field only in letter case`
          : problem === "dropped"
            ? `${path} is a map key that a z.record schema would drop (declare the map with goMapSchema)`
            : `${path} is null`,
    );
    this.name = "WireKeyError";
  }
}

function decodeObject(value: Record<string, unknown>, node: ObjectNode, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const field = node.byWire.get(key);
    // The path names an error; a scalar field's own decode never reports one.
    const at = field !== undefined && (field.node.kind === "value" || field.node.kind === "opaque") ? "" : path ? `${path}.${key}` : key;
    if (field === undefined) {
      // One rule at every depth: a key Go would match to a field by folding its case is
      // refused, never dropped (dropping `viſibility` would read an internal event as public).
      if (node.byFold.has(goFold(key))) throw new WireKeyError(at, "letter_case");
      if (node.strict) throw new WireKeyError(at, "unknown");
      continue;
    }
    let v = value[key];
    // Refused by the merged rules of the kinds the object might have been: read again by this kind's.
    if (v instanceof RefusedValue) v = parseStrictJson(v.text, guideOf(field.node));
    if (v === null || (field.nullable && v instanceof RawJson && v.text === "null")) {
      if (field.nullable) continue;
      throw new WireKeyError(path ? `${path}.${key}` : key, "null");
    }
    // A scalar read as itself (not raw where this field is not): decode's value case, inline (most fields of every event).
    const fnode = field.node;
    const decoded =
      fnode.kind === "value" && !(v instanceof RawJson)
        ? fnode.codec
          ? fnode.codec.fromWire(v)
          : v === "" || v === 0 || v === false
            ? undefined
            : v
        : decode(v, fnode, at, field);
    if (decoded !== undefined) out[field.camel] = decoded;
  }
  return out;
}

/** Reads a wire value; undefined for a zero that Go's writer would omit (`omitempty`). */
function decode(value: unknown, node: WireNode, path: string, field?: Field): unknown {
  // Refused by merged rules (a record's value where another kind has an object): read by this node's.
  if (value instanceof RefusedValue) value = parseStrictJson(value.text, guideOf(node));
  // Read raw where another event type has a raw field of this name: read it again as this
  // one's field (a time in it quoted, its numbers exact).
  if (value instanceof RawJson && !(node.kind === "value" && node.codec?.readsAs === "raw")) value = parseStrictJson(value.text, guideOf(node));
  switch (node.kind) {
    case "object": {
      if (!isPlainObject(value)) return value;
      const out = decodeObject(value, node, path);
      if (field && !field.always && !field.keepEmpty) {
        for (const _ in out) return out;
        return undefined;
      }
      return out;
    }
    case "variant": {
      if (!isPlainObject(value)) return value;
      const option = node.options.get(value[node.wire]);
      if (option) return decodeObject(value, option, path);
      if (!(node.wire in value)) {
        const folded = goFold(node.wire);
        const variant = Object.keys(value).find((k) => goFold(k) === folded);
        if (variant !== undefined) throw new WireKeyError(path ? `${path}.${variant}` : variant, "letter_case");
      }
      // An unknown discriminator is left as it is, for validation to refuse.
      return value;
    }
    case "array":
      if (!Array.isArray(value)) return value;
      if (value.length === 0 && field && !field.always && !field.keepEmpty) return undefined;
      {
        const scalar = node.element.kind === "value" || node.element.kind === "opaque";
        return value.map((v, i) => {
          if (v === null) throw new WireKeyError(`${path}.${i}`, "null");
          return decode(v, node.element, scalar ? "" : `${path}.${i}`);
        });
      }
    case "record": {
      if (!isPlainObject(value)) return value;
      // A Go map's keys are data, never properties of Object.prototype: a null-prototype
      // object, where `__proto__` or `constructor` is an own key like any other.
      const out = Object.create(null) as Record<string, unknown>;
      for (const k of Object.keys(value)) {
        if (value[k] === null) throw new WireKeyError(`${path}.${k}`, "null");
        if (k === "__proto__" && node.dropsProto) throw new WireKeyError(`${path}.${k}`, "dropped");
        out[k] = decode(value[k], node.element, `${path}.${k}`);
      }
      return out;
    }
    case "value": {
      // A value codec decides its own zeros (the nil UUID is one, "" is not a UUID).
      if (node.codec) return node.codec.fromWire(value);
      // A zero is absent in TypeScript even where Go writes it (`"scope":""`): the encoder
      // writes it back, and the event a publisher passed equals the one a subscriber reads.
      return field && (value === "" || value === 0 || value === false) ? undefined : value;
    }
    case "opaque":
      return value;
  }
}

/**
 * camelCase value → its wire JSON text. `envelope` holds wire fields written beside the
 * object's own, in their sorted place (an event's `type` and `v`).
 */
export function toWireJson(schema: z.ZodType, value: unknown, envelope?: Record<string, unknown>): string {
  const node = compile(schema);
  if (node.kind === "object" && isPlainObject(value)) return writeObject(value, node, envelope);
  if (envelope) throw new TypeError("only an object can be written with an envelope");
  return writeValue(value, node);
}

/**
 * Wire object → camelCase object, ready for the schema to validate. Throws WireKeyError
 * for a key the wire form may not have.
 */
export function fromWire(schema: z.ZodType, value: unknown): unknown {
  const node = compile(schema);
  if (node.kind === "object" && isPlainObject(value)) return decodeObject(value, node, "");
  return decode(value, node, "");
}

/** A place in a schema's wire form where a Go map or a json.RawMessage stands. */
export interface WirePosition {
  /** Wire names from the top; `*` for any element of an array or value of a map. */
  readonly path: readonly string[];
  readonly kind: "map" | "raw";
}

/**
 * Every Go map and raw value of a schema, by wire path: what a test of "every map
 * position" walks, derived from the schema so that a new map is covered when it is
 * declared. A recursive schema (blocks inside tool results) is walked once per node.
 */
export function wirePositions(schema: z.ZodType): WirePosition[] {
  const out: WirePosition[] = [];
  const walk = (node: WireNode, path: readonly string[], open: Set<WireNode>): void => {
    if (open.has(node)) return;
    open.add(node);
    switch (node.kind) {
      case "object":
        for (const f of node.fields) walk(f.node, [...path, f.wire], open);
        break;
      case "variant":
        for (const option of new Set(node.options.values())) walk(option, path, open);
        break;
      case "array":
        walk(node.element, [...path, "*"], open);
        break;
      case "record":
        out.push({ path, kind: "map" });
        walk(node.element, [...path, "*"], open);
        break;
      case "value":
        if (node.codec?.readsAs === "raw") out.push({ path, kind: "raw" });
        break;
      case "opaque":
        break;
    }
    open.delete(node);
  };
  walk(compile(schema), [], new Set());
  // A field shared by several options (a block's ProviderState) is reached once per option.
  const seen = new Set<string>();
  return out.filter((p) => {
    const key = `${p.kind}:${p.path.join("\u0000")}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const guides = new WeakMap<WireNode, JsonGuide>();

/** What the reader expects where, for a schema: see JsonGuide in strict-json.ts. */
export function guideFor(schema: z.ZodType): JsonGuide {
  return guideOf(compile(schema));
}

function guideOf(node: WireNode): JsonGuide {
  let guide = guides.get(node);
  if (guide !== undefined) return guide;
  switch (node.kind) {
    case "object": {
      const members = new Map<string, JsonGuide>();
      guide = {
        kind: "shape",
        keys: keyTable(node.byWire.keys()),
        member: (key) => {
          const known = members.get(key);
          if (known !== undefined) return known;
          const field = node.byWire.get(key) ?? node.byFold.get(goFold(key));
          if (field === undefined) return undefined;
          const g = guideOf(field.node);
          if (field.wire === key) members.set(key, g);
          return g;
        },
      };
      break;
    }
    case "variant":
      guide = mergeGuides([...new Set(node.options.values())].map(guideOf));
      break;
    case "array": {
      const element = node.element;
      guide = { kind: "shape", element: () => guideOf(element) };
      break;
    }
    case "record": {
      const element = node.element;
      guide = { kind: "shape", member: () => guideOf(element) };
      break;
    }
    case "value":
      guide = node.codec?.readsAs === "raw" ? RAW_GUIDE : node.codec?.readsAs === "quoted" ? QUOTED_GUIDE : GENERIC_GUIDE;
      break;
    case "opaque":
      guide = GENERIC_GUIDE;
      break;
  }
  guides.set(node, guide);
  return guide;
}

/**
 * One guide for values of any of several shapes (a union's options, every event type's
 * envelope): a key raw in any of them is read raw, quoted in any is read quoted; decode
 * reads a raw value again where its own field is not raw. A key only some of them name, or
 * that they read by different rules, is read by the merged rules, and a refusal by those
 * waits for the object's kind (`deferRefusal`): that kind's own rules decide, and a kind
 * without the field ignores the key, as Go does.
 */
export function mergeGuides(guides: readonly JsonGuide[]): JsonGuide {
  // Shapes that share a field share its guide (a union's options, one blocks schema).
  const all = [...new Set(guides)];
  if (all.length === 1) return all[0]!;
  if (all.some((g) => g.kind === "raw")) return RAW_GUIDE;
  if (all.some((g) => g.kind === "quoted")) return QUOTED_GUIDE;
  const shapes = all.filter((g) => g.kind === "shape");
  if (shapes.length === 0) return GENERIC_GUIDE;
  if (shapes.length === 1) return shapes[0]!;
  const members = new Map<string, JsonGuide>();
  const withMembers = shapes.filter((g) => g.member);
  const withElements = shapes.filter((g) => g.element);
  let element: JsonGuide | undefined;
  return {
    kind: "shape",
    keys: keyTable(withMembers.flatMap((g) => (g.keys ?? []).flatMap((bucket) => (bucket ?? []).map((k) => k.name)))),
    member: withMembers.length === 0
      ? undefined
      : (key) => {
          const known = members.get(key);
          if (known !== undefined) return known;
          const found = withMembers.map((g) => g.member!(key)).filter((g): g is JsonGuide => g !== undefined);
          if (found.length === 0) return undefined;
          const merged = mergeGuides(found);
          // Deferred where some shape lacks the key or reads it otherwise, or one defers it already.
          const defer = found.length < withMembers.length || found.some((f) => f !== found[0] || f.deferRefusal === true);
          const g = defer && merged.deferRefusal !== true ? { ...merged, deferRefusal: true } : merged;
          if (members.size < 4096) members.set(key, g);
          return g;
        },
    element: withElements.length === 0 ? undefined : () => (element ??= mergeGuides(withElements.map((g) => g.element!()))),
  };
}
