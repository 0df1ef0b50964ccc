/**
 * A bounded, ordered read of the journal: from a sequence to a sequence (or to the end
 * of the journal as it stood when the replay began), then it ends.
 */
import { jetstream } from "@nats-io/jetstream";
import type { BusContext } from "../bus-context.js";
import { OptionsError } from "../errors.js";
import { decodeMessage, type Delivery } from "./delivery.js";
import { resolveFilter } from "./filter.js";
import { readJournalRange } from "./journal-range.js";
import type { SubscriptionReport } from "./options.js";

export interface ReplayRequest {
  /** One session; omit (with `sessions`) for several or all. */
  readonly sessionId?: string | undefined;
  readonly sessions?: "all" | Iterable<string> | undefined;
  /** Only these loops (session-scoped events always pass). Default: all loops. */
  readonly loops?: Iterable<string> | undefined;
  readonly types?: Iterable<string> | undefined;
  readonly families?: Iterable<string> | undefined;
  /** First journal sequence. Default 1. */
  readonly fromSeq?: number | undefined;
  /** Last journal sequence, inclusive. Default: the journal's last sequence when the replay begins. */
  readonly toSeq?: number | undefined;
  readonly includeInternal?: boolean | undefined;
  /** Malformed messages in the range are reported here and skipped. */
  readonly onReport?: ((report: SubscriptionReport) => void) | undefined;
  /** Messages pulled at once. Default 512. */
  readonly batch?: number | undefined;
}

function checkSeq(name: string, v: number | undefined): void {
  if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new OptionsError(name, "must be a positive integer");
}

export async function* replay<E>(bus: BusContext<E>, request: ReplayRequest): AsyncGenerator<Delivery<E>, void, undefined> {
  checkSeq("fromSeq", request.fromSeq);
  checkSeq("toSeq", request.toSeq);
  if (request.sessionId !== undefined && request.sessions !== undefined) throw new OptionsError("sessionId", "give sessionId or sessions, not both");
  const sessions = request.sessionId !== undefined ? [request.sessionId] : request.sessions;
  const resolved = resolveFilter(
    bus.namespace,
    {
      enduring: request.loops === undefined ? "all" : { loops: request.loops },
      sessions,
      types: request.types,
      families: request.families,
      includeInternal: request.includeInternal,
    },
    bus.registry,
  );
  const fromSeq = request.fromSeq ?? 1;
  const toSeq = request.toSeq ?? Number.MAX_SAFE_INTEGER;
  if (fromSeq > toSeq) return;
  const decode = { namespace: bus.namespace, registry: bus.registry, maxEventBytes: bus.settings.maxEventBytes, includeInternal: resolved.includeInternal };
  const range = { subjects: resolved.journalSubjects, from: { seq: fromSeq }, toSeq, batch: request.batch ?? 512 };
  for await (const m of readJournalRange(jetstream(bus.nc), bus.stream, range, "starting a replay")) {
    const seq = m.seq;
    const d = decodeMessage(decode, m.subject, m.data);
    if (!d.ok) {
      bus.log.warn({ journalSeq: seq, subject: m.subject, code: d.error.code }, "replay skipped a malformed message");
      request.onReport?.({ kind: "poison", journalSeq: seq, subject: m.subject, error: d.error });
    } else if (!d.skip) {
      yield { event: d.event, journalSeq: seq, subject: m.subject };
    }
  }
}
