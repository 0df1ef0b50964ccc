/**
 * Generates src/codec/generated/decoders.ts: per built-in event type, a decoder from the
 * fast reader's wire object to the validated event, written from the model (the catalogue's
 * zod schemas and their wire metadata), so that decode skips `fromWire` and zod's
 * interpreter for the ordinary event.
 *
 *   npx tsx scripts/generate-codec.ts          # writes the file
 *   npx tsx scripts/generate-codec.ts --check  # exits 1 if the file differs
 *
 * test/unit/fast-decode-generated.test.ts runs this generator and checks the committed file
 * is exactly its output: it is never edited by hand.
 *
 * What each decoder does is what `fromWire` (src/wire/wire.ts) and `validateWith`
 * (src/events/validate.ts) do, spelled out per field: wire names, Go's omitted zeros, the
 * `always`/`keepEmpty`/`nullable` options, value codecs (called, never copied), a key Go
 * would fold onto a field, strict objects, Go maps as null-prototype objects, raw values
 * as the RawJson read; then zod's rules for the shapes the model uses (strings, numbers with
 * integer and range checks, booleans, literals, enums, objects in shape order, arrays with
 * length caps, discriminated unions, optional/default/prefault), the catalogue's own leaves
 * (ids, times, base64 bytes, raw JSON) by identity, any other check by zod's own check code
 * (`passesChecks`), the identity profile and the type's cross-field `check`. Wherever a value
 * is not what that path would accept without a word, the decoder answers NOT_MINE and the
 * reference path decides. A schema of a kind not listed makes its whole type always
 * NOT_MINE (listed in the generated file's header). Every object, array and map a decoder
 * builds is frozen as it is built, so the codec only remembers the event (`rememberMade`)
 * instead of walking it again to freeze it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { z } from "zod";
import { builtInTypes } from "../src/events/catalogue.js";
import { bytesSchema } from "../src/events/content.js";
import { timestampSchema } from "../src/events/header.js";
import { uuidSchema } from "../src/events/ids.js";
import type { EventTypeDefinition } from "../src/events/registry.js";
import { defOf, schemaNodes } from "../src/codec/fast-model.js";
import { goFold } from "../src/wire/go-fold.js";
import { isRawJsonSchema } from "../src/wire/raw-json-schema.js";
import { toSnake, wireMetaOf } from "../src/wire/wire.js";

export const DECODERS_PATH = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "codec", "generated", "decoders.ts");

class Unsupported extends Error {}

interface FieldInfo {
  readonly always: boolean;
  readonly nullable: boolean;
  readonly keepEmpty: boolean;
}

type Mapping =
  | { kind: "object"; schema: z.ZodType }
  | { kind: "variant"; schema: z.ZodType }
  | { kind: "array"; element: z.ZodType }
  | { kind: "record"; element: z.ZodType }
  | { kind: "codec"; schema: z.ZodType; raw: boolean }
  | { kind: "value" };

interface CheckDef {
  check: string;
  format?: string;
  value?: unknown;
  inclusive?: boolean;
  minimum?: number;
  maximum?: number;
}

function checksOf(schema: z.ZodType): CheckDef[] {
  const checks = (schema as unknown as { def: { checks?: { _zod: { def: CheckDef } }[] } }).def.checks ?? [];
  return checks.map((c) => c._zod.def);
}

/** One event type's generated code. */
class TypeGen {
  readonly nodes: z.ZodType[];
  readonly functions = new Map<z.ZodType, string>();
  readonly bodies: string[] = [];
  readonly codecs = new Map<number, string>();
  readonly folds: string[] = [];
  private tmp = 0;

  constructor(readonly def: EventTypeDefinition) {
    this.nodes = schemaNodes(def.schema);
  }

  index(schema: z.ZodType): number {
    const i = this.nodes.indexOf(schema);
    if (i < 0) throw new Unsupported("a schema outside the walk");
    return i;
  }

  fresh(prefix: string): string {
    return `${prefix}${this.tmp++}`;
  }

