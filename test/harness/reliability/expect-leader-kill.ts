// What the leader-kill scenario must show wherever its cluster runs (processes, containers,
// docker-compose.yml): a new leader, no untyped failure, every event acknowledged and
// stored exactly once, the live subscribers complete (the namespace feed's in order), the replicas current again.
import { expect } from "vitest";
import type { LeaderKillResult } from "./scenarios/leader-kill.js";

export function expectNothingLost(r: LeaderKillResult, events: number): void {
  expect(r.newLeader).not.toBe("");
  expect(r.newLeader).not.toBe(r.oldLeader);
  expect(r.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
  expect(r.republished.every((o) => o.status === "acked")).toBe(true);
  // Every acknowledged event is stored, each exactly once: message count == published.
  const acked = new Set([...r.outcomes, ...r.republished].filter((o) => o.status === "acked").map((o) => o.eventId));
  expect(acked.size).toBe(events);
  expect(r.journal).toMatchObject({ published: events, lost: 0, duplicated: 0, unexpected: 0, messages: events });
  expect(r.ordered).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0 });
  expect(r.namespaceFeed).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0 });
  expect(r.replicasCurrent).toBe(true);
}
