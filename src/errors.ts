/**
 * Every failure jetloop reports is a `JetloopError` with a stable `code`, a `name`
 * matching its class and, where another layer failed first, a `cause`.
 * Callers branch on `code` (or the type guards) rather than on messages.
 */

export type JetloopErrorCode =
  | "EVENT_INVALID"
  | "EVENT_TYPE_UNKNOWN"
  | "EVENT_NOT_PERSISTABLE"
  | "EVENT_ENCODE"
  | "EVENT_DECODE"
  | "REQUEST_INVALID"
  | "REGISTRY"
  | "SUBJECT_INVALID"
  | "OPTIONS_INVALID"
  | "PUBLISH_FAILED"
  | "PUBLISH_TIMEOUT"
  | "PUBLISH_CONFLICT"
  | "PUBLISH_ORDER"
  | "PUBLISH_ID_CLAIMED"
  | "NOT_PROVISIONED"
  | "PERMISSION_DENIED"
  | "MESSAGE_TOO_LARGE"
  | "SERVER_UNSUPPORTED"
  | "PROVISION_DRIFT"
  | "SUBSCRIPTION_FAILED"
  | "DELIVERY_INVALID"
  | "CONNECTION_CLOSED"
  | "CONNECTION_FAILED"
  | "COMMAND_FAILED"
  | "COMMAND_NO_LISTENER"
  | "COMMAND_INVALID"
  | "GATE_UNKNOWN"
  | "GATE_RESOLVED"
  | "GATE_CLOSED"
  | "PARKING_FAILED"
  | "GATEWAY_BIND"
  | "COMMAND_TIMEOUT"
  | "IDEMPOTENCY_CONFLICT"
  | "INPUT_REFUSED"
  | "TELEMETRY_UNAVAILABLE"
  | "POLICY_TIMEOUT"
  | "BATCH_TOO_LARGE"
  | "READ_CONSUMERS_BUSY"
  | "SHARD_LAYOUT"
  | "CATALOG_ENTRY_INVALID"
  | "CATALOG_ENTRY_POISONED"
  | "CATALOG_FAILED"
  | "NATS_SERVER_MISSING"
  | "GO_RECORD_UNREADABLE"
  | "ATTACH_FAILED";

/** The base class of every error jetloop throws or reports: a stable `code`, and the `cause` when another error led to it. */
export class JetloopError extends Error {
  readonly code: JetloopErrorCode;