  /** How `fromWire` reads a value of `schema` (wire.ts `compile`, mirrored). */
  mapping(schema: z.ZodType): Mapping {
    const meta = wireMetaOf(schema);
    if (meta.goMap !== undefined) return { kind: "record", element: meta.goMap as z.ZodType };
    if (meta.codec !== undefined) return { kind: "codec", schema, raw: meta.codec.readsAs === "raw" };
    const def = defOf(schema);
    switch (def.type) {
      case "object":
        return { kind: "object", schema };
      case "union": {
        if ((def as { discriminator?: string }).discriminator === undefined) throw new Unsupported("a union without a discriminator");
        return { kind: "variant", schema };
      }
      case "array":
        return { kind: "array", element: def.element! };
      case "optional":
      case "default":
      case "prefault":
        return this.mapping(def.innerType!);
      case "string":
      case "number":
      case "boolean":
      case "literal":
      case "enum":
        return { kind: "value" };
      default:
        throw new Unsupported(`a ${def.type} schema`);
    }
  }

  /** The schema zod validates a present value with: the field's schema less one optional/default/prefault wrapper. */
  wrapper(schema: z.ZodType): { kind: "none" | "optional" | "default" | "prefault"; core: z.ZodType; value?: unknown } {
    const def = defOf(schema);
    if (def.type === "optional") return { kind: "optional", core: this.unwrapped(def.innerType!) };
    if (def.type === "default" || def.type === "prefault") {
      const value = (def as unknown as { defaultValue: unknown }).defaultValue;
      return { kind: def.type, core: this.unwrapped(def.innerType!), value };
    }
    return { kind: "none", core: this.unwrapped(schema) };
  }

  private unwrapped(schema: z.ZodType): z.ZodType {
    const t = defOf(schema).type;
    if (t === "optional" || t === "default" || t === "prefault" || t === "nullable" || t === "readonly" || t === "catch" || t === "nonoptional") {
      throw new Unsupported(`a ${t} inside a wrapper`);
    }
    return schema;
  }

  codecRef(schema: z.ZodType): string {
    const i = this.index(schema);
    let name = this.codecs.get(i);
    if (name === undefined) {
      name = `C${i}`;
      this.codecs.set(i, name);
    }
    return name;
  }

  /**
   * Code that validates the mapped value `c` (never undefined) with the core schema `core`
   * and stores the output in `target`, or returns NOT_MINE.
   */
  validateLeaf(core: z.ZodType, c: string, target: string): string {
    if (core === uuidSchema) return `if (!isCanonicalUuid(${c})) return NOT_MINE;\n${target} = ${c};`;
    if (core === timestampSchema) {
      const t = this.fresh("t");
      return `if (typeof ${c} !== "string") return NOT_MINE;\nconst ${t} = goTimestamp(${c});\nif (${t} === undefined) return NOT_MINE;\n${target} = ${t};`;
    }
    if (core === bytesSchema) {
      const t = this.fresh("t");
      return `if (typeof ${c} !== "string") return NOT_MINE;\nconst ${t} = canonicalBase64(${c});\nif (${t} === undefined) return NOT_MINE;\n${target} = ${t};`;
    }
    if (isRawJsonSchema(core)) return `if (!RawJson.is(${c})) return NOT_MINE;\n${target} = ${c};`;
    const def = defOf(core);
    const checks = checksOf(core);
    let code: string;
    switch (def.type) {
      case "string":
        code = `if (typeof ${c} !== "string") return NOT_MINE;`;
        if (checks.length > 0) code += `\nif (!passesChecks(N[${this.index(core)}]!, ${c})) return NOT_MINE;`;
        break;
      case "boolean":
        if (checks.length > 0) throw new Unsupported("a boolean with checks");
        code = `if (typeof ${c} !== "boolean") return NOT_MINE;`;
        break;
      case "number": {
        const conds = [`typeof ${c} !== "number"`, `!Number.isFinite(${c})`];
        let generic = false;
        for (const ch of checks) {
          if (ch.check === "number_format" && ch.format === "safeint") conds.push(`!Number.isSafeInteger(${c})`);
          else if (ch.check === "greater_than" && typeof ch.value === "number") conds.push(`${c} ${ch.inclusive ? "<" : "<="} ${ch.value}`);
          else if (ch.check === "less_than" && typeof ch.value === "number") conds.push(`${c} ${ch.inclusive ? ">" : ">="} ${ch.value}`);
          else generic = true;
        }
        code = `if (${conds.join(" || ")}) return NOT_MINE;`;
        if (generic) code += `\nif (!passesChecks(N[${this.index(core)}]!, ${c})) return NOT_MINE;`;
        break;
      }
      case "literal": {
        if (checks.length > 0) throw new Unsupported("a literal with checks");
        const values = (def as unknown as { values: unknown[] }).values;
        for (const v of values) if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") throw new Unsupported("a literal that is not a string, number or boolean");
        code = `if (${values.map((v) => `${c} !== ${JSON.stringify(v)}`).join(" && ")}) return NOT_MINE;`;
        break;
      }
      case "enum": {
        if (checks.length > 0) throw new Unsupported("an enum with checks");
        const values = Object.values((def as unknown as { entries: Record<string, unknown> }).entries);
        for (const v of values) if (typeof v !== "string" && typeof v !== "number") throw new Unsupported("an enum value that is not a string or number");
        code = `if (${values.map((v) => `${c} !== ${JSON.stringify(v)}`).join(" && ")}) return NOT_MINE;`;
        break;
      }
      default:
        throw new Unsupported(`a ${def.type} value`);
    }
    return `${code}\n${target} = ${c};`;
  }

