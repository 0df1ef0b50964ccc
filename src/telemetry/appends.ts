import { type AppendOutcome, recordAppend } from "./metrics.js";

/**
 * A journal append settled (journal-writer.ts): its outcome, how many sends it took (more
 * than one: ambiguous acks resent), and the time since `startedAt` (ms, Date.now()).
 */
export function appendSettled(error: Error | undefined, ack: { readonly duplicate: boolean } | undefined, attempts: number, startedAt: number): void {
  const outcome: AppendOutcome = error !== undefined ? ((error as { code?: string }).code === "PUBLISH_CONFLICT" ? "conflict" : "failed") : ack?.duplicate ? "duplicate" : "ok";
  recordAppend(outcome, attempts, Math.max(0, Date.now() - startedAt) / 1000);
}
