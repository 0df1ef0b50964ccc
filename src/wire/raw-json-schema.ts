/**
 * The schema of a json.RawMessage field: a RawJson, or any JSON value, which is written
 * once into one (how `createEvent` and `validateEvent` take a tool's input as an object).
 */
import { z } from "zod";
import { RawJson } from "./raw-json.js";
import { StrictJsonError } from "./strict-json.js";
import { withValueCodec } from "./wire.js";

export function rawJsonSchema() {
  return withValueCodec(
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
}
