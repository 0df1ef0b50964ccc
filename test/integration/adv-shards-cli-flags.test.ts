// Adversary: `jetloop parked` and `jetloop consumers` on a real namespace of 3 journal shards,
// with every combination of their flags (generated). The rule: a combination the help does
// not describe — a flag the action does not take, a selection flag given twice, a
// contradictory pair, a number out of form or a shard out of range — is refused with a usage
// error (exit 2) and changes nothing; never read as another selection (a `list --seq N` that
// lists everything, a `drop --seq 1 --seq 2` that drops 2).
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { jetloopIn } from "../harness/cli.js";

const S = 3;
let bus: Jetloop;
let namespace: string;
const durable = `d${newId().slice(-8)}`;
const subs: DurableSubscription<JetloopEvent>[] = [];
const base = () => ["--server", natsServers().join(","), "--namespace", namespace];

const step = (sessionId: string): JetloopEvent =>
  createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

function sessionIn(shard: number): string {
  for (;;) {
    const s = newId();
    if (sessionPartition(s, S) === shard) return s;
  }
}

beforeAll(async () => {
  namespace = uniqueNamespace();
  bus = await connect({ servers: natsServers(), namespace, shards: S });
  await bus.provision();
  const [a, b, filler2] = [sessionIn(0), sessionIn(1), sessionIn(2)];
  for (const s of [a, b]) {
    const sub = await bus.session(s).subscribeEvents({ enduring: "all" }, { durable, start: "new" });
    subs.push(sub);
    void (async () => {
      for await (const d of sub) d.term("parked by the test");
    })().catch(() => undefined);
  }
  // Shard 2 has an event of the entries' sequence too (1), of a session the durable does not read.
  await bus.publish(step(filler2));
  await bus.publish(step(a));
  await bus.publish(step(b));
  await waitFor("both parked", async () => (await bus.parked.list(durable)).length === 2, 20_000);
}, 60_000);

afterAll(async () => {
  for (const s of subs) await s.close();
  const jsm = await jetstreamManager(await connectTest());
  for (let k = 0; k < S; k++) await jsm.streams.delete(`${bus.stream}_${k}_of_${S}`).catch(() => undefined);
  await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
});

type Action = "list" | "show" | "drop" | "replay";
interface Combo {
  action: Action;
  owner: string[];
  seq: string[];
  shard: string[];
  all: boolean;
}

const SEQ = "1"; // the entries' journal sequence in shards 0 and 1
const owners = [[], ["--durable", "D"], ["--group", "g"], ["--durable", "D", "--group", "g"], ["--durable", "D", "--durable", "other"], ["--group", "g", "--group", "h"]];
const seqs = [[], ["--seq", SEQ], ["--seq", "0"], ["--seq", "1.0"], ["--seq", "+1"], ["--seq", "2", "--seq", SEQ], [`--seq=${SEQ}`, "--seq", SEQ]];
const shards = [[], ["--shard", "0"], ["--shard", "1"], ["--shard", "2"], ["--shard", "3"], ["--shard", "01"], ["--shard", "-1"], ["--shard", "0", "--shard", "1"]];

function* combos(): Generator<Combo> {
  for (const action of ["list", "show", "drop", "replay"] as const)
    for (const owner of owners) for (const seq of seqs) for (const shard of shards) for (const all of [false, true]) yield { action, owner, seq, shard, all };
}

