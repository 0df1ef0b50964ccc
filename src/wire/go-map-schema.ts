/**
 * The schema of a Go `map[string]X` field: an object whose every own key is a map key,
 * read and written as encoding/json reads and writes the map.
 *
 * Not zod's `z.record`: zod drops a `__proto__` key (it builds its output with `=`, which
 * would set the prototype), so a Go map holding that key, which Go reads and writes like
 * any other, would lose it between the wire and the event. Here the value is a
 * null-prototype object: every key, `__proto__`, `constructor`, `toString`, `""` or
 * `"01"` included, is an own data property and nothing else, so no key can reach
 * Object.prototype or hide behind it. The key order of the object does not matter: the
 * writer sorts a map's keys in Go's order (UTF-8 bytes) whatever JavaScript's own order
 * (which puts integer-like keys such as `"1"` first).
 */
import { z } from "zod";
import { asGoMap } from "./wire.js";

/** A plain object (Object.prototype or none): what a map may be given as. */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === null || proto === Object.prototype;
}

/**
 * A Go map of string keys to values of `value`: each value validated by `value`, the
 * result a null-prototype object holding every key given.
 */
export function goMapSchema<V extends z.ZodType>(value: V): z.ZodType<Record<string, z.output<V>>, Record<string, z.input<V>>> {
  const schema = z.unknown().transform((input, ctx): Record<string, z.output<V>> => {
    if (!isPlainRecord(input)) {
      ctx.addIssue({ code: "invalid_type", expected: "record", input, message: "a Go map is a plain object of its keys" });
      return z.NEVER;
    }
    const out = Object.create(null) as Record<string, z.output<V>>;
    // Own enumerable string keys: an own `__proto__` (JSON.parse, the reader, spread make
    // one) is a key like any other; symbols are no map key and JSON never carries one.
    for (const key of Object.keys(input)) {
      const result = value.safeParse(input[key]);
      if (!result.success) {
        for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: [key, ...issue.path] });
        continue;
      }
      // No setter on a null-prototype object: `__proto__` is stored as an own property.
      out[key] = result.data;
    }
    return out;
  });
  return asGoMap(schema, value) as unknown as z.ZodType<Record<string, z.output<V>>, Record<string, z.input<V>>>;
}
