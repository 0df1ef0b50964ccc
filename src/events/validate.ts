import { z } from "zod";
import { EventValidationError } from "../errors.js";
import { defaultRegistry, type JetloopEvent } from "./catalogue.js";
import { COORDINATES } from "./header.js";
import { isNilUuid } from "./ids.js";
import type { EventRegistry, EventTypeDefinition } from "./registry.js";

/** A result without a throw: the value, or the error that would have been thrown. */
export type SafeResult<T, E> = { success: true; data: T } | { success: false; error: E };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const absent = (v: unknown) => v === undefined || isNilUuid(v);

function issueToError(type: string, issue: z.core.$ZodIssue): EventValidationError {
  const field = issue.path.map(String).join(".") || "event";
  // A missing enum or literal is an invalid_value, not an invalid_type: both are "must be set".
  const missing = (issue.code === "invalid_type" || issue.code === "invalid_value") && (issue as { input?: unknown }).input === undefined;
  return new EventValidationError(type, field, missing ? "must be set" : "is invalid", issue.message);
}

/**
 * Finds the definition of `input.type` and checks the identity profile. Exposed to the
 * codec so decode and validate share one path.
 */
export function definitionFor(input: unknown, registry: EventRegistry<unknown>): EventTypeDefinition {
  if (!isPlainObject(input)) throw new EventValidationError("", "event", "is invalid", "an event is an object");
  const type = input.type;
  if (type === undefined || type === "") throw new EventValidationError("", "type", "must be set");
  if (typeof type !== "string") throw new EventValidationError("", "type", "is invalid", "must be a string");
  const def = registry.get(type);
  if (!def) throw new EventValidationError(type, "type", "is not a known event type");
  return def;
}

function checkIdentity(def: EventTypeDefinition, input: Record<string, unknown>): void {
  if (absent(input.sessionId)) throw new EventValidationError(def.type, "sessionId", "must be set");
  for (const c of COORDINATES) {
    const presence = def.identity[c];
    if (presence === "required" && absent(input[c])) throw new EventValidationError(def.type, c, "must be set");
    if (presence === "forbidden" && !absent(input[c])) throw new EventValidationError(def.type, c, "must be zero");
  }
  if (!absent(input.stepId) && absent(input.turnId)) {
    throw new EventValidationError(def.type, "turnId", "must be set", "a step belongs to a turn");
  }
}

const compiled = new WeakMap<z.ZodType, z.ZodType>();

/**
 * zod's ahead-of-time compiled clone of a schema (`z.compile`): the same checks and the
 * same result, from generated code; a schema the compiler cannot model comes back as it
 * is. Compiled once per schema, on first use.
 */
function compiledSchema(schema: z.ZodType): z.ZodType {
  let c = compiled.get(schema);
  if (c === undefined) {
    c = z.compile(schema);
    compiled.set(schema, c);
  }
  return c;
}

/**
 * Validates with a known definition; returns a normalized copy (defaults filled in).
 * `strict` refuses keys the type does not define (an event handed to `publish`), which
 * would otherwise be dropped without a word.
 */
export function validateWith<E>(def: EventTypeDefinition, input: Record<string, unknown>, options?: { strict?: boolean }): E {
  if (options?.strict) {
    for (const key in input) {
      // Own keys of the shape only: `constructor` or `__proto__` is in every object.
      if (!Object.hasOwn(def.schema.shape, key)) throw new EventValidationError(def.type, key, "is invalid", `not a field of ${def.type}`);
    }
  }
  checkIdentity(def, input);
  let candidate = input;
  for (const c of COORDINATES) {
    if (isNilUuid(input[c])) {
      candidate = { ...input };
      for (const k of COORDINATES) if (isNilUuid(candidate[k])) delete candidate[k];
      break;
    }
  }
  // The hot path (every publish, every delivery) parses with zod's compiled form of the
  // schema and no parse options: `reportInput` alone makes a parse about twice as slow.
  // Only a rejection is parsed again, with the input on the issues, to word the error.
  const fast = compiledSchema(def.schema).safeParse(candidate);
  let data: unknown;
  if (fast.success) {
    data = fast.data;
  } else {
    const result = def.schema.safeParse(candidate, { reportInput: true });
    if (!result.success) throw issueToError(def.type, result.error.issues[0]!);
    data = result.data;
  }
  const violation = def.check(data as z.output<typeof def.schema>);
  if (violation) throw new EventValidationError(def.type, violation.field, violation.rule, violation.detail);
  return data as E;
}

/**
 * Checks an event's identity profile, visibility and body, and returns it normalized
 * (defaults such as `visibility: "public"` filled in). Throws EventValidationError naming
 * the event type, the field and the rule.
 */
export function validateEvent<E = JetloopEvent>(
  input: unknown,
  registry: EventRegistry<E> = defaultRegistry,
): E {
  const def = definitionFor(input, registry);
  return validateWith<E>(def, input as Record<string, unknown>, { strict: true });
}

/** `validateEvent` as a result value, in the manner of zod's `safeParse`. */
export function safeValidateEvent<E = JetloopEvent>(
  input: unknown,
  registry?: EventRegistry<E>,
): SafeResult<E, EventValidationError> {
  try {
    return { success: true, data: validateEvent(input, registry) };
  } catch (e) {
    if (e instanceof EventValidationError) return { success: false, error: e };
    throw e;
  }
}
