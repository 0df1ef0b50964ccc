import type { NatsConnection } from "@nats-io/transport-node";

/**
 * The inbox prefix the connection was opened with (`natsOptions.inboxPrefix`; default
 * `_INBOX`). Replies jetloop asks for go below it: restricted users are often allowed only
 * their own prefix.
 */
export function inboxPrefixOf(nc: NatsConnection): string | undefined {
  return (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}
