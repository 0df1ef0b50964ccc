/**
 * A zod schema's wire form as a JSON Schema (draft 2020-12), for readers in other
 * languages: what the codec reads, described from what the writer and reader use — wire
 * names (`wireField`), value codecs (`ValueCodec.jsonSchema`), Go's zeros, `null` only
 * where Go writes it, strict objects closed. zod's own `z.toJSONSchema` describes the
 * camelCase object a TypeScript caller holds, not this; it is used here only for the
 * leaves (a string's pattern, a number's bounds, an enum's values).
 *
 * What a JSON Schema cannot say stays the codec's: cross-field rules (a type's `check`,
 * `superRefine`s), keys that differ from a field only in letter case, duplicate keys,
 * number text, the byte and depth caps. A schema this cannot describe faithfully (a
 * transform with no codec, a union without a discriminator, a recursion without a name)
 * is refused with a WireSchemaError, never described as "anything".
 */
import { z } from "zod";
import { toSnake, compareUtf8, wireMetaOf } from "./wire.js";

export type JsonSchema = Record<string, unknown>;

export class WireSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WireSchemaError";
  }
}

export interface WireJsonSchemaOptions {
  /**
   * Schemas written once under `$defs` by these names and referred to with `$ref`: a
   * recursive schema (a tool result's blocks hold blocks) must have one.
   */
  readonly names?: ReadonlyMap<z.ZodType, string>;
  /**
   * Whether an object's scalar zero ("", 0, false) means absent, as the event reader takes
   * it (default true). False for a body described as written, where a zero is a value.
   */
  readonly goZeros?: boolean;
}

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  getter?: () => z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { def: Def }).def;
const bagOf = (s: z.ZodType): Record<string, unknown> => (s as unknown as { _zod: { bag: Record<string, unknown> } })._zod.bag;

/** Optional on the wire: absent is read (zod's `optin`: "optional", or "defaulted" for a default or prefault). */
function isOptional(s: z.ZodType): boolean {
  return (s as unknown as { _zod: { optin?: string } })._zod.optin !== undefined;
}

const WRAPPERS = new Set(["optional", "default", "prefault", "catch", "readonly", "nonoptional"]);

/** The schema under the wrappers, where the codec or the structure is declared. */
function unwrap(s: z.ZodType): z.ZodType {
  let cur = s;
  for (let i = 0; i < 16; i++) {
    if (wireMetaOf(cur).codec) return cur;
    const def = defOf(cur);
    if (WRAPPERS.has(def.type) && def.innerType) cur = def.innerType;
    else if (def.type === "lazy" && def.getter) cur = def.getter();
    else return cur;
  }
  return cur;
}

/** The zero Go writes for a scalar leaf, which the reader takes as absent. */
function zeroOf(type: string): unknown {
  return type === "string" || type === "enum" || type === "literal" ? "" : type === "boolean" ? false : type === "number" || type === "int" ? 0 : undefined;
}

class Describer {
  readonly defs: Record<string, JsonSchema> = {};
  readonly #names: ReadonlyMap<z.ZodType, string>;
  readonly #open = new Set<z.ZodType>();
  readonly #goZeros: boolean;

  constructor(options: WireJsonSchemaOptions) {
    this.#names = options.names ?? new Map();
    this.#goZeros = options.goZeros ?? true;
  }