  constructor(code: JetloopErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The rule a field broke; the wording is part of the API. */
export type ValidationRule = "must be set" | "must be zero" | "is invalid" | "is not a known event type";

/** An event breaks its identity profile, its header or its body rules. */
export class EventValidationError extends JetloopError {
  constructor(
    readonly eventType: string,
    /** Dotted camelCase path of the offending field, e.g. `request.requirements.0.kind`. */
    readonly field: string,
    readonly rule: ValidationRule,
    readonly detail?: string,
    options?: { cause?: unknown },
  ) {
    super(
      rule === "is not a known event type" ? "EVENT_TYPE_UNKNOWN" : "EVENT_INVALID",
      `${eventType || "event"}: ${field} ${rule}${detail ? ` (${detail})` : ""}`,
      options,
    );
  }
}

/** `marshalEvent` was given an ephemeral event: only enduring events enter the journal. */
export class EventNotPersistableError extends JetloopError {
  constructor(readonly eventType: string) {
    super("EVENT_NOT_PERSISTABLE", `${eventType} is ephemeral and cannot be written to the journal`);
  }
}

/**
 * An event that cannot be encoded: the typed request codec rejected the request of a
 * PermissionRequested (`request_rejected`), or the encoding exceeds the byte cap.
 */
export class EventEncodeError extends JetloopError {
  constructor(
    readonly eventType: string,
    readonly reason: "request_rejected" | "too_large" | "unwritable" | "too_deep",
    message: string,
    options?: { cause?: unknown },
  ) {
    super("EVENT_ENCODE", `${eventType}: ${message}`, options);
  }
}

/** What was wrong with bytes the codec refused, in `EventDecodeError.failure`. */
export type DecodeFailure =
  | "too_large"
  | "not_utf8"
  | "malformed_json"
  | "duplicate_key"
  | "too_deep"
  | "not_an_object"
  | "missing_type"
  /** A number past the range of a float64 (`1e309`), anywhere in the text: Go's reader refuses it. */
  | "number_out_of_range"
  /** A number whose text JavaScript cannot read exactly (`1.0`, `1e2`, beyond 2^53). */
  | "inexact_number"
  /** A key that names a field only ignoring letter case (`"Type"` for `type`). */
  | "letter_case_key"
  /** A time whose quoted text holds an escape (Go's time parser reads the bytes as they are). */
  | "escaped_time"
  /** `null` for a field (the runtime writes an absent value by omitting it). */
  | "null_value";

/** Bytes from the wire that are not an event envelope at all. */
export class EventDecodeError extends JetloopError {
  constructor(
    readonly reason: DecodeFailure,
    message: string,
    /** Byte offset in the input, where one applies. */
    readonly offset?: number,
  ) {
    super("EVENT_DECODE", message);
  }
}

/** The strict permission request decoder refused its input. */
export class RequestDecodeError extends JetloopError {
  constructor(
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("REQUEST_INVALID", `permission request: ${field ? `${field} ` : ""}${message}`, options);
  }
}

/** An event type registration that would break the catalogue. */
export class RegistryError extends JetloopError {
  constructor(message: string) {
    super("REGISTRY", message);
  }
}

/** Options that were checked eagerly and refused. */
export class OptionsError extends JetloopError {
  constructor(
    readonly option: string,
    message: string,
  ) {
    super("OPTIONS_INVALID", `${option}: ${message}`);
  }
}

/**
 * The one guard: a JetloopError, and with `code` one with that code
 * (`isJetloopError(e, "PUBLISH_CONFLICT")`). Narrow further with `instanceof` for a
 * class's own fields.
 */
export function isJetloopError<C extends JetloopErrorCode>(e: unknown, code?: C): e is JetloopError & { readonly code: C } {
  return e instanceof JetloopError && (code === undefined || e.code === code);
}
// --- NATS-facing errors ------------------------------------------------------------

/** The server refused an append for a reason that retrying will not fix. */
export class PublishError extends JetloopError {
  constructor(
    readonly subject: string,
    message: string,
    /** The JetStream API error code (`err_code`), when the server sent one. */
    readonly serverCode?: number,
    options?: { cause?: unknown },
  ) {
    super("PUBLISH_FAILED", message, options);
  }
}

/** No ack arrived before the deadline, after retrying with the same message id. */
export class PublishTimeoutError extends JetloopError {
  constructor(
    readonly subject: string,
    readonly eventId: string,
    readonly attempts: number,
    readonly deadlineMs: number,
    /** The append carried a fence (expectedLastSeq). */
    readonly fenced = false,
  ) {
    super(
      "PUBLISH_TIMEOUT",
      `no ack for event ${eventId} within ${deadlineMs} ms after ${attempts} attempts; it may or may not be stored — ` +
        (fenced
          ? "publishing it again with the same expectedLastSeq stores it at most once at any delay"
          : "publishing it again stores it at most once only within the stream's duplicate window of its first attempt (2m unless provisioned otherwise); later, publishAll with resume.since no later than the first attempt, or storedEvents(), finds whether it is stored"),
    );
  }
}

/** The session's journal moved past `expectedLastSeq`: another writer appended first. */
export class PublishConflictError extends JetloopError {
  constructor(
    readonly sessionId: string,
    readonly expectedLastSeq: number,
    /** The session's actual last journal sequence, when the server said it. */
    readonly actualLastSeq: number | undefined,
  ) {
    super(
      "PUBLISH_CONFLICT",
      `session ${sessionId}: expected last journal sequence ${expectedLastSeq}${actualLastSeq === undefined ? "" : `, found ${actualLastSeq}`}`,
    );
  }
}

/**
 * The append was answered as a duplicate, but the message the stream holds under its
 * event id (its `Nats-Msg-Id`) is not this append: it is on another subject (another
 * session's), or is another message. The stream's duplicate window is stream-wide, so a
 * writer that publishes first with this id on its own subject makes the server drop this
 * one. Nothing was stored. Publishing the same event again will not store it until the
 * window has passed since the claim; the same event under a new event id would.
 */
export class PublishIdClaimedError extends JetloopError {
  constructor(
    readonly subject: string,
    readonly eventId: string,
    /** The stream sequence of the message that holds the id. */
    readonly heldAtSeq: number,
    /** That message's subject (undefined: it could not be read back, e.g. removed since). */
    readonly heldBySubject: string | undefined,
  ) {
    super(
      "PUBLISH_ID_CLAIMED",
      `event ${eventId} was not stored on ${subject}: its id is held within the stream's duplicate window by ` +
        (heldBySubject === undefined ? `message ${heldAtSeq}, which could not be read back as this append` : `message ${heldAtSeq} on ${heldBySubject}, not this append`) +
        "; publishing the same event again will not store it until the window passes — a new event id would",
    );
  }
}

/**
 * The event is stored, but before an event of its session that was published earlier
 * (on the same bus) and stored later: the session's journal order differs from the
 * publish order. The writer keeps the order across connection cuts by holding and
 * resending; this is what it reports where nothing could keep it (an earlier append
 * refused by a stream without a leader, or lost by the server, while a later one was
 * stored). Publishing again changes nothing: both events are stored.
 */
export class PublishOrderError extends JetloopError {
  constructor(
    readonly sessionId: string,
    readonly eventId: string,
    /** Where this event is stored. */
    readonly journalSeq: number,
    /** The session's event published before it and stored after it. */
    readonly earlierEventId: string,
    readonly earlierJournalSeq: number,
  ) {
    super(
      "PUBLISH_ORDER",
      `session ${sessionId}: event ${eventId} is stored at journal sequence ${journalSeq}, before event ${earlierEventId} (at ${earlierJournalSeq}) that was published before it; both are stored, the journal's order differs from the publish order`,
    );
  }
}

/** No stream captures the journal subjects: run `provision` first. */
export class NotProvisionedError extends JetloopError {
  constructor(
    readonly stream: string,
    message?: string,
  ) {
    super("NOT_PROVISIONED", message ?? `stream ${stream} does not exist; run \`jetloop provision\``);
  }
}

/** The server's permissions refused a publish or a subscription. */
export class PermissionDeniedError extends JetloopError {
  constructor(
    readonly operation: "publish" | "subscribe" | "api",
    readonly subject: string,
    options?: { cause?: unknown },
  ) {
    super("PERMISSION_DENIED", `permission denied: ${operation} on ${subject}`, options);
  }
}

/** An encoded event larger than the server or the stream accepts. */
export class MessageTooLargeError extends JetloopError {
  constructor(
    readonly size: number,
    /** The limit in bytes, when known. */
    readonly max: number | undefined,
    readonly limit: "max_payload" | "max_msg_size",
  ) {
    super("MESSAGE_TOO_LARGE", `message of ${size} bytes exceeds the ${limit}${max === undefined ? "" : ` of ${max}`}`);
  }
}

/** An atomic batch of more events than the server commits together: refused whole, never split. */
export class BatchTooLargeError extends JetloopError {
  constructor(
    readonly size: number,
    readonly max: number,
  ) {
    super("BATCH_TOO_LARGE", `an atomic batch holds at most ${max} events; given ${size} (split the turn yourself: each part is then committed on its own)`);
  }
}

/**
 * No answer to an atomic batch's commit before the deadline, after resending it whole. The
 * server stores a batch whole or not at all, so the events are either all stored or none.
 */
export class BatchTimeoutError extends JetloopError {
  constructor(
    readonly eventIds: readonly string[],
    readonly attempts: number,
    readonly deadlineMs: number,
    /** The batch carried a fence (expectedLastSeq). */
    readonly fenced = false,
  ) {
    super(
      "PUBLISH_TIMEOUT",
      `no answer to the atomic batch of ${eventIds.length} events (first ${eventIds[0] ?? "none"}) within ${deadlineMs} ms after ${attempts} attempts; all of them are stored or none — ` +
        (fenced
          ? "publishAll with the same events, atomic and the same expectedLastSeq stores them at most once at any delay"
          : "publishAll with the same events and atomic stores them at most once only within the stream's duplicate window of the first attempt (2m unless provisioned otherwise); later, add resume.since no later than the first attempt"),
    );
  }
}

/** A feature needs a newer nats-server than the one connected. */
export class ServerUnsupportedError extends JetloopError {
  constructor(
    readonly feature: string,
    readonly required: string,
    readonly actual: string,
  ) {
    super("SERVER_UNSUPPORTED", `${feature} needs nats-server ${required} or newer; connected to ${actual}`);
  }
}

/** The bus or its connection was closed while an operation was under way. */
export class ConnectionClosedError extends JetloopError {
  /**
   * For an append failed by the close: true when it was sent (it may be stored, and publishing
   * it again within the duplicate window stores it at most once), false when it never went
   * out (not stored). Undefined where the error is not an append's.
   */
  readonly mayBeStored: boolean | undefined;

  constructor(message = "the connection is closed", options?: { cause?: unknown; mayBeStored?: boolean }) {
    super("CONNECTION_CLOSED", message, options);
    this.mayBeStored = options?.mayBeStored;
  }
}

/**
 * `connect` could not open a usable connection: no server answered (`unreachable`; the
 * servers tried are named), or the server runs without JetStream (`jetstream_disabled`).
 */
export class ConnectionFailedError extends JetloopError {
  constructor(
    readonly servers: readonly string[],
    readonly reason: "unreachable" | "jetstream_disabled",
    message: string,
    options?: { cause?: unknown },
  ) {
    super("CONNECTION_FAILED", message, options);
  }
}

/** The live stream differs from the declared one in ways `provision` must not overwrite. */
export class ProvisionDriftError extends JetloopError {
  constructor(
    readonly stream: string,
    readonly drift: readonly { field: string; live: unknown; desired: unknown }[],
  ) {
    super(
      "PROVISION_DRIFT",
      `stream ${stream} cannot take the declared configuration: ${drift.map((d) => `${d.field} is ${JSON.stringify(d.live)}, declared ${JSON.stringify(d.desired)}`).join("; ")}`,
    );
  }
}

/**
 * The namespace's journal is split in another number of shards than asked for (a
 * provision or a bus with another count), or in several layouts at once (a migration left
 * half done). Changing the count of a live namespace is a migration (docs/scale.md), never
 * an update: sessions would move to other shards with their sequences.
 */
export class ShardLayoutError extends JetloopError {
  constructor(
    readonly provisioned: readonly number[],
    readonly asked: number,
    message: string,
  ) {
    super("SHARD_LAYOUT", message);
  }
}

/** A journal or live message whose event does not belong to the subject it arrived on. */
export class DeliveryMismatchError extends JetloopError {
  constructor(
    readonly subject: string,
    readonly expected: string,
  ) {
    super("DELIVERY_INVALID", `event arrived on ${subject} but belongs on ${expected}`);
  }
}

/**
 * A journal message whose headers say its turn goes on past where the stream stopped
 * holding more of it (`Jetloop-Batch-Size`, its writer's word): poison, reported and never
 * yielded, so the read that met it ends where the journal ends (SECURITY.md).
 */
export class TurnUnheldError extends JetloopError {
  constructor(
    readonly subject: string,
    readonly journalSeq: number,
    /** Where its headers say its turn ends. */
    readonly claimedEnd: number,
    /** The stream's last sequence when the read gave up on that end. */
    readonly journalEnd: number,
  ) {
    super("DELIVERY_INVALID", `journal message ${journalSeq} on ${subject} says its turn ends at ${claimedEnd}, but the journal stopped at ${journalEnd} without its commit`);
  }
}

/** A subscription could not be set up or ended because its consumer failed. */
export class SubscriptionError extends JetloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SUBSCRIPTION_FAILED", message, options);
  }
}

