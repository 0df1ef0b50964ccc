/**
 * Routes a validated event by class: enduring → the journal (JetStream, acknowledged,
 * deduplicated by event id); ephemeral → its preview subject on core NATS (no ack, no
 * persistence, journal sequence 0).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { encodeValidated } from "../codec/codec.js";
import { ConnectionClosedError, OptionsError, PublishError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import { requireFeature } from "../subjects/server-features.js";
import { type JournalShard, sessionJournalSubject, validEventSubject } from "../subjects/subjects.js";
import { recordPreview, startPublish } from "../telemetry/index.js";
import { type AppendRequest, FixedHeaders, journalHeaderRoom, type JournalWriter, payloadTooLarge } from "./journal-writer.js";
import { parsePublishOptions, type PublishOptions } from "./options.js";
import { PreviewConfirmation } from "./preview-confirmation.js";

/** Header on a preview: the last journal sequence its loop had written when it was sent. */
export const HEADER_LAST_JOURNAL_SEQ = "Jetloop-Last-Journal-Seq";

export type { PublishOptions };

/** What `publish` tells of a stored event: its journal sequence, and whether the journal already held it. */
export interface PublishResult {
  /** The stream sequence of the stored event; 0 for an ephemeral event. */
  readonly journalSeq: number;
  /**
   * The server answered that the journal already held this event id, so this answer stored
   * nothing new: a retried publish, or this call's own resend after a cut whose first copy
   * had been stored. Either way the event is stored exactly once, at `journalSeq`.
   */
  readonly duplicate: boolean;
  readonly subject: string;
  readonly eventId: string;
  /** A preview sent fire-and-forget: nobody learned whether the server took it. */
  readonly unconfirmed?: true;
}

interface Header {
  sessionId: string;
  loopId?: string | undefined;
  eventId: string;
}

const LAST_SEQ_MEMORY = 10_000;

/** A shard's writer, and where the namespace's sessions are written. */
export interface ShardWriter {
  readonly shard: JournalShard;
  readonly stream: string;
  readonly writer: JournalWriter;
}

export interface ShardedWriters {
  readonly shards: readonly ShardWriter[];
  /** The shard session `sessionId` lives in. */
  of(sessionId: string): ShardWriter;
}

export class Publisher<E> {
  readonly #lastSeq = new LastSeqMemory(LAST_SEQ_MEMORY);
  readonly #previews: PreviewConfirmation;

