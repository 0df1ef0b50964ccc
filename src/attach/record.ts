/**
 * What one Go ledger record is to jetloop's journal: an event to append (its exact Go
 * bytes), a record that stays out (fences, commands, the runtime's private records), or a
 * record Go's reader would refuse (parked). A blob pointer is resolved first and then read
 * as the envelope it holds, as Go's replay does; a pointer to a pointer is refused.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { unmarshalEvent } from "../codec/codec.js";
import { GoRecordError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import { fetchBlob } from "./blobs.js";
import { decodeBlobPointer, decodeGoEnvelope, type GoKind } from "./envelope.js";

/** The fields of a decoded event the journal subject is built from. */
export interface AttachedEvent {
  readonly type: string;
  readonly sessionId: string;
  readonly loopId?: string | undefined;
  readonly eventId: string;
  readonly visibility?: string | undefined;
}

export type RecordOutcome =
  | { readonly kind: "event"; readonly goSeq: number; readonly bytes: Uint8Array; readonly event: AttachedEvent; readonly offloaded: boolean }
  | { readonly kind: "kept_out"; readonly goSeq: number; readonly goKind: GoKind }
  | { readonly kind: "unreadable"; readonly goSeq: number; readonly error: GoRecordError };

export interface RecordContext {
  readonly sessionId: string;
  readonly jsm: JetStreamManager;
  readonly registry: EventRegistry<unknown>;
  /** The largest event the journal takes (the bus's cap). */
  readonly maxEventBytes: number;
}

/**
 * Resolves the record stored at Go sequence `goSeq`. Throws only when the Go side could
 * not be read (the record is then read again); every fault of the record itself is an
 * `unreadable` outcome.
 */
export async function resolveRecord(ctx: RecordContext, goSeq: number, data: Uint8Array): Promise<RecordOutcome> {
  const refuse = (problem: GoRecordError["problem"], detail: string, cause?: unknown): RecordOutcome => ({
    kind: "unreadable",
    goSeq,
    error: new GoRecordError(ctx.sessionId, goSeq, problem, detail, cause === undefined ? undefined : { cause }),
  });
  const outer = decodeGoEnvelope(data);
  if (!outer.ok) return refuse("envelope", outer.reason);
  let envelope = outer.envelope;
  let offloaded = false;
  if (envelope.kind === "blobptr") {
    const pointer = decodeBlobPointer(envelope.body);
    if (typeof pointer === "string") return refuse("envelope", pointer);
    const blob = await fetchBlob(ctx.jsm, pointer);
    if (!blob.ok) return refuse(blob.problem, blob.detail);
    const inner = decodeGoEnvelope(blob.bytes);
    if (!inner.ok) return refuse("envelope", `offloaded envelope: ${inner.reason}`);
    if (inner.envelope.kind === "blobptr") return refuse("envelope", "nested blobptr offload");
    envelope = inner.envelope;
    offloaded = true;
  }
  if (envelope.kind !== "event") return { kind: "kept_out", goSeq, goKind: envelope.kind };
  let event: AttachedEvent;
  try {
    event = unmarshalEvent(envelope.body, { registry: ctx.registry, maxBytes: ctx.maxEventBytes }) as AttachedEvent;
  } catch (e) {
    return refuse("event", (e as Error).message, e);
  }
  // Filed under its own session's subject, an event of another session would join that
  // session's journal: Go's ledger is the session's, so the event must be too.
  if (event.sessionId !== ctx.sessionId) return refuse("session_mismatch", `the event ${event.eventId} names session ${event.sessionId}`);
  return { kind: "event", goSeq, bytes: envelope.body, event, offloaded };
}
