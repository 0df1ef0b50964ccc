/**
 * The schema of a json.RawMessage field: a RawJson, or any JSON value, which is written
 * once into one (how `createEvent` and `validateEvent` take a tool's input as an object).
 */
import { z } from "zod";
import { RawJson } from "./raw-json.js";
import { StrictJsonError } from "./strict-json.js";
import { withValueCodec } from "./wire.js";

/** Every schema `rawJsonSchema` made: the codec generator recognizes them (their output is the RawJson read). */
const rawJsonSchemas = new WeakSet<z.ZodType>();

/** Whether `schema` is one `rawJsonSchema` made (not a clone of one). */
export function isRawJsonSchema(schema: z.ZodType): boolean {
  return rawJsonSchemas.has(schema);
}

export function rawJsonSchema() {
  const schema = withValueCodec(
    z.unknown().transform((v, ctx): RawJson => {
      try {
        return RawJson.of(v);
      } catch (e) {
        if (!(e instanceof StrictJsonError)) throw e;
        ctx.addIssue({ code: "custom", message: e.message, input: v });
        return z.NEVER;
      }
    }),
    { readsAs: "raw", toWire: (v) => v, fromWire: (v) => v, jsonSchema: { description: "any JSON value, kept as written (a Go json.RawMessage)" } },
  );
  rawJsonSchemas.add(schema);
  return schema;
}
