// Scenario 2b's namespace-wide readers: what reads every shard at once, followed through
// the kill of one shard's leader. Two live subscriptions of every session (one per feed
// mode), a durable of every session restarted across the kill, a live subscription
// resumed afterwards from the positions another took mid-run, and the HTTP gateway
// serving one session of every shard (its SSE stream open across the kill, then its
// journal page and status). Each is compared with what the shards' streams hold.
import { isJetloopError, startGateway, type Delivery, type DurableSubscription, type Jetloop, type JetloopEvent, type RunningGateway, type Subscription } from "../../../../src/index.js";
import { sessionPartition } from "../../../../src/partition/partition.js";
import { frameIds, request, SseReader } from "../../../integration/gateway/http.js";
import { sleep, within } from "../../async.js";
import { row, tally, type FigureRow } from "../figures.js";
import { collect, eventIdOf, type Collected } from "../workload.js";
import { gapSummary, outOfOrder } from "./common.js";

/** Where the streams put one event: its shard, its sequence there, its session. */
export interface Stored {
  readonly id: string;
  readonly shard: number;
  readonly seq: number;
  readonly sessionId: string;
}

/** What a reader got against what the shards hold. */
export interface ReaderFigures {
  readonly published: number;
  readonly delivered: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly unexpected: number;
  /** Deliveries (first ones) whose sequence is not above their session's previous. */
  readonly outOfOrder: number;
  /** Deliveries whose `shard` is not their session's. */
  readonly wrongShard: number;
}

/** Counts one reader's deliveries against `expected` (the events it should get, each once). */
function figuresOf(expected: readonly Stored[], got: readonly { id: string; seq: number; shard: number; sessionId: string }[], shards: number): ReaderFigures {
  const t = tally(
    expected.map((e) => e.id),
    got.map((g) => g.id),
  );
  const seen = new Set<string>();
  const bySession = new Map<string, number[]>();
  let wrongShard = 0;
  for (const g of got) {
    if (g.shard !== sessionPartition(g.sessionId, shards)) wrongShard++;
    if (seen.has(g.id)) continue;
    seen.add(g.id);
    bySession.set(g.sessionId, [...(bySession.get(g.sessionId) ?? []), g.seq]);
  }
  const disorder = [...bySession.values()].reduce((n, seqs) => n + outOfOrder(seqs), 0);
  return { published: t.published, delivered: t.delivered, lost: t.lost, duplicated: t.duplicated, unexpected: t.unexpected, outOfOrder: disorder, wrongShard };
}

/** "A ×2, B": distinct messages with their counts, "none" for none. */
function summarizeErrors(errors: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const e of errors) counts.set(e, (counts.get(e) ?? 0) + 1);
  return [...counts].map(([e, n]) => (n > 1 ? `${e} ×${n}` : e)).join(", ") || "none";
}

const ofDelivery = (d: Delivery<JetloopEvent>) => ({ id: eventIdOf(d.event), seq: d.journalSeq, shard: d.shard, sessionId: d.event.sessionId });

/** A live subscription of every session from the start, in one feed mode. */
class LiveReader {
  private constructor(
    readonly sub: Subscription<JetloopEvent>,
    readonly got: Collected,
    readonly repairs: string[],
  ) {}

  static async open(bus: Jetloop, start: "all" | { after: readonly number[] }, feed: "loop" | "namespace"): Promise<LiveReader> {
    const repairs: string[] = [];
    const sub = await bus.subscribeEvents({ enduring: "all" }, { start, feed, onReport: (r) => void (r.kind === "gap_closed" && repairs.push(r.reason)) });
    return new LiveReader(sub, collect(sub, { keep: true }), repairs);
  }

  figures(expected: readonly Stored[], shards: number): ReaderFigures {
    return figuresOf(expected, this.got.deliveries.map(ofDelivery), shards);
  }
}

/**
 * A durable of every session that acknowledges each delivery before taking the next, and
 * is closed and opened again under its name once. One delivery outstanding per shard
 * (`maxAckPending: 1`): a plain durable with more redelivers what a closed subscription
 * had pulled but not handed after its ack wait, behind newer events of the same session,
 * so only one outstanding keeps each session's order across a restart.
 */