/** Why the rule refuses a combination, or undefined when it is a selection the help describes. */
function refusal(c: Combo): string | undefined {
  const repeated = (flags: string[]) => flags.filter((f) => f.startsWith("--")).map((f) => f.split("=")[0]).some((f, i, all) => all.indexOf(f) !== i);
  if (repeated([...c.owner, ...c.seq, ...c.shard])) return "a flag given twice";
  if (c.owner.includes("--durable") && c.owner.includes("--group")) return "both owners";
  const seq = c.seq.length === 0 ? undefined : c.seq[1]!;
  const shard = c.shard.length === 0 ? undefined : c.shard[1]!;
  if (seq !== undefined && !/^[1-9]\d*$/.test(seq)) return "a seq out of form";
  if (shard !== undefined && !/^[0-2]$/.test(shard)) return "a shard out of form or range";
  if (shard !== undefined && seq === undefined) return "--shard without --seq";
  if (c.action === "list") return seq !== undefined || c.all ? "list takes no selection" : undefined;
  if (c.owner.length === 0) return "no owner";
  if (c.action === "show") {
    if (seq === undefined || c.all) return "show takes --seq, not --all";
  } else if ((seq === undefined) === !c.all) return "exactly one of --seq and --all";
  // The durable has entries of that sequence in shards 0 and 1: a sequence alone is ambiguous.
  if (c.owner.includes("--durable") && seq === SEQ && shard === undefined) return "a sequence of two shards";
  return undefined;
}

const argv = (c: Combo) => ["parked", c.action, ...c.owner.map((f) => (f === "D" ? durable : f)), ...c.seq, ...c.shard, ...(c.all ? ["--all"] : []), ...base()];

describe("parked and consumers on a namespace of 3 shards, every flag combination", () => {
  it("every combination the help does not describe is refused with a usage error and changes nothing", async () => {
    const before = (await bus.parked.list(durable)).map((e) => [e.shard.index, e.journalSeq, e.state]);
    expect(before).toEqual([
      [0, 1, "held"],
      [1, 1, "held"],
    ]);
    let refused = 0;
    const wrong: string[] = [];
    for (const c of combos()) {
      const why = refusal(c);
      if (why === undefined) continue; // drop and replay would change the store: the accepted ones are read below
      refused++;
      const r = await jetloopIn(argv(c));
      if (r.code !== 2 || !r.stderr.includes("OPTIONS_INVALID")) wrong.push(`${argv(c).slice(0, -4).join(" ")} (${why}): exit ${r.code} ${r.stderr.split("\n")[0]}`);
    }
    expect((await bus.parked.list(durable)).map((e) => [e.shard.index, e.journalSeq, e.state])).toEqual(before);
    expect(wrong).toEqual([]);
    expect(refused).toBeGreaterThan(1000);
  }, 300_000);

  it("the accepted reads select what they say", async () => {
    for (const c of combos()) {
      if (refusal(c) !== undefined || (c.action !== "list" && c.action !== "show")) continue;
      const r = await jetloopIn([...argv(c), "--json"]);
      const lines = r.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { durable: string; shard?: number; journal_seq: number });
      const mine = lines.filter((l) => l.durable === durable);
      if (c.action === "list") {
        expect(r.code).toBe(0);
        expect(mine.map((l) => l.shard)).toEqual(c.owner.includes("--group") ? [] : [0, 1]);
      } else if (c.owner.includes("--group")) {
        expect(r.code).toBe(1); // nothing parked for the group
      } else {
        const shard = Number(c.shard[1]);
        expect(r.code).toBe(shard === 2 ? 1 : 0);
        expect(mine.map((l) => [l.shard, l.journal_seq])).toEqual(shard === 2 ? [] : [[shard, 1]]);
      }
    }
  }, 120_000);

  it("consumers takes no selection flags and no value flag twice", async () => {
    for (const args of [["--shard", "0"], ["--shards", "3"], ["--durable", durable], ["--seq", "1"], ["--all"], ["--stream", "a", "--stream", "b"], ["--namespace", "x"], ["extra"]]) {
      const r = await jetloopIn(["consumers", ...base(), ...args]);
      expect({ args, code: r.code, usage: r.stderr.includes("OPTIONS_INVALID") }).toEqual({ args, code: 2, usage: true });
    }
    const ok = await jetloopIn(["consumers", ...base()]);
    expect(ok.code).toBe(0);
    for (const k of [0, 1]) expect(ok.stdout).toMatch(new RegExp(`^${durable} +shard=${k} .*parked=1 `, "m"));
  }, 60_000);
});