  /**
   * Code for a present wire value `x` (not undefined) of a schema: sets `target` to the
   * validated value of its core schema, or (in a field, `field` given) to undefined where
   * `fromWire` reads the value as absent; or returns NOT_MINE.
   */
  present(schema: z.ZodType, x: string, target: string, field: FieldInfo | undefined): string {
    const mapping = this.mapping(schema);
    const { core } = this.wrapper(schema);
    const lines: string[] = [];
    // fromWire: null is refused except where Go writes it (nullable); a nullable raw value reading `null` is absent.
    if (field?.nullable) {
      lines.push(`if (${x} === null${mapping.kind === "codec" && mapping.raw ? ` || (${x} instanceof RawJson && ${x}.text === "null")` : ""}) ${target} = undefined;\nelse {`);
    } else lines.push(`if (${x} === null) return NOT_MINE;\n{`);
    const objectTest = `typeof ${x} !== "object" || Array.isArray(${x}) || ${x} instanceof RawJson`;
    const dropsEmpty = field !== undefined && !field.always && !field.keepEmpty;
    switch (mapping.kind) {
      case "codec": {
        if (mapping.raw) {
          lines.push(`if (!(${x} instanceof RawJson)) return NOT_MINE;`);
          lines.push(this.validateLeaf(core, x, target));
          break;
        }
        const c = this.fresh("c");
        lines.push(`if (${x} instanceof RawJson) return NOT_MINE;`);
        lines.push(`const ${c} = ${this.codecRef(mapping.schema)}(${x});`);
        // A codec's own zero (the nil UUID) is absent in a field; zod then decides an absent element.
        lines.push(`if (${c} === undefined) ${field ? `${target} = undefined;` : "return NOT_MINE;"}\nelse {`);
        lines.push(this.validateLeaf(core, c, target));
        lines.push("}");
        break;
      }
      case "value": {
        if (field) {
          lines.push(`if (${x} === "" || ${x} === 0 || ${x} === false) ${target} = undefined;\nelse {`);
          lines.push(this.validateLeaf(core, x, target));
          lines.push("}");
        } else lines.push(this.validateLeaf(core, x, target));
        break;
      }
      case "object": {
        if (core !== mapping.schema) throw new Unsupported("an object whose validation is not its own schema");
        const fn = this.objectFunction(core);
        const r = this.fresh("r");
        lines.push(`if (${objectTest}) return NOT_MINE;`);
        lines.push(`const ${r} = ${fn}(${x} as Record<string, unknown>);`);
        lines.push(`if (${r} === NOT_MINE) return NOT_MINE;`);
        lines.push(dropsEmpty ? `${target} = EMPTY ? undefined : ${r};` : `${target} = ${r};`);
        break;
      }
      case "variant": {
        if (core !== mapping.schema) throw new Unsupported("a union whose validation is not its own schema");
        lines.push(`if (${objectTest}) return NOT_MINE;`);
        lines.push(this.variantCode(core, x, target));
        break;
      }
      case "array": {
        if (defOf(core).type !== "array") throw new Unsupported("an array whose validation is not an array");
        const a = this.fresh("a");
        const i = this.fresh("i");
        const e = this.fresh("e");
        lines.push(`if (!Array.isArray(${x})) return NOT_MINE;`);
        const body: string[] = [];
        body.push(`const ${a}: unknown[] = new Array(${x}.length);`);
        body.push(`for (let ${i} = 0; ${i} < ${x}.length; ${i}++) {\nconst ${e} = ${x}[${i}] as unknown;\nlet v: unknown;`);
        body.push(this.present(mapping.element, e, "v", undefined));
        body.push(`${a}[${i}] = v;\n}`);
        const conds: string[] = [];
        let generic = false;
        for (const ch of checksOf(core)) {
          if (ch.check === "min_length") conds.push(`${a}.length < ${ch.minimum}`);
          else if (ch.check === "max_length") conds.push(`${a}.length > ${ch.maximum}`);
          else generic = true;
        }
        if (conds.length > 0) body.push(`if (${conds.join(" || ")}) return NOT_MINE;`);
        if (generic) body.push(`if (!passesChecks(N[${this.index(core)}]!, ${a})) return NOT_MINE;`);
        body.push(`${target} = Object.freeze(${a});`);
        if (dropsEmpty) lines.push(`if (${x}.length === 0) ${target} = undefined;\nelse {\n${body.join("\n")}\n}`);
        else lines.push(body.join("\n"));
        break;
      }
      case "record": {
        // goMapSchema: its output is a null-prototype object of each value validated.
        const m = this.fresh("m");
        const k = this.fresh("k");
        const e = this.fresh("e");
        lines.push(`if (${objectTest}) return NOT_MINE;`);
        lines.push(`const ${m} = Object.create(null) as Record<string, unknown>;`);
        lines.push(`for (const ${k} in ${x} as Record<string, unknown>) {\nconst ${e} = (${x} as Record<string, unknown>)[${k}];\nlet v: unknown;`);
        lines.push(this.present(mapping.element, e, "v", undefined));
        lines.push(`${m}[${k}] = v;\n}`);
        lines.push(`${target} = Object.freeze(${m});`);
        break;
      }
    }
    lines.push("}");
    return lines.join("\n");
  }

