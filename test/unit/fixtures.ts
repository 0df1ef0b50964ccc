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
