import { z } from "zod";
import { toSnake } from "../wire/wire.js";
import { RegistryError } from "../errors.js";
import { type Coordinate, headerShape, RESERVED_KEYS } from "./header.js";

/** An event family name: lowercase; also a subject token (subjects/ builds on it). */
export const FAMILY = /^[a-z][a-z0-9_]{0,31}$/;
/** An event type name: PascalCase; also a subject token. */
export const TYPE = /^[A-Z][A-Za-z0-9]{0,63}$/;

/** Enduring events are journaled and authoritative; ephemeral ones are previews. */
export type EventClass = "enduring" | "ephemeral";
/** Session-scoped events belong to the session as a whole and pass every loop filter. */
export type EventScope = "session" | "loop";
/** Whether an event type requires a coordinate, forbids it, or leaves it open. */
export type Presence = "required" | "forbidden" | "optional";
/** Which coordinates an event type must carry and which must be zero. */
export type IdentityProfile = Readonly<Record<Coordinate, Presence>>;

/** A broken rule of an event: the field and the rule (EventValidationError carries it). */
export interface Violation {
  field: string;
  rule: "must be set" | "must be zero" | "is invalid";
  detail?: string;
}
/** Cross-field rule of a type; returns the offending field and rule, or nothing. */
export type EventCheck<E> = (event: E) => Violation | undefined;

/** The zod shape of the header (an event type's schema is it, its type and its body). */
export type HeaderShape = typeof headerShape;
/** The zod shape of an event type: the header, its `type` literal and its body. */
export type EventShape<T extends string, B extends z.ZodRawShape> = HeaderShape & { type: z.ZodLiteral<T> } & B;
/** The zod schema of an event type (`definition.schema`). */
export type EventSchema<T extends string, B extends z.ZodRawShape> = z.ZodObject<EventShape<T, B>>;

/** What `defineEventType` takes: an event type's name, family, class, scope, identity and body. */
export interface EventTypeSpec<T extends string, B extends z.ZodRawShape> {
  /** The wire discriminator and the last subject token: `^[A-Z][A-Za-z0-9]*$`. */
  readonly type: T;
  /** Groups types in subjects and filters: `^[a-z][a-z0-9_]*$`. */
  readonly family: string;
  readonly class: EventClass;
  readonly scope: EventScope;
  /** For loop-scoped types; session-scoped types forbid every coordinate. */
  readonly identity?: Partial<IdentityProfile>;
  /** An enduring event that ends its turn. */
  readonly endsTurn?: boolean;
  /** The body fields, camelCase, as a zod shape. */
  readonly body: B;
  readonly check?: EventCheck<z.output<EventSchema<T, B>>>;
}

/** An event type as a registry holds it (`defineEventType`'s result; the built-in ones are exported by name). */
export interface EventTypeDefinition<T extends string = string, B extends z.ZodRawShape = z.ZodRawShape> {
  readonly type: T;
  readonly family: string;
  readonly class: EventClass;
  readonly scope: EventScope;
  readonly identity: IdentityProfile;
  readonly endsTurn: boolean;
  readonly schema: EventSchema<T, B>;
  /** Method syntax on purpose: definitions of every type fit one registry. */
  check(event: z.output<EventSchema<T, B>>): Violation | undefined;
  /** Set on the catalogue's own types, which an application cannot replace. */
  readonly builtIn: boolean;
}

/** The event an event type definition describes. */
export type EventOf<D> = D extends EventTypeDefinition<infer T, infer B> ? z.output<EventSchema<T, B>> : never;
/** What a caller passes to build that event (defaults may be left out). */
export type EventInputOf<D> = D extends EventTypeDefinition<infer T, infer B> ? z.input<EventSchema<T, B>> : never;


const SESSION_PROFILE: IdentityProfile = { loopId: "forbidden", turnId: "forbidden", stepId: "forbidden" };

