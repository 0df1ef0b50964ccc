/**
 * Where the shards' leaders are. Every append of a shard goes through its stream's leader,
 * so shards whose leaders share a server share its ceiling; `provision` spreads them (one
 * step-down at a time, asking for the least loaded peer where the server takes a preferred
 * successor, 2.11+; a random re-election before, bounded in rounds) and reports where each
 * leader ended up.
 *
 * Only leaderships move, never streams: an R1 shard's one peer is its leader, placed by the
 * server when the stream was created, and stays where it is (reported, not spread).
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { streamLeaderStepdownSubject } from "../subjects/subjects.js";
import { supports } from "../connection/server-version.js";

/** A shard stream's leader and its peers that could lead it (online and current); leader "" while it has none. */
export interface StreamLeader {
  readonly stream: string;
  readonly leader: string;
  readonly peers: readonly string[];
}

/**
 * Rounds of step-downs before provision settles for the placement it has. Each waits for an
 * election; before 2.11 the successor is random (a move lands on a free peer half the time
 * or better), so a few rounds per shard spread them but for a chance of about 2^-rounds.
 */
const SPREAD_ROUNDS = 12;
const ELECTION_WAIT_MS = 10_000;

/** What provision logs (debug) for each step-down it asks for to spread the leaders. */
export const SPREAD_STEP = "a shard leader stepped down to spread the shards' leaders";

export async function streamLeaders(jsm: JetStreamManager, streams: readonly string[]): Promise<StreamLeader[]> {
  return Promise.all(
    streams.map(async (stream) => {
      const { cluster } = await jsm.streams.info(stream);
      const leader = cluster?.leader ?? "";
      const able = (cluster?.replicas ?? []).filter((r) => !r.offline && r.current).map((r) => r.name);
      return { stream, leader, peers: [...(leader ? [leader] : []), ...able] };
    }),
  );
}

/**
 * The first shard worth moving: its leader's server leads at least two more shards than
 * one of its peers does, with that least loaded peer. With as many servers as shards this
 * ends with every leader on its own server; with fewer, as evenly as the peers allow.
 */
export function crowded(leaders: readonly StreamLeader[]): { stream: string; preferred: string } | undefined {
  const load = new Map<string, number>();
  for (const l of leaders) if (l.leader !== "") load.set(l.leader, (load.get(l.leader) ?? 0) + 1);
  const of = (server: string) => load.get(server) ?? 0;
  for (const l of leaders) {
    if (l.leader === "") continue;
    const least = l.peers.filter((p) => p !== l.leader).sort((a, b) => of(a) - of(b) || a.localeCompare(b))[0];
    if (least !== undefined && of(least) + 1 < of(l.leader)) return { stream: l.stream, preferred: least };
  }
  return undefined;
}

async function electedAnew(jsm: JetStreamManager, stream: string, before: string): Promise<void> {
  const until = Date.now() + ELECTION_WAIT_MS;
  while (Date.now() < until) {
    const [now] = await streamLeaders(jsm, [stream]);
    if (now && now.leader !== "" && now.leader !== before) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Steps crowded leaders down until none is (`crowded`) or SPREAD_ROUNDS pass, and returns
 * the placement it ended with. A placement it cannot improve (fewer servers than shards,
 * R1 shards, a peer offline) is reported, not refused; a step-down the server refuses is
 * logged and ends the spreading, the streams keep serving where they are.
 */
export async function spreadLeaders(nc: NatsConnection, jsm: JetStreamManager, streams: readonly string[], serverVersion: string, log: Logger): Promise<StreamLeader[]> {
  let leaders = await streamLeaders(jsm, streams);
  const preferred = supports(serverVersion, "preferredStepdown");
  for (let round = 0; round < SPREAD_ROUNDS; round++) {
    const move = crowded(leaders);
    if (!move) break;
    const before = leaders.find((l) => l.stream === move.stream)!.leader;
    // Before 2.11 the server picks the successor itself: another round tries again.
    const body = preferred ? JSON.stringify({ placement: { preferred: move.preferred } }) : "";
    try {
      const reply = (await nc.request(streamLeaderStepdownSubject(move.stream), body, { timeout: ELECTION_WAIT_MS })).json<{ error?: { description?: string } }>();
      if (reply.error) throw new Error(`the server refused the step-down: ${reply.error.description ?? "no reason given"}`);
      await electedAnew(jsm, move.stream, before);
      log.debug({ stream: move.stream, from: before, preferred: preferred ? move.preferred : undefined }, SPREAD_STEP);
    } catch (e) {
      log.warn({ err: e, stream: move.stream }, "a shard leader's step-down failed; leaders left as they are");
      break;
    }
    leaders = await streamLeaders(jsm, streams);
  }
  return leaders;
}
