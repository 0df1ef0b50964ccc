/**
 * Removing a plain durable: its consumer on every journal shard's stream and its replay
 * consumer on the parked store, the two consumers a durable subscription makes. What it
 * parked stays in the parked store (`parked list|drop` reach it by name). A subscription
 * still open on the durable would make its consumer again: close those first.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { OptionsError } from "../errors.js";
import { DURABLE, replayConsumerName } from "../subjects/subjects.js";
import type { JournalShard } from "./shards.js";

/** What removing a durable removed (`bus.removeDurable`, `jetloop remove-durable`). */
export interface RemovedDurable {
  /** Each consumer removed, as `stream/consumer`; empty when the namespace had no such durable. */
  readonly removed: readonly string[];
}

export async function removeDurable(jsm: JetStreamManager, journals: readonly { readonly stream: string; readonly shard: JournalShard }[], parkedStream: string, name: string): Promise<RemovedDurable> {
  if (typeof name !== "string" || !DURABLE.test(name)) throw new OptionsError("durable", `${JSON.stringify(name)} must be 1-64 characters of [A-Za-z0-9_-]`);
  const targets = journals.flatMap(({ stream, shard }) => [
    { stream, consumer: name },
    { stream: parkedStream, consumer: replayConsumerName(name, shard) },
  ]);
  const removed: string[] = [];
  // One replay consumer serves every shard of an unsplit namespace: asked once.
  for (const t of new Map(targets.map((t) => [`${t.stream}/${t.consumer}`, t])).values()) {
    if (await deleteIfThere(jsm, t.stream, t.consumer)) removed.push(`${t.stream}/${t.consumer}`);
  }
  return { removed };
}

async function deleteIfThere(jsm: JetStreamManager, stream: string, consumer: string): Promise<boolean> {
  try {
    return await jsm.consumers.delete(stream, consumer);
  } catch (e) {
    // Already gone (or never made), or a store never provisioned: nothing of it to remove.
    if (e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.ConsumerNotFound || e.code === JetStreamApiCodes.StreamNotFound)) return false;
    throw e;
  }
}