/** Defines an application's own event type, checked like the built-in ones: `defaultRegistry.with(defineEventType({...}))`. Throws RegistryError on a bad name or a body field the header reserves. */
export function defineEventType<const T extends string, B extends z.ZodRawShape>(
  spec: EventTypeSpec<T, B>,
  builtIn = false,
): EventTypeDefinition<T, B> {
  if (!TYPE.test(spec.type)) throw new RegistryError(`event type name ${JSON.stringify(spec.type)} must match ${TYPE}`);
  if (!FAMILY.test(spec.family)) throw new RegistryError(`${spec.type}: family ${JSON.stringify(spec.family)} must match ${FAMILY}`);
  // Checked on wire names too: a body field `session_id` would otherwise overwrite the
  // header's session_id on the wire, and `fooBar` beside `foo_bar` would share one key.
  const reservedWire = new Set([...RESERVED_KEYS].map(toSnake));
  const bodyWire = new Set<string>();
  for (const key of Object.keys(spec.body)) {
    const wire = toSnake(key);
    if (RESERVED_KEYS.has(key) || reservedWire.has(wire)) {
      throw new RegistryError(`${spec.type}: body field ${key} is reserved for the header`);
    }
    if (bodyWire.has(wire)) throw new RegistryError(`${spec.type}: body field ${key} shares the wire name ${wire} with another field`);
    bodyWire.add(wire);
  }
  if (spec.endsTurn && spec.class !== "enduring") throw new RegistryError(`${spec.type}: a terminal event must be enduring`);
  const identity: IdentityProfile =
    spec.scope === "session"
      ? SESSION_PROFILE
      : { loopId: "required", turnId: "optional", stepId: "optional", ...spec.identity };
  if (spec.scope === "session" && spec.identity) throw new RegistryError(`${spec.type}: session-scoped types have a fixed identity profile`);
  const schema = z.object({ ...headerShape, type: z.literal(spec.type), ...spec.body }) as EventSchema<T, B>;
  return {
    type: spec.type,
    family: spec.family,
    class: spec.class,
    scope: spec.scope,
    identity,
    endsTurn: spec.endsTurn ?? false,
    schema,
    check: spec.check ?? (() => undefined),
    builtIn,
  };
}

/**
 * The catalogue of event types one bus understands. Immutable: `with` returns a new
 * registry, so a registry handed to a bus never changes under it.
 */
export class EventRegistry<E = { type: string }> {
  readonly #types: ReadonlyMap<string, EventTypeDefinition>;

  constructor(definitions: Iterable<EventTypeDefinition> = []) {
    const types = new Map<string, EventTypeDefinition>();
    for (const d of definitions) {
      if (types.has(d.type)) throw new RegistryError(`event type ${d.type} is defined twice`);
      types.set(d.type, d);
    }
    this.#types = types;
  }

  /** A registry that also knows `definition`. Built-in types cannot be replaced. */
  with<D extends EventTypeDefinition>(definition: D): EventRegistry<E | EventOf<D>> {
    const existing = this.#types.get(definition.type);
    if (existing) {
      throw new RegistryError(
        existing.builtIn
          ? `event type ${definition.type} is built in and cannot be replaced`
          : `event type ${definition.type} is already registered`,
      );
    }
    return new EventRegistry<E | EventOf<D>>([...this.#types.values(), definition]);
  }

  /** The definition of an event type, or undefined when the registry does not hold it. */
  get(type: string): EventTypeDefinition | undefined {
    return this.#types.get(type);
  }

  /** Whether the registry holds an event type. */
  has(type: string): boolean {
    return this.#types.has(type);
  }

  /** Every event type's definition, in the order registered. */
  types(): IterableIterator<EventTypeDefinition> {
    return this.#types.values();
  }

  /** Every family the registry's types belong to (a subject token: `tool`, `gate`, …). */
  families(): Set<string> {
    return new Set([...this.#types.values()].map((d) => d.family));
  }
}
