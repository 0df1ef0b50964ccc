import type { EventTypeDefinition } from "./registry.js";

/**
 * Events the library itself made valid: the decoder's results and `createEvent`'s. Each is
 * deep-frozen when it is remembered, so it is still exactly what its definition's
 * validation returned when it is written: the encoder writes it without a second check.
 *
 * Why freezing is the guarantee: every object and array inside a validated event was built
 * by the validation (zod copies objects and arrays, `goMapSchema` builds its maps, RawJson
 * values are frozen by their class), so freezing them touches nothing a caller handed in,
 * and no later assignment, deletion or push can change what the encoder would write (a
 * frozen object refuses them: a TypeError in strict code, a no-op otherwise). A copy
 * (`{ ...event }`) is a new object, never remembered, so it is validated again.
 *
 * The definition is remembered with the event: an event made by one registry's definition
 * is written unchecked only by that same definition, never by another registry's type of
 * the same name.
 */
const made = new WeakMap<object, EventTypeDefinition>();

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (const item of value) deepFreeze(item);
    return;
  }
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}

/** Freezes a validated event and remembers it as made by `def`; returns it. */
export function markMade<E>(def: EventTypeDefinition, event: E): E {
  deepFreeze(event);
  made.set(event as object, def);
  return event;
}

/** Whether `event` is one the library made by `def` (and so, frozen, still valid by it). */
export function isMadeBy(event: unknown, def: EventTypeDefinition): boolean {
  return typeof event === "object" && event !== null && made.get(event) === def;
}