/** The stable codes a command (an answer, an input, an interrupt) fails with, in `CommandError.code`. */
export type CommandErrorCode =
  | "COMMAND_FAILED"
  | "COMMAND_NO_LISTENER"
  | "COMMAND_INVALID"
  | "GATE_UNKNOWN"
  | "GATE_RESOLVED"
  // The session controls (input, interrupt): no reply in time (the outcome is unknown), a
  // command id reused for another request, the loop refusing the input.
  | "COMMAND_TIMEOUT"
  | "IDEMPOTENCY_CONFLICT"
  | "INPUT_REFUSED"
  // The server's permissions refused the request (another session's commands): not sent.
  | "PERMISSION_DENIED";

/**
 * An answer command that did not take effect; `code` says why. GATE_RESOLVED carries how
 * the gate was resolved (`outcome`), once it is; while it is being resolved it has none.
 */
export class CommandError extends JetloopError {
  readonly outcome: CommandOutcome | undefined;

  constructor(
    code: CommandErrorCode,
    message: string,
    options?: { cause?: unknown; outcome?: CommandOutcome },
  ) {
    super(code, message, options);
    this.outcome = options?.outcome;
  }
}

/** How a gate was resolved, as a GATE_RESOLVED refusal reports it (the answer path's AnswerOutcome). */
export interface CommandOutcome {
  readonly gateId: string;
  readonly toolExecutionId?: string | undefined;
  readonly action: string;
  readonly control?: string | undefined;
  readonly journalSeq: number;
}

