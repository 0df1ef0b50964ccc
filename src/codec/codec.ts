/**
 * The journal codec: one JSON object per event, byte for byte as the Go runtime writes
 * it (CONFORMANCE.md at the repository's root says how that is proven, and where jetloop
 * is stricter than the runtime's reader).
 * `unmarshalEvent` is the untrusted boundary; nothing leaves it unvalidated.
 */
import { z } from "zod";
import {
  EventDecodeError,
  EventEncodeError,
  EventNotPersistableError,
  EventValidationError,
} from "../errors.js";
import { builtInTypes, defaultRegistry, type JetloopEvent } from "../events/catalogue.js";
import type { EventRegistry, EventTypeDefinition } from "../events/registry.js";
import { isMadeBy, markMade, rememberMade } from "../events/made.js";
import { definitionFor, type SafeResult, validateWith } from "../events/validate.js";
import { goFold } from "../wire/go-fold.js";
import { parseOrdinaryJson } from "../wire/fast-json.js";
import { encodePooled } from "../wire/pooled-utf8.js";
import { isWellFormed, type JsonGuide, MAX_DEPTH, parseStrictJson, scanJson, StrictJsonError } from "../wire/strict-json.js";
import { type FastDecoder, type FastDecoderFactory, NOT_MINE, schemaNodes } from "./fast-model.js";
import * as generatedDecoders from "./generated/decoders.js";
import { fromWire, guideFor, mergeGuides, sortedKeys, takeDeepestRaw, toWireJson, UnwritableJsonError, WireKeyError } from "../wire/wire.js";

/** The wire schema version this codec writes; it reads 0 and 1 (and an absent `v`) as 1. */
export const WIRE_VERSION = 1;

/**
 * The default byte cap of one encoded event: nats-server's default max_payload, so
 * every event the codec accepts can be published. The events stream's max_msg_size
 * uses the same figure. (The Go runtime caps at 16 MiB; a bigger cap here needs a
 * server and stream that take bigger messages.)
 */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/** The codec's options: the event catalogue to read and write with, and the byte cap. */
export interface CodecOptions<E = JetloopEvent> {
  /** The catalogue to encode or decode with. Default: the built-in types. */
  registry?: EventRegistry<E>;
  /** Refuse encodings larger than this many bytes. Default: DEFAULT_MAX_EVENT_BYTES. */
  maxBytes?: number;
}

// ignoreBOM keeps a leading BOM in the text, so JSON.parse refuses it as Go does (and as
// a string input with a BOM is refused); the default would strip it silently.
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

function registryOf<E>(options?: CodecOptions<E>): EventRegistry<E> {
  return options?.registry ?? (defaultRegistry);
}

/** The validated event and its encoding: publishing needs both from one validation. */
export interface Encoded<E> {
  readonly event: E;
  readonly bytes: Uint8Array;
  readonly definition: EventTypeDefinition;
}

/**
 * Validates and encodes an event of either class. The journal uses `marshalEvent`; the
 * live channel and the publisher use this directly.
 */
export function encodeEvent<E = JetloopEvent>(event: E, options?: CodecOptions<E>): Uint8Array {
  return encodeValidated(event, options).bytes;
}

const wireSchemas = new WeakMap<EventTypeDefinition, z.ZodType>();
const ENVELOPE = { v: WIRE_VERSION };

/**
 * An event's wire form: its fields and the envelope's `v`, every key in sorted order, as
 * the runtime writes the envelope (a Go map).
 */
function wireSchemaOf(def: EventTypeDefinition): z.ZodType {
  let schema = wireSchemas.get(def);
  if (schema === undefined) {
    schema = sortedKeys(z.object({ ...def.schema.shape, v: z.number().optional() }));
    wireSchemas.set(def, schema);
  }
  return schema;
}

