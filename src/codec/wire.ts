/**
 * The one place where TypeScript's camelCase objects meet the wire's snake_case JSON.
 *
 * The mapping is derived from each event's zod schema, compiled once per schema:
 * object keys are renamed by rule (`toolExecutionId` ⇄ `tool_execution_id`), free-form
 * parts (records, unknown) pass untouched, and a field may carry its own value codec
 * (visibility and agency are numbers on the wire). Encoding omits zero values the way
 * the Go runtime does; decoding drops unknown keys of ordinary objects (readers ignore
 * what they do not know) and refuses them in strict objects with an UnknownWireKeyError.
 */
import type { z } from "zod";

export interface ValueCodec {
  toWire(value: unknown): unknown;
  fromWire(value: unknown): unknown;
}

const valueCodecs = new WeakMap<z.ZodType, ValueCodec>();

/** Attaches a wire codec to a schema; the schema is returned for chaining. */
export function withValueCodec<S extends z.ZodType>(schema: S, codec: ValueCodec): S {
  valueCodecs.set(schema, codec);
  return schema;
}

interface Field {
  readonly camel: string;
  readonly wire: string;
  /** `"wire":`, as it is written. */
  readonly key: string;
  readonly node: WireNode;
}

interface ObjectNode {
  readonly kind: "object";
  readonly byCamel: Map<string, Field>;
  readonly byWire: Map<string, Field>;
  readonly strict: boolean;
}

type WireNode =
  | ObjectNode
  | { readonly kind: "array"; readonly element: WireNode }
  | { readonly kind: "value"; readonly codec?: ValueCodec }
  | { readonly kind: "opaque" };

const OPAQUE: WireNode = { kind: "opaque" };
const VALUE: WireNode = { kind: "value" };

export function toSnake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const compiled = new WeakMap<z.ZodType, WireNode>();

// zod keeps its definitions on `def`; only the structural kinds matter here.
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
}

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { def: Def }).def;
}

