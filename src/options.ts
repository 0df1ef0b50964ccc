/**
 * The one options path: every entry point (connect, subscribe, replay, provision, the
 * gateway, …) declares a strict zod shape with its defaults and parses it here. The first
 * problem is an OptionsError naming the option's path; an unknown key is named by its own
 * path, so `{ durabel: "billing" }` is refused, never read as another kind of call.
 */
import { z } from "zod";
import { OptionsError } from "./errors.js";

/** Options parsed by `shape` (strict, with its defaults); throws OptionsError naming the option. */
export function parseOptions<S extends z.ZodType>(shape: S, options: unknown): z.output<S> {
  const r = shape.safeParse(options === undefined ? {} : options);
  if (r.success) return r.data;
  throw optionsError(r.error.issues);
}

/**
 * The OptionsError for zod's issues: an unknown key first, by its own path (a misspelt
 * key is likelier the cause than the real one it leaves missing), else the first issue.
 */
export function optionsError(issues: readonly z.core.$ZodIssue[], at: readonly PropertyKey[] = []): OptionsError {
  const unknown = unknownKey(issues, at);
  if (unknown !== undefined) return new OptionsError(unknown, "is not an option");
  const issue = issues[0]!;
  return new OptionsError([...at, ...issue.path].map(String).join(".") || "options", issue.message);
}

/** The dotted path of an unknown key among the issues, also inside a union's branches. */
function unknownKey(issues: readonly z.core.$ZodIssue[], at: readonly PropertyKey[]): string | undefined {
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") return [...at, ...issue.path, issue.keys[0]!].map(String).join(".");
  }
  for (const issue of issues) {
    if (issue.code !== "invalid_union") continue;
    for (const branch of issue.errors) {
      const key = unknownKey(branch, [...at, ...issue.path]);
      if (key !== undefined) return key;
    }
  }
  return undefined;
}

/**
 * Options parsed by the strict object `shape` and split by the shapes their keys belong to
 * (a key of none goes to the last part). Split from zod's output, never from the given
 * object: a key zod read (inherited, a getter) must not be checked and then dropped.
 */
export function parseSplit<S extends z.ZodObject>(shape: S, options: unknown, ...parts: readonly z.ZodObject[]): Record<string, unknown>[] {
  const data = parseOptions(shape, options) as Record<string, unknown>;
  const out: Record<string, unknown>[] = [...parts.map(() => ({})), {}];
  for (const [k, v] of Object.entries(data)) {
    const i = parts.findIndex((p) => Object.hasOwn(p.shape, k));
    out[i === -1 ? parts.length : i]![k] = v;
  }
  return out;
}

/**
 * True for options that are surely none: undefined, or a plain object with no keys at all.
 * Anything else goes through the parser (a class instance may carry getters; null or a
 * number is refused there), so a shortcut never reads options differently from it.
 */
export function noOptions(options: unknown): boolean {
  if (options === undefined) return true;
  if (typeof options !== "object" || options === null) return false;
  const proto = Object.getPrototypeOf(options) as unknown;
  return (proto === Object.prototype || proto === null) && Reflect.ownKeys(options).length === 0;
}

/** A function-valued option (a callback, a hook): zod does not describe its signature. */
export function functionOption<F extends (...args: never[]) => unknown>() {
  return z.custom<F>((v) => typeof v === "function", "must be a function");
}

/** An object-valued option checked by class (a logger, a registry), passed through as given. */
export function instanceOption<T>(check: (v: unknown) => v is T, message: string) {
  return z.custom<T>(check, message);
}