  variantCode(schema: z.ZodType, x: string, target: string): string {
    const def = defOf(schema) as Def & { discriminator: string; options: z.ZodType[] };
    const camel = def.discriminator;
    const cases: string[] = [];
    let wire: string | undefined;
    for (const option of def.options) {
      if (defOf(option).type !== "object") throw new Unsupported("a union option that is not an object");
      const shape = defOf(option).shape!;
      const disc = shape[camel];
      if (disc === undefined) throw new Unsupported("a union option without its discriminator");
      const w = wireMetaOf(disc).field?.name ?? toSnake(camel);
      if (wire !== undefined && wire !== w) throw new Unsupported("a discriminator under two wire names");
      wire = w;
      const values = (defOf(disc) as unknown as { values?: unknown[] }).values;
      if (defOf(disc).type !== "literal" || !values) throw new Unsupported("a discriminator that is not a literal");
      const fn = this.objectFunction(option);
      for (const v of values) {
        if (typeof v !== "string") throw new Unsupported("a discriminator that is not a string");
        cases.push(`case ${JSON.stringify(v)}: r = ${fn}(o); break;`);
      }
    }
    return `{\nconst o = ${x} as Record<string, unknown>;\nlet r: unknown;\nswitch (o[${JSON.stringify(wire)}]) {\n${cases.join("\n")}\ndefault: return NOT_MINE;\n}\nif (r === NOT_MINE) return NOT_MINE;\n${target} = r;\n}`;
  }

