/**
 * The journal codec: one JSON object per event, snake_case, header flattened beside
 * `type` and `v`, zero values omitted — the envelope the Go runtime writes.
 * `unmarshalEvent` is the untrusted boundary; nothing leaves it unvalidated.
 */
import {
  EventDecodeError,
  EventEncodeError,
  EventNotPersistableError,
  EventValidationError,
  RequestDecodeError,
} from "../errors.js";
import { defaultRegistry, type JetloopEvent } from "../events/catalogue.js";
import type { EventRegistry, EventTypeDefinition } from "../events/registry.js";
import { validatePermissionRequest } from "../events/request.js";
import { definitionFor, type SafeResult, validateWith } from "../events/validate.js";
import { encodePooled } from "./pooled-utf8.js";
import { parseStrictJson, StrictJsonError } from "./strict-json.js";
import { fromWire, toWireJson, UnknownWireKeyError, type WireOpening } from "./wire.js";

/** The wire schema version this codec writes and reads. */
export const WIRE_VERSION = 1;

/**
 * The default byte cap of one encoded event: nats-server's default max_payload, so
 * every event the codec accepts can be published. The events stream's max_msg_size
 * uses the same figure. (The Go runtime's decoder caps at 16 MiB.)
 */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

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

const ENVELOPE_KEYS: ReadonlySet<string> = new Set(["type", "v"]);
const envelopes = new WeakMap<EventTypeDefinition, WireOpening>();

/** The envelope's own fields, which open every event of a type: `{"type":"X","v":1`. */
function envelopeOf(def: EventTypeDefinition): WireOpening {
  let envelope = envelopes.get(def);
  if (envelope === undefined) {
    envelope = { text: `{"type":${JSON.stringify(def.type)},"v":${WIRE_VERSION}`, keys: ENVELOPE_KEYS };
    envelopes.set(def, envelope);
  }
  return envelope;
}

/** `encodeEvent`, also returning the normalized event and its type definition. */
export function encodeValidated<E = JetloopEvent>(event: E, options?: CodecOptions<E> & { pooled?: boolean }): Encoded<E> {
  const def = definitionFor(event, registryOf(options));
  const input = event as Record<string, unknown>;
  if (def.type === "PermissionRequested") {
    try {
      validatePermissionRequest(input.request);
    } catch (e) {
      if (e instanceof RequestDecodeError) {
        throw new EventEncodeError(def.type, "request_rejected", `the request codec rejected the request: ${e.message}`, { cause: e });
      }
      throw e;
    }
  }
  const valid = validateWith<E>(def, input);
  const json = toWireJson(def.schema, valid, envelopeOf(def));
  const bytes = options?.pooled ? encodePooled(json) : utf8Encoder.encode(json);
  const max = options?.maxBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (bytes.length > max) {
    throw new EventEncodeError(def.type, "too_large", `encodes to ${bytes.length} bytes, more than the cap of ${max}`);
  }
  return { event: valid, bytes, definition: def };
}

/**
 * Encodes an enduring event for the journal. Fails closed: an ephemeral event is
 * EventNotPersistableError, an unknown type or invalid event EventValidationError, a
 * request the typed request codec rejects EventEncodeError.
 */
export function marshalEvent<E = JetloopEvent>(event: E, options?: CodecOptions<E>): Uint8Array {
  const def = definitionFor(event, registryOf(options));
  if (def.class !== "enduring") throw new EventNotPersistableError(def.type);
  return encodeEvent(event, options);
}

/**
 * Decodes and validates one event from untrusted bytes. Throws EventDecodeError for
 * bytes that are not an event envelope, EventValidationError for an envelope whose type
 * is unknown or whose content breaks the event's rules. Never returns untyped JSON.
 */
export function unmarshalEvent<E = JetloopEvent>(input: Uint8Array | string, options?: CodecOptions<E>): E {
  const max = options?.maxBytes ?? DEFAULT_MAX_EVENT_BYTES;
  // A string's UTF-8 length is at least its code-unit count: a cheap early bound.
  if (input.length > max) throw new EventDecodeError("too_large", `event of ${input.length} bytes exceeds the cap of ${max}`);
  let text: string;
  if (typeof input === "string") {
    // Up to 3 UTF-8 bytes per code unit: count exactly only when the bound is not enough.
    if (input.length * 3 > max) {
      const bytes = utf8Encoder.encode(input).length;
      if (bytes > max) throw new EventDecodeError("too_large", `event of ${bytes} bytes exceeds the cap of ${max}`);
    }
    text = input;
  } else {
    try {
      text = utf8Decoder.decode(input);
    } catch {
      throw new EventDecodeError("not_utf8", "event is not valid UTF-8");
    }
  }
  let json: unknown;
  try {
    json = parseStrictJson(text);
  } catch (e) {
    if (e instanceof StrictJsonError) throw new EventDecodeError(e.reason, e.message, e.offset);
    throw e;
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new EventDecodeError("not_an_object", "an event is a JSON object");
  }
  const envelope = json as Record<string, unknown>;
  if (envelope.type === undefined) throw new EventDecodeError("missing_type", "event has no type");
  const def = definitionFor(envelope, registryOf(options));
  if (envelope.v !== undefined && envelope.v !== WIRE_VERSION) {
    throw new EventValidationError(def.type, "v", "is invalid", `unsupported schema version ${JSON.stringify(envelope.v)}`);
  }
  let camel: Record<string, unknown>;
  try {
    camel = fromWire(def.schema, envelope) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof UnknownWireKeyError) throw new EventValidationError(def.type, e.path, "is invalid", "not a known field");
    throw e;
  }
  return validateWith<E>(def, camel);
}

export type DecodeError = EventDecodeError | EventValidationError;

/** `unmarshalEvent` as a result value: the hot path of subscribers, which report rather than throw. */
export function safeUnmarshalEvent<E = JetloopEvent>(
  input: Uint8Array | string,
  options?: CodecOptions<E>,
): SafeResult<E, DecodeError> {
  try {
    return { success: true, data: unmarshalEvent(input, options) };
  } catch (e) {
    if (e instanceof EventDecodeError || e instanceof EventValidationError) return { success: false, error: e };
    throw e;
  }
}