class DurableReader {
  readonly got: { id: string; seq: number; shard: number; sessionId: string; at: number }[] = [];
  /** Events whose ack rejected (they come again: that redelivery is not a duplicate of the bus's making). */
  readonly ackFailed = new Set<string>();
  /** How the reopen went: attempts, and the code and message of each that failed. */
  reopenAttempts = 0;
  readonly reopenErrors: string[] = [];
  /** From the reopen's first attempt to its open subscription. */
  reopenMs = 0;
  #sub!: DurableSubscription<JetloopEvent>;
  #reading!: Promise<void>;
  #stop = false;

  private constructor(
    private readonly bus: Jetloop,
    readonly name: string,
  ) {}

  static async open(bus: Jetloop, name: string): Promise<DurableReader> {
    const r = new DurableReader(bus, name);
    await r.#open();
    return r;
  }

  async #open(): Promise<void> {
    this.#sub = await this.bus.subscribeEvents({ enduring: "all" }, { durable: this.name, ackWaitMs: 2000, maxAckPending: 1 });
    this.#stop = false;
    this.#reading = this.#read(this.#sub);
  }

  async #read(sub: DurableSubscription<JetloopEvent>): Promise<void> {
    try {
      for await (const d of sub) {
        this.got.push({ ...ofDelivery(d), at: Date.now() });
        await d.ack().catch(() => void this.ackFailed.add(eventIdOf(d.event)));
        if (this.#stop) break;
      }
    } catch {
      // A failed subscription: its err() is read at the end.
    }
  }

  /** Stops after the delivery in hand is acknowledged (at most `ms` waiting for one), then closes. */
  async close(ms = 3000): Promise<void> {
    this.#stop = true;
    await within(this.#reading, ms, undefined);
    await this.#sub.close();
    await this.#reading;
  }

  /** Opens it again under the same name, retrying a refusal (typed) until `deadlineMs`. */
  async reopen(deadlineMs: number): Promise<void> {
    const t0 = Date.now();
    const until = t0 + deadlineMs;
    for (;;) {
      this.reopenAttempts++;
      try {
        await this.#open();
        this.reopenMs = Date.now() - t0;
        return;
      } catch (e) {
        this.reopenErrors.push(isJetloopError(e) ? `${e.code} (${e.message})` : `untyped ${e instanceof Error ? e.name : String(e)}`);
        if (!isJetloopError(e) || Date.now() > until) throw e;
        await sleep(200);
      }
    }
  }

  err(): Error | undefined {
    return this.#sub.err();
  }

  figures(expected: readonly Stored[], shards: number): ReaderFigures & { redeliveredAfterFailedAck: number } {
    const f = figuresOf(expected, this.got, shards);
    const counts = new Map<string, number>();
    for (const g of this.got) counts.set(g.id, (counts.get(g.id) ?? 0) + 1);
    const explained = [...counts].filter(([id, n]) => n > 1 && this.ackFailed.has(id)).reduce((s, [, n]) => s + n - 1, 0);
    return { ...f, redeliveredAfterFailedAck: explained };
  }
}

/** The gateway's view of one session: its SSE stream (open across the kill), then its journal page and status. */
interface GatewaySession {
  readonly sessionId: string;
  /** The session's one event that moves its status (the others are decisions). */
  readonly statusEventId: string;
  readonly sse: SseReader;
}

export interface GatewayFigures {
  readonly sse: ReaderFigures;
  readonly pages: ReaderFigures;
  /** Sessions whose status's `last_journal_seq` is their last event's sequence. */
  readonly statusRight: number;
  /** The others: "shard k: got X, stored at Y". */
  readonly statusWrong: string[];
  readonly sessions: number;
}

/** Every namespace-wide reader of the scenario. */
export class NamespaceReaders {
  #mid: readonly number[] = [];
  #gatewaySessions: GatewaySession[] = [];
  #resumed: LiveReader | undefined;

  private constructor(
    private readonly bus: Jetloop,
    readonly loopFeed: LiveReader,
    readonly namespaceFeed: LiveReader,
    readonly durable: DurableReader,
    readonly gateway: RunningGateway,
  ) {}