/**
 * A gate the loop actor waits on closed without an answer because its gate server closed
 * (`owner_closed`, journaled when `journaled`): the loop must not act on the call.
 */
export class GateClosedError extends JetloopError {
  constructor(
    readonly gateId: string,
    readonly reason: "owner_closed",
    /** Whether the GateResolved with `reason` reached the journal. */
    readonly journaled: boolean,
    options?: { cause?: unknown },
  ) {
    super("GATE_CLOSED", `gate ${gateId} closed without an answer (${reason}${journaled ? "" : "; the journal could not record it"})`, options);
  }
}

/**
 * An answer whose GateResolved was journaled but whose PermissionDecided could not be,
 * after retries: the loop actor fails closed (treat the call as denied) and says so.
 */
export class ResolutionIncompleteError extends JetloopError {
  constructor(
    readonly gateId: string,
    readonly resolvedSeq: number,
    options?: { cause?: unknown },
  ) {
    super("COMMAND_FAILED", `gate ${gateId} is resolved (journal ${resolvedSeq}) but its decision could not be journaled; failing closed`, options);
  }
}

/**
 * A delivery could not be copied to the parked store (the store is full, missing or
 * unreachable). The original is then not terminated: it stays pending and comes again.
 */
export class ParkingError extends JetloopError {
  constructor(
    readonly durable: string,
    readonly journalSeq: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("PARKING_FAILED", `durable ${durable}, journal sequence ${journalSeq}: ${message}`, options);
  }
}