  /** The name of the function that maps and validates one wire object of `schema`. */
  objectFunction(schema: z.ZodType, top = false): string {
    const known = this.functions.get(schema);
    if (known !== undefined) return known;
    const name = `o${this.index(schema)}`;
    this.functions.set(schema, name);
    const def = defOf(schema) as Def & { catchall?: z.ZodType };
    const strict = def.catchall !== undefined && defOf(def.catchall).type === "never";
    if (def.catchall !== undefined && !strict) throw new Unsupported("an object with a catchall");
    const shape = def.shape ?? {};
    const fields = Object.entries(shape).map(([camel, child], j) => {
      const options = wireMetaOf(child).field;
      return {
        camel,
        child,
        wire: options?.name ?? toSnake(camel),
        info: { always: options?.always ?? false, nullable: options?.nullable ?? false, keepEmpty: options?.keepEmpty ?? false },
        v: `m${j}`,
      };
    });
    const seen = new Set<string>();
    for (const f of fields) {
      if (seen.has(f.wire)) throw new Unsupported("two fields under one wire name");
      seen.add(f.wire);
    }
    const foldIndex = this.folds.length;
    const folded = [...new Set([...fields.map((f) => goFold(f.wire)), ...(top ? [goFold("v")] : [])])].sort();
    this.folds.push(`new Set(${JSON.stringify(folded)})`);
    const out: string[] = [];
    out.push(`function ${name}(w: Record<string, unknown>): unknown {`);
    if (fields.length > 0) out.push(`let ${fields.map((f) => `${f.v}: unknown`).join(", ")};`);
    out.push(`for (const k in w) {\nconst x = w[k];\nswitch (k) {`);
    for (const f of fields) {
      out.push(`case ${JSON.stringify(f.wire)}:`);
      out.push(this.present(f.child, "x", f.v, f.info));
      out.push("break;");
    }
    if (top) out.push(`case "v":\nbreak;`);
    out.push(`default:\n${strict ? "return NOT_MINE;" : `if (F${foldIndex}.has(goFold(k))) return NOT_MINE;`}\n}\n}`);
    // fromWire's object, before validation: whether it holds any field (a field's empty object is absent).
    const emptyTest = fields.length > 0 ? fields.map((f) => `${f.v} === undefined`).join(" && ") : "true";
    out.push(`const empty = ${emptyTest};`);
    if (top) out.push(this.identityCode(fields.map((f) => ({ camel: f.camel, v: f.v }))));
    out.push(`const out: Record<string, unknown> = {};`);
    for (const f of fields) out.push(this.absentCode(f.child, f.camel, f.v));
    if (checksOf(schema).length > 0) out.push(`if (!passesChecks(N[${this.index(schema)}]!, out)) return NOT_MINE;`);
    if (top) out.push(`if (def.check(out as never) !== undefined) return NOT_MINE;`);
    out.push(`EMPTY = empty;\nreturn Object.freeze(out);\n}`);
    this.bodies.push(out.join("\n"));
    return name;
  }

  /** zod's object: the field's output in shape order; an absent field by its wrapper (omitted, default, prefault) or NOT_MINE. */
  absentCode(child: z.ZodType, camel: string, v: string): string {
    const w = this.wrapper(child);
    const key = JSON.stringify(camel);
    let absent: string;
    switch (w.kind) {
      case "none":
        absent = "return NOT_MINE;";
        break;
      case "optional":
        absent = "";
        break;
      case "default":
        absent = `out[${key}] = ${literal(w.value)};`;
        break;
      case "prefault": {
        // Only `prefault({})` on an object: `{}` read as the wire object `{}`.
        if (!isEmptyPlain(w.value) || defOf(w.core).type !== "object") throw new Unsupported("a prefault other than {} on an object");
        const fn = this.objectFunction(w.core);
        absent = `{\nconst r = ${fn}({});\nif (r === NOT_MINE) return NOT_MINE;\nout[${key}] = r;\n}`;
        break;
      }
    }
    return `if (${v} !== undefined) out[${key}] = ${v};${absent === "" ? "" : `\nelse ${absent.startsWith("{") ? absent : `{ ${absent} }`}`}`;
  }

  /** validateWith's identity profile (checkIdentity): sessionId set; coordinates required or forbidden; a step needs its turn. */
  identityCode(fields: { camel: string; v: string }[]): string {
    const v = (camel: string): string => {
      const f = fields.find((x) => x.camel === camel);
      if (!f) throw new Unsupported(`no ${camel} in the header`);
      return f.v;
    };
    const conds = [`${v("sessionId")} === undefined`];
    for (const c of ["loopId", "turnId", "stepId"] as const) {
      const presence = this.def.identity[c];
      if (presence === "required") conds.push(`${v(c)} === undefined`);
      if (presence === "forbidden") conds.push(`${v(c)} !== undefined`);
    }
    conds.push(`(${v("stepId")} !== undefined && ${v("turnId")} === undefined)`);
    return `if (${conds.join(" || ")}) return NOT_MINE;`;
  }

