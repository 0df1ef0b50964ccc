// What a stream holds, read with the raw manager: the one place for counting its
// messages and its consumers (no vitest here: the scenarios use it outside it).
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";

/** Messages the stream holds now. */
export async function messageCount(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

/** Consumers the stream has now (live subscriptions follow the feed and keep none). */
export async function consumerCount(jsm: JetStreamManager, stream: string): Promise<number> {
  let n = 0;
  for await (const _ of jsm.consumers.list(stream)) n++;
  return n;
}

/**
 * Event id (`Nats-Msg-Id`) → how often the stream holds it, read raw with an ordered
 * consumer (headers only), optionally on one filter subject.
 */
export async function messageIdCounts(js: JetStreamClient, stream: string, filterSubject?: string): Promise<Map<string, number>> {
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All, headers_only: true, ...(filterSubject ? { filter_subjects: filterSubject } : {}) });
  const pending = (await consumer.info(true)).num_pending;
  const counts = new Map<string, number>();
  if (pending === 0) return counts;
  const messages = await consumer.consume();
  let n = 0;
  for await (const m of messages) {
    const id = m.headers?.get("Nats-Msg-Id") ?? "";
    counts.set(id, (counts.get(id) ?? 0) + 1);
    if (++n === pending) break;
  }
  await messages.close();
  return counts;
}