/**
 * The gateway refused to listen: a malformed address, or a non-loopback one without
 * authentication (pass `insecurePublicBind` to mean it).
 */
export class GatewayBindError extends JetloopError {
  constructor(
    readonly address: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("GATEWAY_BIND", `${address}: ${message}`, options);
  }
}

/** A subject or subject token jetloop cannot build or read (subjects/subjects.ts). */
export class SubjectError extends JetloopError {
  constructor(message: string) {
    super("SUBJECT_INVALID", message);
  }
}

/** A delivery whose journal sequence does not fit its event's class. */
export class ProjectionDeliveryError extends JetloopError {
  constructor(
    readonly eventType: string,
    readonly journalSeq: number,
    message: string,
  ) {
    super("DELIVERY_INVALID", `${eventType} at journal sequence ${journalSeq}: ${message}`);
  }
}

/**
 * A command line that cannot be run, found before anything is sent; main prints it with
 * the command's usage and exits 2. The message names the flag.
 */
export class UsageError extends JetloopError {
  constructor(message: string) {
    super("OPTIONS_INVALID", message);
  }
}

/**
 * `jetloop demo` / `jetloop dev` were to start a throwaway nats-server and found none (not
 * NATS_SERVER_BIN, not on PATH). Not bad input: the command line was right, the machine
 * lacks a program, so the CLI exits with its own code (3) and one line saying how to get it.
 */
export class NatsServerMissingError extends JetloopError {
  constructor(message: string) {
    super("NATS_SERVER_MISSING", message);
  }
}

/** Serving metrics needs OpenTelemetry packages that are optional peers and not installed, or another meter provider is registered. */
export class TelemetryUnavailableError extends JetloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("TELEMETRY_UNAVAILABLE", message, options);
  }
}

/**
 * A policy's decide() did not settle in time: the gate is not answered by that call (a late
 * result is ignored) and comes again with the durable's backoff.
 */
