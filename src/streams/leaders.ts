/**
 * Where the shards' leaders are. Every append of a shard goes through its stream's leader,
 * so shards whose leaders share a server share its ceiling; `provision` spreads them (one
 * step-down at a time, asking for a server that leads none where the server takes a
 * preferred successor, 2.11+) and reports where each leader ended up.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { streamLeaderStepdownSubject } from "../subjects/subjects.js";
import { supports } from "../connection/server-version.js";

/** A shard stream's leader and its peers, as the server reports them; leader "" while it has none. */
export interface StreamLeader {
  readonly stream: string;
  readonly leader: string;
  readonly peers: readonly string[];
}

/** Rounds of step-downs before provision settles for the placement it has (each waits for an election). */
const SPREAD_ROUNDS = 12;
const ELECTION_WAIT_MS = 10_000;

export async function streamLeaders(jsm: JetStreamManager, streams: readonly string[]): Promise<StreamLeader[]> {
  return Promise.all(
    streams.map(async (stream) => {
      const { cluster } = await jsm.streams.info(stream);
      const leader = cluster?.leader ?? "";
      return { stream, leader, peers: [...(leader ? [leader] : []), ...(cluster?.replicas ?? []).map((r) => r.name)] };
    }),
  );
}

/** The streams whose leader shares its server with an earlier stream's, and a peer of it that leads none. */
function crowded(leaders: readonly StreamLeader[]): { stream: string; preferred: string | undefined }[] {
  const leading = new Set(leaders.map((l) => l.leader).filter((l) => l !== ""));
  const seen = new Set<string>();
  const out: { stream: string; preferred: string | undefined }[] = [];
  for (const l of leaders) {
    if (l.leader === "") continue;
    if (seen.has(l.leader)) {
      const free = l.peers.filter((p) => !leading.has(p));
      if (free.length > 0) out.push({ stream: l.stream, preferred: free[0] });
    }
    seen.add(l.leader);
  }
  return out;
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
 * Steps crowded leaders down until no two shards share a leader's server while a peer
 * leads none, or SPREAD_ROUNDS pass (a cluster smaller than the shard count keeps some
 * together: that is reported, not refused). Returns the placement it ended with.
 */
export async function spreadLeaders(nc: NatsConnection, jsm: JetStreamManager, streams: readonly string[], serverVersion: string, log: Logger): Promise<StreamLeader[]> {
  let leaders = await streamLeaders(jsm, streams);
  for (let round = 0; round < SPREAD_ROUNDS; round++) {
    const move = crowded(leaders)[0];
    if (!move) break;
    const before = leaders.find((l) => l.stream === move.stream)!.leader;
    // Before 2.11 the server picks the successor itself: another round tries again.
    const body = move.preferred !== undefined && supports(serverVersion, "preferredStepdown") ? JSON.stringify({ placement: { preferred: move.preferred } }) : "";
    try {
      await nc.request(streamLeaderStepdownSubject(move.stream), body, { timeout: ELECTION_WAIT_MS });
      await electedAnew(jsm, move.stream, before);
    } catch (e) {
      log.warn({ err: e, stream: move.stream }, "a shard leader's step-down failed; leaders left as they are");
      break;
    }
    leaders = await streamLeaders(jsm, streams);
  }
  return leaders;
}