  /** Opens the readers that follow from the start (before the load). */
  static async open(bus: Jetloop): Promise<NamespaceReaders> {
    const loopFeed = await LiveReader.open(bus, "all", "loop");
    const namespaceFeed = await LiveReader.open(bus, "all", "namespace");
    const durable = await DurableReader.open(bus, "every-shard");
    const gateway = await startGateway(bus, { listen: "127.0.0.1:0" });
    return new NamespaceReaders(bus, loopFeed, namespaceFeed, durable, gateway);
  }

  /**
   * Just before the kill: the loop-feed reader's positions taken, and an SSE stream of each
   * watched session opened from its start (together: the load goes on meanwhile). Resolves
   * with the durable's restart, which runs beside the kill: closed now, opened again once
   * `killed` resolves (while the shard elects).
   */
  async atKill(watched: readonly { sessionId: string; statusEventId: string }[], killed: Promise<void>): Promise<{ restarted: Promise<void> }> {
    this.#mid = this.loopFeed.sub.positions();
    const restarted = this.durable
      .close()
      .then(() => killed)
      .then(() => this.durable.reopen(30_000));
    restarted.catch(() => undefined);
    await Promise.all(watched.map(async (w) => this.#gatewaySessions.push({ ...w, sse: await SseReader.open(`${this.gateway.url}/v1/sessions/${w.sessionId}/events?last_event_id=0`) })));
    return { restarted };
  }

  /** Once every append settled and the streams are audited: waits for every reader to have it all. */
  async settle(stored: readonly Stored[], timeoutMs: number): Promise<void> {
    const ids = stored.map((s) => s.id);
    const rest = stored.filter((s) => s.seq > (this.#mid[s.shard] ?? 0));
    this.#resumed = await LiveReader.open(this.bus, { after: this.#mid }, "loop");
    // One delivery outstanding per shard makes the durable the slowest reader by far (about
    // 150 a second on 2.10 under the soak's load): it is given as long as it keeps going.
    const durableHas = async () => {
      let until = Date.now() + timeoutMs;
      let had = 0;
      for (;;) {
        const has = new Set(this.durable.got.map((g) => g.id)).size;
        if (has >= ids.length || Date.now() > until) return;
        if (has > had) [had, until] = [has, Date.now() + timeoutMs];
        await sleep(100);
      }
    };
    const lastOf = (sid: string) => Math.max(...stored.filter((s) => s.sessionId === sid).map((s) => s.seq));
    await Promise.allSettled([
      this.loopFeed.got.waitForAll(ids, timeoutMs),
      this.namespaceFeed.got.waitForAll(ids, timeoutMs),
      this.#resumed.got.waitForAll(
        rest.map((s) => s.id),
        timeoutMs,
      ),
      durableHas(),
      ...this.#gatewaySessions.map((g) => g.sse.until((t) => t.includes(`id: ${lastOf(g.sessionId)}\n`), timeoutMs)),
    ]);
    // Anything beyond what they should have would come with or right after the rest.
    await sleep(300);
  }

  /** What each reader got, as figures and rows. */
  async figures(stored: readonly Stored[], shardEnds: readonly number[], shards: number) {
    const rest = stored.filter((s) => s.seq > (this.#mid[s.shard] ?? 0));
    const loopFeed = this.loopFeed.figures(stored, shards);
    const namespaceFeed = this.namespaceFeed.figures(stored, shards);
    const resumed = this.#resumed!.figures(rest, shards);
    const durable = this.durable.figures(stored, shards);
    const endsMatch = (p: readonly number[]) => p.length === shardEnds.length && p.every((x, k) => x === shardEnds[k]);
    const positions = { loopFeed: endsMatch(this.loopFeed.sub.positions()), namespaceFeed: endsMatch(this.namespaceFeed.sub.positions()), resumed: endsMatch(this.#resumed!.sub.positions()) };
    const gateway = await this.#gatewayFigures(stored, shards);
    const rows: FigureRow[] = [
      row("namespace-wide live subscriber (loop feed, from the start)", loopFeed, { "out of order": loopFeed.outOfOrder, "wrong shard": loopFeed.wrongShard, "positions() = shard ends": String(positions.loopFeed), "gaps closed from the journal": gapSummary(this.loopFeed.repairs) }),
      row("namespace-wide live subscriber (namespace feed, from the start)", namespaceFeed, { "out of order": namespaceFeed.outOfOrder, "wrong shard": namespaceFeed.wrongShard, "positions() = shard ends": String(positions.namespaceFeed), "gaps closed from the journal": gapSummary(this.namespaceFeed.repairs) }),
      row("namespace-wide live subscriber resumed after positions() taken at the kill", resumed, { "out of order": resumed.outOfOrder, "wrong shard": resumed.wrongShard, "positions() = shard ends": String(positions.resumed), "positions taken": this.#mid.join(", ") }),
      row("namespace-wide durable (acks each; closed at the kill, reopened during the election)", durable, {
        "out of order": durable.outOfOrder,
        "wrong shard": durable.wrongShard,
        "acks failed": this.durable.ackFailed.size,
        "redelivered after a failed ack": durable.redeliveredAfterFailedAck,
        "reopen attempts": this.durable.reopenAttempts,
        "reopen refusals": summarizeErrors(this.durable.reopenErrors),
        "reopened after (ms)": this.durable.reopenMs,
        "got per shard": Array.from({ length: shards }, (_, k) => new Set(this.durable.got.filter((g) => g.shard === k).map((g) => g.id)).size).join(", "),
        "ended with": this.durable.err()?.message ?? "no error",
        "last delivery after the first (s)": this.durable.got.length > 0 ? ((this.durable.got.at(-1)!.at - this.durable.got[0]!.at) / 1000).toFixed(1) : "none",
      }),
      row(`gateway SSE, one session of each shard (open across the kill)`, gateway.sse, { "out of order": gateway.sse.outOfOrder }),
      row(`gateway journal pages of the same sessions (after the kill)`, gateway.pages, {
        "out of order": gateway.pages.outOfOrder,
        "status last_journal_seq right": `${gateway.statusRight} of ${gateway.sessions}${gateway.statusWrong.length > 0 ? ` (${gateway.statusWrong.join("; ")})` : ""}`,
      }),
    ];
    return { loopFeed, namespaceFeed, resumed, durable, positions, gateway, durableErr: this.durable.err(), rows };
  }

  async #gatewayFigures(stored: readonly Stored[], shards: number): Promise<GatewayFigures> {
    const watched = new Set(this.#gatewaySessions.map((g) => g.sessionId));
    const expected = stored.filter((s) => watched.has(s.sessionId));
    const bySeq = (sessionId: string) => new Map(stored.filter((s) => s.sessionId === sessionId).map((s) => [s.seq, s]));
    const framed: Stored[] = [];
    const paged: Stored[] = [];
    let statusRight = 0;
    const statusWrong: string[] = [];
    const unknown = (sessionId: string, seq: number): Stored => ({ id: `unknown ${seq}`, seq, shard: sessionPartition(sessionId, shards), sessionId });
    for (const g of this.#gatewaySessions) {
      const mine = bySeq(g.sessionId);
      for (const seq of frameIds(g.sse.text)) framed.push(mine.get(seq) ?? unknown(g.sessionId, seq));
      const page = await request(`${this.gateway.url}/v1/sessions/${g.sessionId}/journal?limit=1000`);
      const events = page.status === 200 ? (JSON.parse(page.body) as { events: { journal_seq: number }[] }).events : [];
      for (const e of events) paged.push(mine.get(e.journal_seq) ?? unknown(g.sessionId, e.journal_seq));
      const status = await request(`${this.gateway.url}/v1/sessions/${g.sessionId}/status`);
      const last = status.status === 200 ? (JSON.parse(status.body) as { last_journal_seq: number }).last_journal_seq : -1;
      const want = stored.find((s) => s.id === g.statusEventId)?.seq ?? 0;
      if (last === want) statusRight++;
      else statusWrong.push(`shard ${sessionPartition(g.sessionId, shards)}: got ${last} (HTTP ${status.status}), stored at ${want}`);
    }
    return { sse: figuresOf(expected, framed, shards), pages: figuresOf(expected, paged, shards), statusRight, statusWrong, sessions: this.#gatewaySessions.length };
  }

  async close(): Promise<void> {
    for (const g of this.#gatewaySessions) g.sse.close();
    await this.gateway.close();
    for (const r of [this.loopFeed, this.namespaceFeed, this.#resumed]) await r?.sub.close();
    await this.durable.close(0);
  }
}