export class PolicyTimeoutError extends JetloopError {
  constructor(
    readonly gateId: string,
    readonly timeoutMs: number,
  ) {
    super("POLICY_TIMEOUT", `gate ${gateId}: the policy's decide() did not settle within ${timeoutMs} ms`);
  }
}

/**
 * A journal read found no free name in its `readConsumers` pool within `waitMs`: this
 * process's reads held them all, or another process connected with the same prefix holds
 * some on the server (`heldElsewhere`; jetloop never takes those over). Nothing was read;
 * retrying later is safe. Give each process its own prefix, or a larger pool.
 */
export class ReadConsumersBusyError extends JetloopError {
  constructor(
    readonly prefix: string,
    readonly size: number,
    readonly waitMs: number,
    readonly heldElsewhere: number,
  ) {
    super(
      "READ_CONSUMERS_BUSY",
      `no read consumer of pool "${prefix}" (size ${size}) was free within ${waitMs} ms` +
        (heldElsewhere > 0 ? `: ${heldElsewhere} held on the server by another process using the same prefix` : ": all in use by this process's reads"),
    );
  }
}

/**
 * A session catalog entry that is not read exactly as the catalog writes it (catalog/entry.ts):
 * malformed, ambiguous, out of range, or naming another session than its key.
 */
export class CatalogEntryError extends JetloopError {
  constructor(
    readonly key: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("CATALOG_ENTRY_INVALID", `catalog entry ${key}: ${message}`, options);
  }
}

/** The session catalog could not be read or brought up to the journal (its bucket, its journal reads). */
export class CatalogError extends JetloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("CATALOG_FAILED", message, options);
  }
}

/**
 * A session whose catalog entry could not be its fold, so the catalog wrote a mark in its
 * place (catalog/README.md): `too_large` (past ENTRY_MAX_BYTES or the server's
 * max_payload), `fold_failed` (folding one of its records threw), `unreadable` (the entry
 * would not read back as written). It costs that session only: the list shows it marked.
 */
export class CatalogEntryPoisonedError extends JetloopError {
  constructor(
    readonly sessionId: string,
    readonly reason: "too_large" | "fold_failed" | "unreadable",
    readonly journalSeq: number,
    options?: { cause?: unknown },
  ) {
    super("CATALOG_ENTRY_POISONED", `session ${sessionId}: its catalog entry is marked ${reason} at journal sequence ${journalSeq}`, options);
  }
}

/**
 * Why a Go ledger record cannot be read as the Go runtime's reader reads it
 * (src/attach/README.md): the envelope Go refuses (`envelope`), a blob pointer whose
 * object is missing or unreadable (`blob_unavailable`) or whose bytes are not its size
 * and sha256 (`blob_integrity`), an event body Go's UnmarshalEvent would refuse or
 * jetloop's codec cannot take (`event`), an event of another session than its ledger's
 * (`session_mismatch`). The record is parked and costs its session that record alone.
 */
export type GoRecordProblem = "envelope" | "blob_unavailable" | "blob_integrity" | "event" | "session_mismatch";

/** A record of a Go session's ledger the attach could not read as the Go runtime reads it; parked and reported, never skipped. */
export class GoRecordError extends JetloopError {
  constructor(
    readonly sessionId: string,
    readonly goSeq: number,
    readonly problem: GoRecordProblem,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super("GO_RECORD_UNREADABLE", `Go session ${sessionId}, record ${goSeq}: ${problem}: ${detail}`, options);
  }
}

/**
 * The attach could not follow a Go session's ledger into the journal: the journal holds
 * events of that session no attach wrote (`foreign`: the session is not followed), the
 * journal refused an append for a reason of its own (`refused`), or the deployment's
 * layout forbids it (`layout`: a jetloop namespace that captures the Go subjects), or the
 * namespace's attach lease cannot be used as asked (`lease`: another lease time).
 */
export class AttachError extends JetloopError {
  constructor(
    readonly sessionId: string | undefined,
    readonly reason: "foreign" | "refused" | "layout" | "lease",
    message: string,
    options?: { cause?: unknown },
  ) {
    super("ATTACH_FAILED", sessionId === undefined ? message : `Go session ${sessionId}: ${message}`, options);
  }
}
