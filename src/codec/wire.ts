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
  readonly node: WireNode;
}

type WireNode =
  | { readonly kind: "object"; readonly byCamel: Map<string, Field>; readonly byWire: Map<string, Field>; readonly strict: boolean }
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
        const field = { camel, wire: toSnake(camel), node: compile(child) };
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

function encode(value: unknown, node: WireNode, into?: Record<string, unknown>): unknown {
  switch (node.kind) {
    case "object": {
      if (!isPlainObject(value)) return value;
      // Schema order, not the caller's key order: the bytes are pinned by golden vectors.
      const out: Record<string, unknown> = into ?? {};
      for (const field of node.byCamel.values()) {
        const v = encode(value[field.camel], field.node);
        if (!isZero(v)) out[field.wire] = v;
      }
      return out;
    }
    case "array":
      return Array.isArray(value) ? value.map((v) => encode(v, node.element)) : value;
    case "value":
      return node.codec ? node.codec.toWire(value) : value;
    case "opaque":
      return value;
  }
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

/** camelCase object → snake_case wire object with zero values omitted. */
export function toWire(schema: z.ZodType, value: unknown): unknown {
  return encode(value, compile(schema));
}

/**
 * `toWire` for an object schema, writing the fields into `target` after what it already
 * holds (the envelope's `type` and `v`): one object per event instead of two and a spread.
 */
export function toWireInto(schema: z.ZodType, value: Record<string, unknown>, target: Record<string, unknown>): Record<string, unknown> {
  const node = compile(schema);
  if (node.kind !== "object") return Object.assign(target, encode(value, node) as object);
  encode(value, node, target);
  return target;
}

/**
 * snake_case wire object → camelCase object, ready for the schema to validate.
 * Throws UnknownWireKeyError for a key a strict object does not define.
 */
export function fromWire(schema: z.ZodType, value: unknown): unknown {
  return decode(value, compile(schema), "");
}