/** `encodeEvent`, also returning the normalized event and its type definition. */
export function encodeValidated<E = JetloopEvent>(event: E, options?: CodecOptions<E> & { pooled?: boolean }): Encoded<E> {
  const def = definitionFor(event, registryOf(options));
  let valid: E;
  try {
    // An event the library made by this definition (decoded, or from createEvent) is
    // frozen and already what validation returns: it is written without a second check.
    valid = isMadeBy(event, def) ? event : validateWith<E>(def, event as Record<string, unknown>, { strict: true });
  } catch (e) {
    if (e instanceof RangeError) throw stackTooDeep(def.type, e);
    // What the runtime's MarshalEvent reports as an EventEncodeError: the typed request
    // codec rejected the request.
    if (e instanceof EventValidationError && def.type === "PermissionRequested" && e.field.startsWith("request")) {
      throw new EventEncodeError(def.type, "request_rejected", `the request codec rejected the request: ${e.field} ${e.detail ?? e.rule}`, { cause: e });
    }
    throw e;
  }
  let json: string;
  takeDeepestRaw();
  try {
    json = toWireJson(wireSchemaOf(def), valid, ENVELOPE);
  } catch (e) {
    if (e instanceof UnwritableJsonError) throw new EventEncodeError(def.type, "unwritable", e.message, { cause: e });
    if (e instanceof RangeError) throw stackTooDeep(def.type, e);
    throw e;
  }
  checkReadable(def.type, json, takeDeepestRaw());
  const bytes = options?.pooled ? encodePooled(json) : utf8Encoder.encode(json);
  const max = options?.maxBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (bytes.length > max) {
    throw new EventEncodeError(def.type, "too_large", `encodes to ${bytes.length} bytes, more than the cap of ${max}`);
  }
  return { event: valid, bytes, definition: def };
}

/**
 * Encodes an enduring event for the journal, byte for byte as the Go runtime's
 * MarshalEvent writes it. Fails closed: an ephemeral event is EventNotPersistableError, an
 * unknown type or invalid event EventValidationError, a request the typed request codec
 * rejects EventEncodeError.
 */
export function marshalEvent<E = JetloopEvent>(event: E, options?: CodecOptions<E>): Uint8Array {
  const def = definitionFor(event, registryOf(options));
  if (def.class !== "enduring") throw new EventNotPersistableError(def.type);
  return encodeEvent(event, options);
}

/**
 * Content blocks nest through tool results, and the schema walks them recursively: a stack
 * that runs out (from about 600 nested tool results) is a nesting too deep, as the reader
 * reports it, never a RangeError out of publish.
 */
function stackTooDeep(type: string, cause: RangeError): EventEncodeError {
  return new EventEncodeError(type, "too_deep", "nests too deep to write", { cause });
}

/**
 * Writer = reader: the reader's depth limit holds for what is written. Only raw JSON can
 * nest deeply (the schema's own objects nest a few levels, tool results a few more), so
 * the written text is checked only when a raw value in it comes near the limit.
 */
function checkReadable(type: string, json: string, deepestRaw: number): void {
  if (deepestRaw + 64 < MAX_DEPTH) return;
  try {
    scanJson(json, 0, { depthBase: 0, exactNumbers: false, compact: false });
  } catch (e) {
    if (e instanceof StrictJsonError && e.reason === "too_deep") {
      throw new EventEncodeError(type, "too_deep", `nests deeper than ${MAX_DEPTH}, which no reader accepts`, { cause: e });
    }
    throw e;
  }
}

const envelopeGuides = new WeakMap<EventRegistry<unknown>, JsonGuide>();

/**
 * What the reader expects where in an event of any of the registry's types: the type is
 * known only once its key is read, and Go writes it near the end. (@internal: exported for
 * the fast reader's differential test.)
 */
export function envelopeGuide(registry: EventRegistry<unknown>): JsonGuide {
  let guide = envelopeGuides.get(registry);
  if (guide === undefined) {
    guide = mergeGuides([...registry.types()].map((def) => guideFor(wireSchemaOf(def))));
    envelopeGuides.set(registry, guide);
  }
  return guide;
}

