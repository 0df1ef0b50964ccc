// Scenario: a partitioned durable group of three member processes (group-member-child.ts)
// over many sessions, handlers with random delays; one member SIGKILLed and one added
// mid-run. Counted: per-session order (no event handled before an earlier one of its
// session was done), loss, duplicates (only the killed member's unsettled deliveries),
// and how long the killed member's partitions took to move.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { connect, createEvent, newId, type JetloopEvent } from "../../../../src/index.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../../../src/streams/declared.js";
import { makeTempDir, removeTempDir } from "../../server.js";
import { waitFor } from "../../async.js";
import { type Child, killAll, readRecordLines, startChild } from "../child-process.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface GroupOptions {
  readonly servers: string[];
  readonly serverVersion: string;
  readonly sessions: number;
  readonly eventsPerSession: number;
  readonly partitions: number;
  readonly maxDelayMs: number;
  readonly leaseMs: number;
  readonly ackWaitMs: number;
}

export const GROUP = { id: "14-partitioned-group", title: "Partitioned durable group: 3 member processes, one SIGKILLed and one added mid-run" } as const;

interface Handling {
  readonly phase: "S" | "E";
  readonly seq: number;
  readonly session: string;
  readonly id: string;
  readonly count: number;
  readonly at: number;
  readonly member: string;
}

export interface GroupResult {
  readonly record: ScenarioRecord;
  readonly all: ReturnType<typeof tally>;
  /** Handlings started before an earlier event of their session was done. */
  readonly orderViolations: number;
  /** Duplicated event ids the killed member had not started: must be none. */
  readonly foreignDuplicates: number;
  /** From the kill until live members owned every partition again (ms). */
  readonly moveMs: number;
  /** Events the added member handled. */
  readonly addedHandled: number;
  /** The killed member's partitions at the kill. */
  readonly killedOwned: number;
  readonly duplicated: number;
}

/** Handlings that began before every earlier event of the same session had finished once. */
export function orderViolations(handlings: readonly Handling[]): number {
  const bySession = new Map<string, Handling[]>();
  for (const h of handlings) (bySession.get(h.session) ?? bySession.set(h.session, []).get(h.session)!).push(h);
  let bad = 0;
  for (const hs of bySession.values()) {
    hs.sort((a, b) => a.at - b.at || (a.phase === "E" ? -1 : 1));
    const done = new Set<number>();
    const seqs = [...new Set(hs.map((h) => h.seq))].sort((a, b) => a - b);
    for (const h of hs) {
      if (h.phase === "E") done.add(h.seq);
      else if (seqs.some((s) => s < h.seq && !done.has(s))) bad++;
    }
  }
  return bad;
}

function step(sessionId: string, n: number): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: String(n) }] }] });
}

