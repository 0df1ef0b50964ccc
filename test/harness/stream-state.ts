// What a stream holds, read with the raw manager: the one place for counting its
// messages and its consumers (no vitest here: the scenarios use it outside it).
import type { JetStreamManager } from "@nats-io/jetstream";

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