function decodeText(input: Uint8Array | string, max: number): string {
  // A string's UTF-8 length is at least its code-unit count: a cheap early bound.
  if (input.length > max) throw new EventDecodeError("too_large", `event of ${input.length} bytes exceeds the cap of ${max}`);
  if (typeof input === "string") {
    // Up to 3 UTF-8 bytes per code unit: count exactly only when the bound is not enough.
    if (input.length * 3 > max) {
      const bytes = utf8Encoder.encode(input).length;
      if (bytes > max) throw new EventDecodeError("too_large", `event of ${bytes} bytes exceeds the cap of ${max}`);
    }
    // A lone surrogate is in no UTF-8 text (its bytes would read as U+FFFD): refused as
    // bytes that are not UTF-8 are, never read as a character Go could not have read.
    if (!isWellFormed(input)) throw new EventDecodeError("not_utf8", "event text holds a lone surrogate, which is not UTF-8");
    return input;
  }
  try {
    return utf8Decoder.decode(input);
  } catch {
    throw new EventDecodeError("not_utf8", "event is not valid UTF-8");
  }
}

const WIRE_KEY_REASONS = { letter_case: "letter_case_key", null: "null_value" } as const;

/**
 * Decodes and validates one event of either class from untrusted bytes: the subscribers'
 * path, which checks the channel against the subject itself.
 *
 * The event is deep-frozen (its objects, arrays and Go maps; RawJson values freeze
 * themselves) and remembered, so `encodeEvent` writes it without validating it again; copy
 * it to edit it. An event of a custom type holding anything else (a Date, a Map, a
 * Uint8Array, a class instance) is returned unfrozen, and the encoder validates it.
 */
export function decodeEvent<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): E {
  return decodeWith(input, options, true);
}

/**
 * @internal `decodeEvent` by the guided reader alone, never the fast path: the reference
 * the differential tests hold the fast path to.
 */
export function decodeEventByReference<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): E {
  return decodeWith(input, options, false);
}

function decodeWith<E>(input: Uint8Array | string, options: CodecOptions<E> | undefined, fast: boolean): E {
  const text = decodeText(input, options?.maxBytes ?? DEFAULT_MAX_EVENT_BYTES);
  const guide = envelopeGuide(registryOf(options));
  // Ordinary text (the usual event) is read by JSON.parse; anything else, and every
  // refusal and its wording, by the guided reader (src/wire/fast-json.ts).
  let json: unknown = fast ? parseOrdinaryJson(text, guide) : undefined;
  const ordinary = json !== undefined;
  if (json === undefined) {
    try {
      json = parseStrictJson(text, guide);
    } catch (e) {
      if (e instanceof StrictJsonError) throw new EventDecodeError(e.reason, e.message, e.offset);
      throw e;
    }
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new EventDecodeError("not_an_object", "an event is a JSON object");
  }
  const envelope = json as Record<string, unknown>;
  if (envelope.type === undefined) {
    if (Object.keys(envelope).some((k) => goFold(k) === "TYPE")) {
      throw new EventDecodeError("letter_case_key", "the type key differs from `type` only in letter case");
    }
    throw new EventDecodeError("missing_type", "event has no type");
  }
  if (envelope.type === null) throw new EventDecodeError("null_value", "type is null");
  const def = definitionFor(envelope, registryOf(options));
  const v = envelope.v;
  if (v === null) throw new EventDecodeError("null_value", "v is null");
  if (v !== undefined && v !== 0 && v !== WIRE_VERSION) {
    throw new EventValidationError(def.type, "v", "is invalid", `unsupported schema version ${JSON.stringify(v)}`);
  }
  // Ordinary text of a built-in type: its generated decoder, which answers only "here is
  // the event" or NOT_MINE (fast-model.ts); everything else, every refusal included, below.
  if (ordinary) {
    const decoder = fastDecoderOf(def);
    if (decoder !== undefined) {
      const event = decoder(envelope);
      // Built frozen, every level of it: only remembered.
      if (event !== NOT_MINE) return rememberMade(def, event as E);
    }
  }
  let camel: Record<string, unknown>;
  try {
    camel = fromWire(wireSchemaOf(def), envelope) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof RangeError) throw STACK_TOO_DEEP();
    // A refusal the reader kept until the type was known, or a raw value read again as its field.
    if (e instanceof StrictJsonError) throw new EventDecodeError(e.reason, e.message, e.offset);
    if (!(e instanceof WireKeyError)) throw e;
    if (e.problem === "unknown") throw new EventValidationError(def.type, e.path, "is invalid", "not a known field");
    if (e.problem === "dropped") throw new EventValidationError(def.type, e.path, "is invalid", e.message);
    throw new EventDecodeError(WIRE_KEY_REASONS[e.problem], e.message);
  }
  delete camel.v;
  try {
    return markMade(def, validateWith<E>(def, camel));
  } catch (e) {
    if (e instanceof RangeError) throw STACK_TOO_DEEP();
    throw e;
  }
}

