import { RawJson } from "../wire/raw-json.js";
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
 * Freezing is that guarantee only for plain objects (prototype Object.prototype or null)
 * and arrays: a frozen Date still changes with `setTime`, a frozen Map with `set`, a class
 * instance through its methods, and a Uint8Array with elements cannot be frozen at all
 * (Object.freeze throws). An application's own type may validate into such values (a
 * `z.date()`, a `z.instanceof(...)`): an event holding any of them, anywhere, is neither
 * frozen nor remembered, and the encoder validates it as any caller's object. RawJson is
 * the one class taken: it freezes itself and its text is all the writer reads.
 *
 * The definition is remembered with the event: an event made by one registry's definition
 * is written unchecked only by that same definition, never by another registry's type of
 * the same name.
 */
const made = new WeakMap<object, EventTypeDefinition>();

/**
 * Collects into `into` every object and array inside `value` (itself included) when all of
 * them are plain objects, arrays or RawJson values; false, collecting partially, as soon as
 * one is anything else. Nothing is frozen here: an event is frozen whole or not at all.
 */
function collectFreezable(value: unknown, into: object[]): boolean {
  if (typeof value === "function") return false;
  if (typeof value !== "object" || value === null) return true;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto === Array.prototype) {
    into.push(value);
    for (const item of value as unknown[]) if (!collectFreezable(item, into)) return false;
    return true;
  }
  if (proto === Object.prototype || proto === null) {
    into.push(value);
    for (const key of Object.keys(value)) if (!collectFreezable((value as Record<string, unknown>)[key], into)) return false;
    return true;
  }
  return RawJson.is(value);
}

/**
 * Freezes a validated event and remembers it as made by `def`, when it holds only plain
 * objects, arrays, RawJson values and primitives; otherwise leaves it as it is (unfrozen,
 * not remembered: the encoder validates it). Returns it either way.
 */
export function markMade<E>(def: EventTypeDefinition, event: E): E {
  const objects: object[] = [];
  let freezable: boolean;
  try {
    freezable = collectFreezable(event, objects);
  } catch (e) {
    // A cycle (only an application's own pass-through schema can make one) runs out of
    // stack: no event to freeze, and nothing thrown out of a decode or createEvent for it.
    if (e instanceof RangeError) return event;
    throw e;
  }
  if (!freezable || objects.length === 0) return event;
  for (const o of objects) Object.freeze(o);
  made.set(event as object, def);
  return event;
}

/**
 * Remembers as made by `def` an event its maker already froze whole: every object, array and
 * Go map in it frozen, nothing in it but those, RawJson values and primitives (the codec's
 * generated decoders build and freeze each as they go; the differential test checks every
 * level is frozen). Saves `markMade`'s walk.
 */
export function rememberMade<E>(def: EventTypeDefinition, event: E): E {
  made.set(event as object, def);
  return event;
}

/** Whether `event` is one the library made by `def` (and so, frozen, still valid by it). */
export function isMadeBy(event: unknown, def: EventTypeDefinition): boolean {
  return typeof event === "object" && event !== null && made.get(event) === def;
}
