import type { z } from "zod";
import { type BuiltInDefinition, defaultRegistry, type EventType, type JetloopEvent } from "./catalogue.js";
import { newId } from "./ids.js";
import type { EventInputOf, EventOf, EventTypeDefinition } from "./registry.js";
import { capText, limits } from "./text.js";
import { markMade } from "./made.js";
import { validateWith } from "./validate.js";
import { EventValidationError } from "../errors.js";

/** Presentation fields capped at construction, so a preview never fails validation. */
const CAPPED: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  ToolCallStarted: { summary: limits.summary },
  ToolCallCompleted: { resultPreview: limits.resultPreview },
};

/** The fields createEvent stamps itself. */
export type Stamped = "type" | "eventId" | "createdAt";
/** An event's fields as createEvent takes them: the type is given apart, the id and the time may be left out. */
export type Fields<I> = Omit<I, Stamped> & Partial<Pick<I, Extract<keyof I, "eventId" | "createdAt">>>;
/** Any event type definition. */
export type AnyDef = EventTypeDefinition<string, z.ZodRawShape>;

/**
 * Builds and validates an event: stamps a time-ordered event id and the creation time
 * (unless given), caps display text on a code-point boundary, drops empty optional
 * strings. Throws EventValidationError like `validateEvent`.
 *
 * The event returned is deep-frozen (its objects, arrays and Go maps) and remembered, so
 * `encodeEvent` and `publish` write it without validating it again; copy it to edit it. An
 * event of a custom type holding anything else (a Date, a Map, a Uint8Array, a class
 * instance) is returned unfrozen, and the encoder validates it.
 *
 * `createEvent("ToolCallStarted", { sessionId, loopId, turnId, stepId, toolExecutionId, toolName, summary })`
 */
// A built-in type's event is its interface (catalogue.ts): the schema's output with the
// coordinates its identity profile rules, which validateWith enforces.
export function createEvent<T extends EventType>(type: T, fields: Fields<EventInputOf<BuiltInDefinition<T>>>): Extract<JetloopEvent, { type: T }>;
/** The same for an application's own type: `createEvent(MyEventType, fields)`. */
export function createEvent<D extends AnyDef>(definition: D, fields: Fields<EventInputOf<D>>): EventOf<D>;
export function createEvent(typeOrDef: string | AnyDef, fields: Record<string, unknown>): unknown {
  const def = typeof typeOrDef === "string" ? defaultRegistry.get(typeOrDef) : typeOrDef;
  if (!def) throw new EventValidationError(typeof typeOrDef === "string" ? typeOrDef : typeOrDef.type, "type", "is not a known event type");
  // `??`, not a spread default: `{ eventId: undefined }` still gets a fresh id.
  const event: Record<string, unknown> = {
    ...fields,
    eventId: fields.eventId ?? newId(),
    createdAt: fields.createdAt ?? new Date().toISOString(),
    type: def.type,
  };
  for (const [field, max] of Object.entries(CAPPED[def.type] ?? {})) {
    const value = event[field];
    if (value === "") delete event[field];
    else if (typeof value === "string") event[field] = capText(value, max);
  }
  return markMade(def, validateWith(def, event));
}
