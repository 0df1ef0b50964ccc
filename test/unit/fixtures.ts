/** The unit tests' fixtures: the shared sample data (test/fixtures/events.ts) and the assertions on it. */
import { expect } from "vitest";
import { EventValidationError, type ValidationRule } from "../../src/index.js";

export * from "../fixtures/events.js";

/** Runs `fn`, expecting an EventValidationError with exactly these properties. */
export function expectValidationError(
  fn: () => unknown,
  expected: { eventType: string; field: string; rule: ValidationRule },
): EventValidationError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, `expected ${expected.field} ${expected.rule}`).toBeInstanceOf(EventValidationError);
  const err = thrown as EventValidationError;
  expect({ code: err.code, name: err.name, eventType: err.eventType, field: err.field, rule: err.rule }).toEqual({
    code: expected.rule === "is not a known event type" ? "EVENT_TYPE_UNKNOWN" : "EVENT_INVALID",
    name: "EventValidationError",
    ...expected,
  });
  return err;
}

/** Runs `fn` and returns what it threw (failing the test if it did not throw). */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  expect.fail("expected a throw");
}

/**
 * A mutable deep copy of an event the library made (decoded events and createEvent's are
 * frozen): plain objects and arrays copied with their prototype (a Go map's null prototype
 * kept), frozen class instances (RawJson) shared. Tests that edit a decoded event in place
 * edit this copy, which the encoder validates as any caller's object.
 */
export function thawed<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => thawed(v)) as T;
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== null && proto !== Object.prototype) return value;
  const out = Object.create(proto) as Record<string, unknown>;
  for (const key of Object.keys(value)) out[key] = thawed((value as Record<string, unknown>)[key]);
  return out as T;
}