/** The generated decoders, by the built-in definition they were generated from (no other definition has one). */
const generatedFactories = new Map<EventTypeDefinition, FastDecoderFactory>(
  builtInTypes.map((def) => [def as EventTypeDefinition, (generatedDecoders as Record<string, FastDecoderFactory>)[def.type]!]),
);
const fastDecoders = new Map<EventTypeDefinition, FastDecoder>();

function fastDecoderOf(def: EventTypeDefinition): FastDecoder | undefined {
  let decoder = fastDecoders.get(def);
  if (decoder === undefined) {
    const factory = generatedFactories.get(def);
    if (factory === undefined) return undefined;
    decoder = factory(schemaNodes(def.schema), def);
    fastDecoders.set(def, decoder);
  }
  return decoder;
}

/**
 * @internal The generated decoder's answer for a wire object the fast reader made (the
 * differential tests hold it to the reference path): the event, NOT_MINE, or undefined
 * for a type that has none.
 */
export function fastDecodeWire(def: EventTypeDefinition, wire: Record<string, unknown>): unknown {
  return fastDecoderOf(def)?.(wire);
}

// The reader's own answer when the stack runs out (strict-json.ts): tool results nest
// blocks recursively, and mapping and validating them recurse further than reading.
const STACK_TOO_DEEP = () => new EventDecodeError("too_deep", "nesting too deep to read");

/**
 * The journal decoder (the runtime's UnmarshalEvent): one enduring event from untrusted
 * bytes. Throws EventDecodeError for bytes that are not an event envelope,
 * EventValidationError for an envelope whose type is unknown, ephemeral, or whose
 * content breaks the event's rules. Never returns untyped JSON.
 *
 * Frozen as `decodeEvent`'s events are.
 */
export function unmarshalEvent<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): E {
  return ofClass(decodeEvent(input, options), "enduring", options);
}

/**
 * The live channel's decoder: one ephemeral preview from untrusted bytes. Frozen as
 * `decodeEvent`'s events are.
 */
export function unmarshalPreview<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): E {
  return ofClass(decodeEvent(input, options), "ephemeral", options);
}

function ofClass<E>(event: E, cls: "enduring" | "ephemeral", options?: CodecOptions<E>): E {
  const def = definitionFor(event, registryOf(options));
  if (def.class !== cls) {
    throw new EventValidationError(def.type, "type", "is not a known event type", cls === "enduring" ? "an ephemeral event is never in the journal" : "an enduring event is never a preview");
  }
  return event;
}

/** Why bytes could not be read as an event: malformed or refused as the Go runtime refuses it (`EventDecodeError`), or not valid for its type (`EventValidationError`). */
export type DecodeError = EventDecodeError | EventValidationError;

/** `decodeEvent` as a result value: the hot path of subscribers, which report rather than throw. */
export function safeDecodeEvent<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): SafeResult<E, DecodeError> {
  return safely(() => decodeEvent(input, options));
}

/** `unmarshalEvent` as a result value. */
export function safeUnmarshalEvent<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): SafeResult<E, DecodeError> {
  return safely(() => unmarshalEvent(input, options));
}

function safely<E>(decode: () => E): SafeResult<E, DecodeError> {
  try {
    return { success: true, data: decode() };
  } catch (e) {
    if (e instanceof EventDecodeError || e instanceof EventValidationError) return { success: false, error: e };
    throw e;
  }
}