export async function groupScenario(ctx: ScenarioContext, o: GroupOptions): Promise<GroupResult> {
  const t0 = Date.now();
  const ns = scenarioNamespace("grp");
  const group = "billing";
  const dir = makeTempDir("jetloop-group-");
  const base = {
    JETLOOP_SERVERS: o.servers.join(","),
    JETLOOP_NS: ns,
    JETLOOP_GROUP: group,
    JETLOOP_MAX_DELAY_MS: String(o.maxDelayMs),
    JETLOOP_LEASE_MS: String(o.leaseMs),
    JETLOOP_ACK_WAIT_MS: String(o.ackWaitMs),
  };
  const bus = await connect({ servers: o.servers, namespace: ns });
  const children: ChildProcess[] = [];
  const members = ["m1", "m2", "m3", "m4"];
  const file = (m: string) => join(dir, `${m}.log`);
  const start = async (m: string, later = false): Promise<Child> => {
    const c = startChild("group-member-child.ts", { ...base, JETLOOP_MEMBER: m, JETLOOP_OUT: file(m), ...(later ? { JETLOOP_JOIN_ON_SIGNAL: "1" } : {}) });
    children.push(c.child);
    await c.ready;
    return c;
  };
  try {
    await bus.provision({ partitions: o.partitions });
    const total = o.sessions * o.eventsPerSession;
    const [, , m3, m4] = await Promise.all([start("m1"), start("m2"), start("m3"), start("m4", true)]);
    const sessions = Array.from({ length: o.sessions }, () => newId());
    const published: string[] = [];
    const read = (): Handling[] =>
      members.flatMap((m) =>
        readRecordLines(file(m))
          .filter((f) => f[0] === "S" || f[0] === "E")
          .map(([phase, seq, session, id, count, at]) => ({ phase: phase as "S" | "E", seq: Number(seq), session: session!, id: id!, count: Number(count), at: Number(at), member: m })),
      );
    const doneIds = () => new Set(read().filter((h) => h.phase === "E").map((h) => h.id));
    const ownedAt = (m: string) => readRecordLines(file(m)).filter((f) => f[0] === "O").map(([, at, ps]) => ({ at: Number(at), owned: ps === "-" ? [] : ps!.split(",").map(Number) }));

    // Publish in rounds of one event per session, so every session's events interleave with the others'.
    const publishing = (async () => {
      for (let i = 0; i < o.eventsPerSession; i++) {
        const events = sessions.map((s) => step(s, i));
        for (const e of events) published.push(e.eventId);
        await bus.publishAll(events);
      }
    })();
    await waitFor("a third of the work to be done", () => doneIds().size >= total / 3, 120_000, 20);
    const killedOwned = ownedAt("m3").at(-1)?.owned ?? [];
    const killedAt = performance.timeOrigin + performance.now();
    m3.child.kill("SIGKILL");
    m4.child.kill("SIGUSR2");
    await m3.exited;
    await publishing;
    await waitFor("every event to be handled", () => doneIds().size >= total, 180_000, 50);

    // When did the live members own every partition again?
    const live = ["m1", "m2", "m4"];
    const changes = live.flatMap((m) => ownedAt(m).map((c) => ({ ...c, m }))).sort((a, b) => a.at - b.at);
    const current = new Map<string, number[]>();
    let movedAt = Number.NaN;
    for (const c of changes) {
      current.set(c.m, c.owned);
      const covered = new Set([...current.values()].flat());
      if (c.at > killedAt && covered.size === o.partitions && Number.isNaN(movedAt)) movedAt = c.at;
      if (covered.size !== o.partitions) movedAt = Number.NaN;
    }
    const moveMs = Math.round(movedAt - killedAt);

    const handlings = read();
    const started = handlings.filter((h) => h.phase === "S");
    const all = tally(published, [...new Map(started.map((h) => [`${h.id} ${h.member} ${h.count}`, h.id])).values()]);
    const killedIds = new Set(started.filter((h) => h.member === "m3").map((h) => h.id));
    const counts = new Map<string, number>();
    for (const h of started) counts.set(h.id, (counts.get(h.id) ?? 0) + 1);
    const foreignDuplicates = [...counts].filter(([id, n]) => n > 1 && !killedIds.has(id)).length;
    const violations = orderViolations(handlings);
    const per = (m: string) => {
      const ids = started.filter((h) => h.member === m).map((h) => h.id);
      return row(`member ${m}${m === "m3" ? " (SIGKILLed)" : m === "m4" ? " (added)" : ""}`, { ...tally(published, ids), lost: null });
    };
    const r = record(
      ctx,
      GROUP.id,
      GROUP.title,
      o.serverVersion,
      t0,
      [...members.map(per), row("the group", all, { "handled before an earlier event of its session was done": violations, "duplicates not the killed member's": foreignDuplicates })],
      {
        sessions: o.sessions,
        "events per session": o.eventsPerSession,
        partitions: o.partitions,
        "handler delay (ms, random up to)": o.maxDelayMs,
        "lease (ms)": o.leaseMs,
        "ack wait (ms)": o.ackWaitMs,
        "partitions of the killed member": killedOwned.length,
        "partitions moved after the kill (ms)": moveMs,
      },
    );
    return { record: r, all, orderViolations: violations, foreignDuplicates, moveMs, killedOwned: killedOwned.length, duplicated: all.duplicated, addedHandled: started.filter((h) => h.member === "m4").length };
  } finally {
    killAll(children);
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const jsm = await jetstreamManager(bus.nc, { checkAPI: false });
    for (const s of [defaultPartitionedStreamName(ns), defaultMembersStreamName(ns), bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
    await bus.close();
    if (process.env.JETLOOP_KEEP_GROUP_DIR) process.stderr.write(`kept ${dir}\n`);
    else removeTempDir(dir);
  }
}
