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
  throw optionsError(r.error.issues[0]!);
}

/** The OptionsError for a zod issue: the option's dotted path, an unknown key by its own path. */
export function optionsError(issue: z.core.$ZodIssue): OptionsError {
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    return new OptionsError([...issue.path, key].join("."), "is not an option");
  }
  return new OptionsError(issue.path.join(".") || "options", issue.message);
}

/** A function-valued option (a callback, a hook): zod does not describe its signature. */
export function functionOption<F extends (...args: never[]) => unknown>() {
  return z.custom<F>((v) => typeof v === "function", "must be a function");
}

/** An object-valued option checked by class (a logger, a registry), passed through as given. */
export function instanceOption<T>(check: (v: unknown) => v is T, message: string) {
  return z.custom<T>(check, message);
}
