/**
 * The connection state the badge shows, from the two links the page keeps: the session
 * list's polling and the open session's event stream. Pure: the rules are unit-tested.
 *
 * - connecting: nothing has answered yet;
 * - live: the last list request succeeded and the session's stream (if one is open) is open;
 * - reconnecting: a retry is under way after a failure (or EventSource is reconnecting);
 * - disconnected: the last attempt failed; the next one is scheduled;
 * - not_provisioned: the gateway says the namespace has no stream (`jetloop provision`).
 */
export type LinkState = "connecting" | "live" | "reconnecting" | "disconnected" | "not_provisioned";

const RANK: Record<LinkState, number> = { live: 0, connecting: 1, reconnecting: 2, disconnected: 3, not_provisioned: 4 };

/** The badge's state: the worse of the two links. */
export function overall(list: LinkState, stream: LinkState | undefined): LinkState {
  if (stream === undefined) return list;
  return RANK[stream] > RANK[list] ? stream : list;
}

export const BADGE_TEXT: Record<LinkState, string> = {
  connecting: "connecting",
  live: "live",
  reconnecting: "reconnecting",
  disconnected: "disconnected",
  not_provisioned: "not provisioned",
};

/** Delay before retry `attempt` (1, 2, …): doubling from 1 s, capped at 15 s. */
export function backoffMs(attempt: number): number {
  return Math.min(15_000, 1000 * 2 ** Math.max(0, Math.min(attempt - 1, 4)));
}
