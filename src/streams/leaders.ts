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
import { supports } from "../subjects/server-features.js";

/** A shard stream's leader and its peers that could lead it (online); leader "" while it has none. */
export interface StreamLeader {
  readonly stream: string;
  readonly leader: string;
  readonly peers: readonly string[];
  /** A leader elected and every replica online and current: the placement will not move by itself. */
  readonly settled: boolean;
}

/**
 * Rounds of step-downs before provision settles for the placement it has: each waits for an
 * election. With a preferred successor (2.11+) a move is final, so a round per shard is
 * enough (twice that for refusals). Before 2.11 the successor is random (a move lands on a
 * free peer half the time or better; 2.10 took 1 to 8 moves for 3 shards in the
 * scenario's runs), so more, bounded for a large S.
 */
function spreadRounds(shards: number, preferred: boolean): number {
  return Math.min(64, Math.max(4, (preferred ? 2 : 8) * shards));
}
const ELECTION_WAIT_MS = 10_000;
/** How long a round waits for the last election's replicas to be current again before it judges the placement. */
const SETTLE_WAIT_MS = 5_000;

/** What provision logs (debug) for each step-down it asks for to spread the leaders. */
export const SPREAD_STEP = "a shard leader stepped down to spread the shards' leaders";

export async function streamLeaders(jsm: JetStreamManager, streams: readonly string[]): Promise<StreamLeader[]> {
  return Promise.all(
    streams.map(async (stream) => {
      const { cluster } = await jsm.streams.info(stream);
      const leader = cluster?.leader ?? "";
      const replicas = cluster?.replicas ?? [];
      const online = replicas.filter((r) => !r.offline).map((r) => r.name);
      return { stream, leader, peers: [...(leader ? [leader] : []), ...online], settled: leader !== "" && replicas.every((r) => !r.offline && r.current) };
    }),
  );
}

/** The leaders once every stream is settled, or as they are after SETTLE_WAIT_MS. */
async function settledLeaders(jsm: JetStreamManager, streams: readonly string[]): Promise<StreamLeader[]> {
  const until = Date.now() + SETTLE_WAIT_MS;
  for (;;) {
    // Mid-election a stream's info can go unanswered: that is not settled yet.
    if (Date.now() >= until) return streamLeaders(jsm, streams);
    const leaders = await streamLeaders(jsm, streams).catch(() => undefined);
    if (leaders?.every((l) => l.settled)) return leaders;
    await new Promise((r) => setTimeout(r, 100));
  }
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
    const [now] = (await streamLeaders(jsm, [stream]).catch(() => undefined)) ?? [];
    if (now && now.leader !== "" && now.leader !== before) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Steps crowded leaders down until none is (`crowded`) or its rounds pass, and returns
 * the placement it ended with. Each round judges a settled placement (an election just
 * held leaves replicas catching up; 2.10 has been seen to report a leader that was about
 * to change). A placement it cannot improve (fewer servers than shards, R1 shards, a peer
 * offline) is reported, not refused; a step-down the server refuses is logged and tried
 * again in a later round; the streams keep serving wherever their leaders are.
 */
export async function spreadLeaders(nc: NatsConnection, jsm: JetStreamManager, streams: readonly string[], serverVersion: string, log: Logger): Promise<StreamLeader[]> {
  const preferred = supports(serverVersion, "preferredStepdown");
  let leaders = await settledLeaders(jsm, streams);
  for (let round = 0, rounds = spreadRounds(streams.length, preferred); round < rounds; round++) {
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
      log.warn({ err: e, stream: move.stream }, "a shard leader's step-down failed; trying again in the next round");
    }
    leaders = await settledLeaders(jsm, streams);
  }
  return leaders;
}
