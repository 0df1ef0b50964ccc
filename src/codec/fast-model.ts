/**
 * What the generated per-type decoders (`generated/decoders.ts`, written by
 * scripts/generate-codec.ts) stand on: the "not mine" answer, the one walk that numbers a
 * type's schemas the same way for the generator and at run time, and zod's own checks run
 * on a value where the generator does not spell a check out.
 *
 * A generated decoder takes the wire object the fast reader made (`parseOrdinaryJson`:
 * JSON.parse of text proven ordinary, raw values as RawJson, unknown keys IGNORED) and
 * returns exactly what `fromWire` and `validateWith` would make of it (the same keys in the
 * same order, the same values, null-prototype maps, the RawJson read), or NOT_MINE. It
 * never refuses: whatever it cannot prove valid is NOT_MINE, and the codec's reference path
 * (`fromWire`, then zod) decides it and words its error. A differential test holds the two
 * to the same answer (test/unit/fast-decode.property.test.ts).
 */
import type { z } from "zod";
import type { EventTypeDefinition } from "../events/registry.js";
import { wireMetaOf } from "../wire/wire.js";

/** The generated decoders' "not mine": the reference path decides. */
export const NOT_MINE: unique symbol = Symbol("not mine");
export type NotMine = typeof NOT_MINE;

/** A generated type's decoder, made once per definition. */
export type FastDecoder = (wire: Record<string, unknown>) => unknown;
/** What the generated module exports per type: given its numbered schemas and definition, the decoder. */
export type FastDecoderFactory = (nodes: readonly z.ZodType[], def: EventTypeDefinition) => FastDecoder;

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
}

/** zod's definition of a schema (its structure: type, shape, element, wrappers). */
export function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { def: Def }).def;
}

/**
 * Every schema reachable from `root`, each once, in one fixed order (depth first: an
 * object's shape in key order, an array's element, a wrapper's inner schema, a pipe's in and
 * out, a union's options, a Go map's value schema). The generator refers to a schema by its
 * place here, and the generated code finds it at the same place at run time.
 */
export function schemaNodes(root: z.ZodType): z.ZodType[] {
  const out: z.ZodType[] = [];
  const seen = new Set<z.ZodType>();
  const walk = (s: z.ZodType | undefined): void => {
    if (s === undefined || seen.has(s)) return;
    seen.add(s);
    out.push(s);
    const def = defOf(s);
    const goMap = wireMetaOf(s).goMap as z.ZodType | undefined;
    if (goMap !== undefined) walk(goMap);
    if (def.type === "object") for (const child of Object.values(def.shape ?? {})) walk(child);
    walk(def.element);
    walk(def.innerType);
    walk(def.in);
    walk(def.out);
    for (const o of def.options ?? []) walk(o);
  };
  walk(root);
  return out;
}

interface CheckPayload {
  value: unknown;
  issues: unknown[];
}
interface Check {
  _zod: { check(payload: CheckPayload): void | Promise<void> };
}

/**
 * Whether `value`, already the schema's output, passes every check zod would run on it
 * (a refine, a superRefine): zod's own check code, run on a fresh payload each. Only an
 * accepted value matters here, so a check that would not have run (`when`) and reports an
 * issue makes this false, which is "not mine", never a refusal.
 */
export function passesChecks(schema: z.ZodType, value: unknown): boolean {
  const checks = (schema as unknown as { def: { checks?: Check[] } }).def.checks ?? [];
  for (const check of checks) {
    const payload: CheckPayload = { value, issues: [] };
    const r = check._zod.check(payload);
    if (r instanceof Promise || payload.issues.length > 0) return false;
  }
  return true;
}

/** The value codec's `fromWire` of a numbered schema (the generator numbers only schemas with one). */
export function fromWireOf(schema: z.ZodType): (v: unknown) => unknown {
  const codec = wireMetaOf(schema).codec;
  if (codec === undefined) throw new Error("generated decoder: schema has no value codec (regenerate src/codec/generated)");
  return (v) => codec.fromWire(v);
}