  /**
   * `journal` is the namespace's journal: the shard a session lives in and that shard's
   * writer. The header room is the widest shard's (the longest stream name and fence
   * subject), so one cap holds for every session.
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly journal: ShardedWriters,
    private readonly settings: { namespace: string; maxEventBytes: number; serverVersion: string },
    private readonly registry: EventRegistry<E>,
  ) {
    this.#previews = new PreviewConfirmation(nc);
    this.#headerRoom = Math.max(...journal.shards.map((s) => journalHeaderRoom(s.stream, settings.namespace, s.shard)));
  }

  readonly #headerRoom: number;

  /**
   * The codec's cap for this connection: `maxEventBytes`, lowered so that an event at the
   * cap plus jetloop's headers fits the server's max_payload (which counts headers). An
   * event the codec accepts always fits; the stream's max_msg_size is provisioned with
   * the same room (provision.ts).
   */
  get maxEventBytes(): number {
    const max = this.nc.info?.max_payload;
    return max === undefined ? this.settings.maxEventBytes : Math.max(0, Math.min(this.settings.maxEventBytes, max - this.#headerRoom));
  }

  /** The server refused a publish on `subject` (its permissions): fails previews waiting on it. */
  previewDenied(subject: string, error: Error): void {
    this.#previews.denied(subject, error);
  }

  async publish(event: E, given?: PublishOptions): Promise<PublishResult> {
    const options = parsePublishOptions(given);
    const { event: valid, bytes, definition } = encodeValidated(event, { registry: this.registry, maxBytes: this.maxEventBytes, pooled: true });
    const header = valid as unknown as Header;
    const address = { sessionId: header.sessionId, loopId: header.loopId, family: definition.family, type: definition.type };
    if (definition.class === "ephemeral") {
      if (options.expectedLastSeq !== undefined) throw new OptionsError("expectedLastSeq", "applies to enduring events only");
      const subject = validEventSubject(this.settings.namespace, "live", address);
      const last = String(this.#lastSeq.get(loopKey(header)) ?? 0);
      // The trace headers fit: a preview's headers are far fewer than the journal's room (TRACE_HEADER_ROOM included).
      const trace = startPublish(subject, definition.type, "ephemeral", header.eventId);
      const h = new FixedHeaders([[HEADER_LAST_JOURNAL_SEQ, last], ...trace.entries]);
      const tooLarge = payloadTooLarge(this.nc, bytes, h);
      if (tooLarge) {
        trace.end(tooLarge);
        throw tooLarge;
      }
      const send = () => {
        try {
          this.nc.publish(subject, bytes, { headers: h });
        } catch (e) {
          if (this.nc.isClosed()) throw new ConnectionClosedError(undefined, { cause: e });
          throw new PublishError(subject, `live publish failed: ${(e as Error).message}`, undefined, { cause: e });
        }
      };
      const sent = { journalSeq: 0, duplicate: false, subject, eventId: header.eventId };
      try {
        if (options.fireAndForget) {
          send();
          recordPreview("unconfirmed");
          trace.end(sent);
          return { ...sent, unconfirmed: true };
        }
        await this.#previews.confirm(subject, send);
      } catch (e) {
        recordPreview("failed");
        trace.end(e as Error);
        throw e;
      }
      recordPreview("confirmed");
      trace.end(sent);
      return sent;
    }
    if (options.fireAndForget) throw new OptionsError("fireAndForget", "applies to previews only: an enduring event is acknowledged");
    const home = this.journal.of(header.sessionId);
    const subject = validEventSubject(this.settings.namespace, "journal", address, home.shard);
    let fenceSubject: string | undefined;
    if (options.expectedLastSeq !== undefined) {
      requireFeature(this.settings.serverVersion, "fencing");
      fenceSubject = sessionJournalSubject(this.settings.namespace, header.sessionId, home.shard);
    }
    const trace = startPublish(subject, definition.type, "enduring", header.eventId);
    let ack;
    try {
      ack = await home.writer.append({
        subject,
        data: bytes,
        eventId: header.eventId,
        sessionId: header.sessionId,
        expectedLastSeq: options.expectedLastSeq,
        fenceSubject,
        trace: trace.entries,
      });
    } catch (e) {
      trace.end(e as Error);
      throw e;
    }
    this.#remember(header, ack.seq);
    const result = { journalSeq: ack.seq, duplicate: ack.duplicate, subject, eventId: header.eventId };
    trace.end(result);
    return result;
  }

  /**
   * An enduring event encoded as a journal append, for a batch: the checks and subject of
   * `publish`, refused (typed) when the event is a preview. `end` closes its publish trace.
   */
  journalAppend(event: E, expectedLastSeq: number | undefined): { request: AppendRequest; shard: JournalShard; end: (outcome: PublishResult | Error) => void } {
    const { event: valid, bytes, definition } = encodeValidated(event, { registry: this.registry, maxBytes: this.maxEventBytes });
    const header = valid as unknown as Header;
    if (definition.class === "ephemeral") throw new OptionsError("atomic", `applies to enduring events only: ${definition.type} is a preview, never stored`);
    const { shard } = this.journal.of(header.sessionId);
    const subject = validEventSubject(this.settings.namespace, "journal", { sessionId: header.sessionId, loopId: header.loopId, family: definition.family, type: definition.type }, shard);
    let fenceSubject: string | undefined;
    if (expectedLastSeq !== undefined) {
      requireFeature(this.settings.serverVersion, "fencing");
      fenceSubject = sessionJournalSubject(this.settings.namespace, header.sessionId, shard);
    }
    const trace = startPublish(subject, definition.type, "enduring", header.eventId);
    const request: AppendRequest = { subject, data: bytes, eventId: header.eventId, sessionId: header.sessionId, expectedLastSeq, fenceSubject, trace: trace.entries };
    return {
      request,
      shard,
      end: (outcome) => {
        if (!(outcome instanceof Error)) this.#remember(header, outcome.journalSeq);
        trace.end(outcome);
      },
    };
  }

  #remember(header: Header, seq: number): void {
    this.#lastSeq.remember(loopKey(header), seq);
  }
}

/**
 * The last journal sequence each loop wrote, bounded: two generations of at most half the
 * budget each. A loop's entry is updated in place (no delete and re-insert per append);
 * when the young generation is full it becomes the old one and the previous old one is
 * dropped, so a loop not heard of for a whole generation is forgotten.
 */
class LastSeqMemory {
  #young = new Map<string, number>();
  #old = new Map<string, number>();
  readonly #generation: number;

  constructor(budget: number) {
    this.#generation = Math.max(1, Math.floor(budget / 2));
  }

  get(key: string): number | undefined {
    return this.#young.get(key) ?? this.#old.get(key);
  }

  remember(key: string, seq: number): void {
    const young = this.#young.get(key);
    if (young !== undefined) {
      if (seq > young) this.#young.set(key, seq);
      return;
    }
    const old = this.#old.get(key);
    this.#young.set(key, old !== undefined && old > seq ? old : seq);
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young;
      this.#young = new Map();
    }
  }
}

/** A loop's own id; a session's id stands for its loop-less events (ids are unique UUIDs). */
function loopKey(h: Header): string {
  return h.loopId ?? h.sessionId;
}