function compile(schema: z.ZodType): WireNode {
  const cached = compiled.get(schema);
  if (cached) return cached;
  const codec = valueCodecs.get(schema);
  if (codec) return { kind: "value", codec };
  const def = defOf(schema);
  let node: WireNode;
  switch (def.type) {
    case "object": {
      const byCamel = new Map<string, Field>();
      const byWire = new Map<string, Field>();
      const strict = def.catchall !== undefined && defOf(def.catchall).type === "never";
      node = { kind: "object", byCamel, byWire, strict };
      compiled.set(schema, node); // before the fields, so recursion terminates
      for (const [camel, child] of Object.entries(def.shape ?? {})) {
        const wire = toSnake(camel);
        const field = { camel, wire, key: `${JSON.stringify(wire)}:`, node: compile(child) };
        byCamel.set(camel, field);
        byWire.set(field.wire, field);
      }
      return node;
    }
    case "union": {
      const byCamel = new Map<string, Field>();
      const byWire = new Map<string, Field>();
      let strict = true;
      for (const option of def.options ?? []) {
        const child = compile(option);
        if (child.kind !== "object") return OPAQUE;
        strict &&= child.strict;
        for (const f of child.byCamel.values()) {
          byCamel.set(f.camel, f);
          byWire.set(f.wire, f);
        }
      }
      node = { kind: "object", byCamel, byWire, strict };
      break;
    }
    case "array":
      node = { kind: "array", element: compile(def.element!) };
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
    case "record":
    case "map":
    case "any":
    case "unknown":
    case "lazy":
      node = OPAQUE;
      break;
    default:
      node = VALUE;
  }
  compiled.set(schema, node);
  return node;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The Go encoder's notion of a zero value, which it omits. */
function isZero(v: unknown): boolean {
  return (
    v === undefined ||
    v === null ||
    v === "" ||
    v === false ||
    v === 0 ||
    (Array.isArray(v) && v.length === 0) ||
    (isPlainObject(v) && Object.keys(v).length === 0)
  );
}

// JSON.stringify's own output for a string of printable ASCII without `"` or `\\`: the
// common case (ids, timestamps, names) written without a call into the runtime.
const PLAIN_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** What JSON.stringify writes for `v` (undefined for undefined). */
function writeAny(v: unknown): string | undefined {
  if (typeof v === "string") return PLAIN_STRING.test(v) ? `"${v}"` : JSON.stringify(v);
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  return JSON.stringify(v);
}

/** Fields written before an object's own: an envelope's `{"type":…,"v":1`. */
export interface WireOpening {
  /** The text so far, without a trailing comma. */
  readonly text: string;
  /** The wire keys it holds, which the object's fields must not write again. */
  readonly keys: ReadonlySet<string>;
}

const NO_OPENING: WireOpening = { text: "{", keys: new Set() };

/** The fields of an object node, in schema order (golden vectors pin the bytes), zero values omitted. */
function writeObject(value: Record<string, unknown>, node: ObjectNode, opening: WireOpening = NO_OPENING): string {
  let out = opening.text;
  let sep = out.length > 1 ? "," : "";
  for (const field of node.byCamel.values()) {
    if (opening.keys.size !== 0 && opening.keys.has(field.wire)) continue;
    const text = writeField(value[field.camel], field.node);
    if (text === undefined) continue;
    out += `${sep}${field.key}${text}`;
    sep = ",";
  }
  return `${out}}`;
}

/** A field's JSON text, or undefined when its wire value is a zero the Go encoder omits. */
function writeField(v: unknown, node: WireNode): string | undefined {
  switch (node.kind) {
    case "object": {
      if (!isPlainObject(v)) return isZero(v) ? undefined : writeAny(v);
      const text = writeObject(v, node);
      return text === "{}" ? undefined : text;
    }
    case "array":
      if (!Array.isArray(v)) return isZero(v) ? undefined : writeAny(v);
      return v.length === 0 ? undefined : writeArray(v, node.element);
    case "value": {
      const wire = node.codec ? node.codec.toWire(v) : v;
      return isZero(wire) ? undefined : writeAny(wire);
    }
    case "opaque":
      return isZero(v) ? undefined : writeAny(v);
  }
}

/** A value's JSON text where nothing is omitted: an array element, or the top level. */
function writeValue(v: unknown, node: WireNode): string {
  switch (node.kind) {
    case "object":
      return isPlainObject(v) ? writeObject(v, node) : (writeAny(v) ?? "null");
    case "array":
      return Array.isArray(v) ? writeArray(v, node.element) : (writeAny(v) ?? "null");
    case "value":
      return writeAny(node.codec ? node.codec.toWire(v) : v) ?? "null";
    case "opaque":
      return writeAny(v) ?? "null";
  }
}

function writeArray(values: readonly unknown[], element: WireNode): string {
  let out = "[";
  for (let i = 0; i < values.length; i++) out += `${i === 0 ? "" : ","}${writeValue(values[i], element)}`;
  return `${out}]`;
}

/** A key a strict object does not define, found at `path` (wire names, dotted). */
export class UnknownWireKeyError extends Error {
  constructor(readonly path: string) {
    super(`${path} is not a known field`);
    this.name = "UnknownWireKeyError";
  }
}

function decode(value: unknown, node: WireNode, path: string): unknown {
  switch (node.kind) {
    case "object": {
      if (!isPlainObject(value)) return value;
      const out: Record<string, unknown> = {};
      for (const key in value) {
        const v = value[key];
        const field = node.byWire.get(key);
        if (field) {
          // A value codec may decode a wire zero (the nil UUID) as absent.
          const decoded = decode(v, field.node, path ? `${path}.${key}` : key);
          if (decoded !== undefined) out[field.camel] = decoded;
        } else if (node.strict) {
          throw new UnknownWireKeyError(path ? `${path}.${key}` : key);
        }
      }
      return out;
    }
    case "array":
      return Array.isArray(value) ? value.map((v, i) => decode(v, node.element, `${path}.${i}`)) : value;
    case "value":
      return node.codec ? node.codec.fromWire(value) : value;
    case "opaque":
      return value;
  }
}

/**
 * camelCase value → the JSON text of its snake_case wire form, zero values omitted,
 * written directly rather than built as an object for JSON.stringify. `opening` starts
 * the top-level object with fields of its own (an event's envelope).
 */
export function toWireJson(schema: z.ZodType, value: unknown, opening?: WireOpening): string {
  const node = compile(schema);
  if (node.kind === "object" && isPlainObject(value)) return writeObject(value, node, opening);
  if (opening) throw new TypeError("only an object can be written after an envelope");
  return writeValue(value, node);
}

/**
 * snake_case wire object → camelCase object, ready for the schema to validate.
 * Throws UnknownWireKeyError for a key a strict object does not define.
 */
export function fromWire(schema: z.ZodType, value: unknown): unknown {
  return decode(value, compile(schema), "");
}