  render(): string {
    const top = this.objectFunction(this.def.schema, true);
    const consts = [...this.codecs.entries()].sort((a, b) => a[0] - b[0]).map(([i, n]) => `const ${n} = fromWireOf(N[${i}]!);`);
    const folds = this.folds.map((f, i) => `const F${i} = ${f};`);
    return [
      `export const ${this.def.type}: FastDecoderFactory = (N, def) => {`,
      ...[...consts, ...folds].map((c) => indent(c)),
      "  // Whether the object the last object function read held no field (fromWire's empty object).",
      "  let EMPTY = false;",
      ...this.bodies.map((b) => indent(b)),
      `  return (w) => ${top}(w);`,
      "};",
    ].join("\n");
  }
}

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
}

function isEmptyPlain(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype && Object.keys(v).length === 0;
}

/**
 * A default value as a literal: a fresh copy per decode, as zod's (shallow-cloned) default
 * is, frozen as the decoder freezes everything it builds.
 */
function literal(v: unknown): string {
  const text = JSON.stringify(v);
  if (text === undefined || JSON.stringify(JSON.parse(text)) !== text || !sameJson(JSON.parse(text), v)) throw new Unsupported("a default that is not plain JSON");
  return frozenLiteral(v);
}

function frozenLiteral(v: unknown): string {
  if (Array.isArray(v)) return `Object.freeze([${v.map(frozenLiteral).join(", ")}])`;
  if (typeof v === "object" && v !== null) return `Object.freeze({ ${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${frozenLiteral(x)}`).join(", ")} })`;
  return JSON.stringify(v);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null) return Object.is(a, b);
  if (typeof b !== "object" || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function indent(code: string): string {
  return code
    .split("\n")
    .map((l) => (l === "" ? l : `  ${l}`))
    .join("\n");
}

/** The whole generated module. */
export function renderDecoders(): string {
  const parts: string[] = [];
  const unsupported: string[] = [];
  for (const def of builtInTypes as readonly EventTypeDefinition[]) {
    try {
      parts.push(new TypeGen(def).render());
    } catch (e) {
      if (!(e instanceof Unsupported)) throw e;
      unsupported.push(`${def.type}: ${e.message}`);
      parts.push(`export const ${def.type}: FastDecoderFactory = () => () => NOT_MINE;`);
    }
  }
  const header = [
    "// Generated by scripts/generate-codec.ts from the event model: do not edit by hand.",
    "// test/unit/fast-decode-generated.test.ts regenerates it and checks it is unchanged.",
    "//",
    "// Per built-in type, a factory of the type's fast decoder (src/codec/fast-model.ts says",
    "// what it answers). Types the generator does not handle yet (always NOT_MINE):",
    ...(unsupported.length === 0 ? ["//   none"] : unsupported.map((u) => `//   ${u}`)),
    "/* eslint-disable */",
    'import { canonicalBase64 } from "../../events/bytes.js";',
    'import { goTimestamp } from "../../events/header.js";',
    'import { isCanonicalUuid } from "../../events/ids.js";',
    'import { goFold } from "../../wire/go-fold.js";',
    'import { RawJson } from "../../wire/raw-json.js";',
    'import { type FastDecoderFactory, fromWireOf, NOT_MINE, passesChecks } from "../fast-model.js";',
    "",
    "// Unused in some generated bodies; referenced here so the module always type-checks.",
    "void [canonicalBase64, goTimestamp, isCanonicalUuid, goFold, RawJson, fromWireOf, passesChecks];",
    "",
  ];
  return `${header.join("\n")}\n${parts.join("\n\n")}\n`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = renderDecoders();
  if (process.argv.includes("--check")) {
    const current = readFileSync(DECODERS_PATH, "utf8");
    if (current !== text) {
      console.error(`${DECODERS_PATH} is not the generator's output: run npx tsx scripts/generate-codec.ts`);
      process.exit(1);
    }
  } else {
    writeFileSync(DECODERS_PATH, text);
    console.log(`wrote ${DECODERS_PATH}`);
  }
}