  /** A value where it stands: an array element, a map value, the top level. */
  value(schema: z.ZodType): JsonSchema {
    const name = this.#names.get(schema);
    if (name !== undefined) {
      if (!(name in this.defs)) {
        this.defs[name] = {}; // before the body, so a recursion refers to it
        this.defs[name] = this.#describe(schema);
      }
      return { $ref: `#/$defs/${name}` };
    }
    if (this.#open.has(schema)) throw new WireSchemaError("a recursive schema needs a name (WireJsonSchemaOptions.names)");
    this.#open.add(schema);
    try {
      return this.#describe(schema);
    } finally {
      this.#open.delete(schema);
    }
  }

  #describe(schema: z.ZodType): JsonSchema {
    const meta = wireMetaOf(schema);
    if (meta.codec) {
      if (meta.codec.jsonSchema === undefined) throw new WireSchemaError("a value codec without a jsonSchema: its wire form is unknown");
      return { ...meta.codec.jsonSchema };
    }
    // A Go map declared as a map schema (its values' schema in the wire metadata).
    if (meta.goMap !== undefined) return { type: "object", additionalProperties: this.value(meta.goMap as z.ZodType) };
    const def = defOf(schema);
    switch (def.type) {
      case "object":
        return this.#object(schema, def);
      case "union": {
        if (def.discriminator === undefined) throw new WireSchemaError("a union without a discriminator");
        return { oneOf: (def.options ?? []).map((o) => this.value(o)) };
      }
      case "array": {
        const out: JsonSchema = { type: "array", items: this.value(def.element!) };
        const bag = bagOf(schema);
        if (typeof bag.minimum === "number" && bag.minimum > 0) out.minItems = bag.minimum;
        if (typeof bag.maximum === "number") out.maxItems = bag.maximum;
        return out;
      }
      case "record":
        if (defOf(def.keyType!).type !== "string") throw new WireSchemaError("a map whose keys are not plain strings");
        return { type: "object", additionalProperties: this.value(def.valueType!) };
      case "nullable":
        return { anyOf: [this.value(def.innerType!), { type: "null" }] };
      case "lazy":
        return this.value(def.getter!());
      case "pipe":
        return this.value(def.in!);
      case "string":
      case "number":
      case "int":
      case "boolean":
      case "enum":
      case "literal":
        return leaf(schema);
      default:
        if (WRAPPERS.has(def.type)) return this.value(def.innerType!);
        throw new WireSchemaError(`a ${def.type} schema has no wire form to describe`);
    }
  }

  #object(schema: z.ZodType, def: Def): JsonSchema {
    const fields = Object.entries(def.shape ?? {}).map(([camel, child]) => {
      const options = wireMetaOf(child).field;
      return { camel, child, wire: options?.name ?? toSnake(camel), nullable: options?.nullable ?? false };
    });
    if (wireMetaOf(schema).sorted) fields.sort((a, b) => compareUtf8(a.wire, b.wire));
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const f of fields) {
      const optional = isOptional(f.child);
      let s = this.field(f.child, optional);
      if (f.nullable) s = { anyOf: [s, { type: "null" }] };
      properties[f.wire] = s;
      if (!optional) required.push(f.wire);
    }
    const out: JsonSchema = { type: "object", properties };
    if (required.length > 0) out.required = required;
    const strict = def.catchall !== undefined && defOf(def.catchall).type === "never";
    if (strict) out.additionalProperties = false;
    return out;
  }

  /**
   * An object's field: the reader takes a scalar's zero ("", 0, false) as absent, so an
   * optional field accepts it whatever its rules, and a required one refuses it.
   */
  field(schema: z.ZodType, optional: boolean): JsonSchema {
    const s = this.value(schema);
    if (!this.#goZeros) return s;
    const inner = unwrap(schema);
    const codec = wireMetaOf(inner).codec;
    if (codec) return !optional && codec.wireZero !== undefined ? { ...s, not: { const: codec.wireZero } } : s;
    const zero = zeroOf(defOf(inner).type);
    if (zero === undefined) return s;
    const acceptsZero = inner.safeParse(zero).success;
    if (optional && !acceptsZero) return { anyOf: [s, { const: zero }] };
    if (!optional && acceptsZero) return typeof zero === "string" ? { ...s, minLength: 1 } : { ...s, not: { const: zero } };
    return s;
  }
}

/** A string, number, boolean, enum or literal, with its checks, as zod describes it. */
function leaf(schema: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(schema, { io: "input", unrepresentable: "throw" }) as JsonSchema;
  delete out.$schema;
  return out;
}

/** `schema`'s wire form; named schemas under `$defs`. */
export function wireJsonSchema(schema: z.ZodType, options: WireJsonSchemaOptions = {}): JsonSchema {
  const d = new Describer(options);
  const out = d.value(schema);
  return Object.keys(d.defs).length > 0 ? { ...out, $defs: d.defs } : out;
}

/** The same for several schemas sharing one set of `$defs` (an event and its envelope). */
export function wireJsonSchemas(options: WireJsonSchemaOptions = {}): {
  value(schema: z.ZodType): JsonSchema;
  field(schema: z.ZodType): JsonSchema;
  defs(): Record<string, JsonSchema>;
} {
  const d = new Describer(options);
  return { value: (s) => d.value(s), field: (s) => d.field(s, isOptional(s)), defs: () => d.defs };
}
