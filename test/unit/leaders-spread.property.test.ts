// The rule provision spreads shard leaders by (src/streams/leaders.ts `crowded`): a shard
// moves while its leader's server leads at least two more shards than one of its peers.
// Generated clusters (servers, shards, peer sets, where the leaders start), each move applied
// as the server would with a preferred successor: the spreading ends, balanced as the peers
// allow, and with every server a peer of every shard and no more shards than servers, every
// leader is on a server of its own.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crowded, type StreamLeader } from "../../src/streams/leaders.js";

const placement = fc.integer({ min: 1, max: 6 }).chain((servers) =>
  fc.record({
    servers: fc.constant(servers),
    replicas: fc.integer({ min: 1, max: Math.min(3, servers) }),
    shards: fc.array(fc.record({ peers: fc.shuffledSubarray([...Array(servers).keys()], { minLength: servers, maxLength: servers }), leaderless: fc.boolean() }), { minLength: 1, maxLength: 10 }),
  }),
);

function leadersOf(p: { replicas: number; shards: { peers: number[]; leaderless: boolean }[] }): StreamLeader[] {
  return p.shards.map((s, i) => {
    const peers = s.peers.slice(0, p.replicas).map((n) => `n${n}`);
    // A shard without a leader (mid-election) is never moved and never counted.
    return { stream: `s${i}`, leader: s.leaderless && i > 0 ? "" : peers[0]!, peers: s.leaderless && i > 0 ? peers.slice(1) : peers, settled: !(s.leaderless && i > 0) };
  });
}

const load = (ls: readonly StreamLeader[], server: string) => ls.filter((l) => l.leader === server).length;

describe("spreading shard leaders (crowded)", () => {
  it("ends, with no leader's server leading two more shards than a peer of that shard", () => {
    fc.assert(
      fc.property(placement, (p) => {
        let ls = leadersOf(p);
        let moves = 0;
        for (let move = crowded(ls); move; move = crowded(ls)) {
          // The moved shard's server loses one, the preferred peer gains one: strictly more even.
          expect(load(ls, move.preferred) + 1).toBeLessThan(load(ls, ls.find((l) => l.stream === move.stream)!.leader));
          ls = ls.map((l) => (l.stream === move.stream ? { ...l, leader: move.preferred } : l));
          expect(++moves).toBeLessThanOrEqual(p.shards.length * p.shards.length);
        }
        for (const l of ls) if (l.leader !== "") for (const peer of l.peers) expect(load(ls, peer) + 1).toBeGreaterThanOrEqual(load(ls, l.leader));
        const led = ls.filter((l) => l.leader !== "");
        if (p.replicas === p.servers && led.length <= p.servers) expect(new Set(led.map((l) => l.leader)).size).toBe(led.length);
      }),
      { numRuns: 500 },
    );
  });

  it("moves no R1 shard (its one peer is its leader)", () => {
    const ls: StreamLeader[] = [0, 1, 2].map((i) => ({ stream: `s${i}`, leader: "n0", peers: ["n0"], settled: true }));
    expect(crowded(ls)).toBeUndefined();
  });
});
