// The command line against a real server: in-process (runCli, the code main.ts runs) where
// a process adds nothing but seconds; as a process for the entry point, the demo (it forks
// its answerer) and the long-running commands stopped like Ctrl-C.
import { execSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type JetloopEvent } from "../../src/index.js";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { jetloop, jetloopIn, jetloopUntil } from "../harness/cli.js";
import { Reader } from "../harness/reader.js";
import { waitFor } from "../harness/async.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";

describe("jetloop CLI", () => {
  it("runs as a process: help exits 0, no command or bad usage exits 2 with the usage", async () => {
    // Every command's help and usage errors, in-process: test/unit/cli.test.ts.
    const help = await jetloop(["replay", "--help"]);
    expect([help.code, help.stdout.includes("jetloop replay --session ID")]).toEqual([0, true]);
    expect((await jetloop([])).code).toBe(2);
    const bad = await jetloop(["replay", "--server", natsUrl()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--session is required");
    expect(bad.stderr).toContain("jetloop replay --session ID");
  }, 120_000);

  it("gateway refuses a public address without authentication (naming the flags), and a token variable that is not set", async () => {
    const open = await jetloopIn(["gateway", "--listen", "0.0.0.0:0", "--server", natsUrl(), "--namespace", uniqueNamespace()]);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/^jetloop gateway: OPTIONS_INVALID: --listen 0\.0\.0\.0:0 is not a loopback address: add --auth-token-env VAR .* or --insecure-public-bind/);
    expect(open.stderr).not.toContain("insecurePublicBind");
    const unset = await jetloopIn(["gateway", "--auth-token-env", "JETLOOP_TEST_UNSET_TOKEN", "--server", natsUrl()]);
    expect([unset.code, unset.stderr.includes("JETLOOP_TEST_UNSET_TOKEN")]).toEqual([2, true]);
  }, 60_000);

  it("gateway checks its caps before connecting: headers of at least 1 KiB, connections and page bytes positive", async () => {
    for (const [flag, value, option] of [
      ["--max-header-bytes", "512", "maxHeaderBytes"],
      ["--max-header-bytes", "2097152", "maxHeaderBytes"],
      ["--max-page-bytes", "100", "maxPageBytes"],
      ["--max-connections", "0", "max-connections"],
      ["--max-pipelined-requests", "0", "max-pipelined-requests"],
      ["--max-pipelined-requests", "1025", "maxPipelinedRequests"],
      ["--nats-max-pending", "1024", "natsMaxPendingBytes"],
    ] as const) {
      const r = await jetloopIn(["gateway", "--listen", "127.0.0.1:0", flag, value, "--server", "nats://127.0.0.1:1"]);
      expect([flag, value, r.code, r.stderr]).toEqual([flag, value, 2, expect.stringContaining(option)]);
    }
  }, 60_000);

  it("every command on a namespace that is not provisioned says NOT_PROVISIONED and how to fix it, as replay does", async () => {
    const base = ["--server", natsUrl(), "--namespace", uniqueNamespace()];
    const runs = [
      ["tail", "--count", "1"],
      ["replay", "--session", newId()],
      ["parked", "list"],
      ["consumers"],
    ];
    for (const args of runs) {
      const r = await jetloopIn([...args, ...base]);
      expect([r.code, r.stderr.trim()], args[0]).toEqual([1, expect.stringMatching(new RegExp(`^jetloop ${args[0]}: NOT_PROVISIONED: .* does not exist; run \`jetloop provision\`$`))]);
    }
    // The gateway serves meanwhile (its page says so), and says it at start.
    const gw = await jetloopUntil(["gateway", "--listen", "127.0.0.1:0", ...base], "NOT_PROVISIONED");
    expect(gw.stderr).toMatch(/^jetloop gateway: NOT_PROVISIONED: stream \S+ does not exist; run `jetloop provision`/);
    const unreachable = await jetloopIn(["consumers", "--server", "nats://127.0.0.1:1"]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^jetloop consumers: CONNECTION_FAILED: .*\nhint: .*--server URL/);
  }, 120_000);

  it("provisions idempotently and reports drift with --verify", async () => {
    const ns = uniqueNamespace();
    const base = ["--server", natsUrl(), "--namespace", ns];
    const first = await jetloopIn(["provision", ...base]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`stream ${ns}_journal: created`);
    const again = await jetloopIn(["provision", ...base]);
    expect(again.stdout).toContain("unchanged");
    const drift = await jetloopIn(["provision", "--verify", "--max-event-bytes", "2048", ...base]);
    expect(drift.code).toBe(2);
    const room = journalHeaderRoom(`${ns}_journal`, ns);
    expect(drift.stdout).toContain(`max_msg_size: live ${1048576 + room} → declared ${2048 + room}`);
  });

  it("provision says nothing before it refuses, and --verify never says it is provisioning", async () => {
    const ns = uniqueNamespace();
    const base = ["--server", natsUrl(), "--namespace", ns];
    const missing = await jetloopIn(["provision", "--verify", ...base]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).not.toContain("provisioning");
    // A journal of another storage: provision refuses to overwrite it.
    const bus = await connect({ servers: natsUrl(), namespace: ns });
    try {
      const jsm = await jetstreamManager(bus.nc);
      await jsm.streams.add({ name: `${ns}_journal`, subjects: [`${ns}.journal.>`], storage: StorageType.Memory });
    } finally {
      await bus.close();
    }
    const refused = await jetloopIn(["provision", ...base]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^jetloop provision: PROVISION_DRIFT: .*storage/);
  });

  it("replays a bounded range as lines or JSON, reporting malformed messages on stderr", async () => {
    const ns = uniqueNamespace();
    const bus = await connect({ servers: natsUrl(), namespace: ns });
    try {
      await bus.provision();
      const sessionId = newId();
      const loopId = newId();
      const coords = { sessionId, loopId, turnId: newId(), stepId: newId() };
      await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId: coords.turnId }));
      await bus.publish(createEvent("PermissionDecided", { ...coords, toolExecutionId: newId(), effect: "approve" }));
      // a malformed message on this session's journal subject
      await bus.nc.request(`${ns}.journal.${sessionId}.${loopId}.tool.PermissionDecided`, new TextEncoder().encode("{not json"));
      await bus.publish(createEvent("TurnDone", { sessionId, loopId, turnId: coords.turnId }));

      const base = ["--server", natsUrl(), "--namespace", ns, "--session", sessionId];
      const lines = await jetloopIn(["replay", ...base]);
      expect(lines.code).toBe(0);
      const out = lines.stdout.trim().split("\n");
      expect(out.map((l) => l.split(/\s+/)[0])).toEqual(["#1", "#2", "#4"]);
      expect(out[1]).toContain("PermissionDecided");
      expect(lines.stderr).toContain("#3");
      expect(lines.stderr).toContain("EVENT_DECODE");

      const json = await jetloopIn(["replay", ...base, "--from-seq", "2", "--to-seq", "4", "--json"]);
      const parsed = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as { journal_seq: number; event: { type: string } });
      expect(parsed.map((p) => [p.journal_seq, p.event.type])).toEqual([
        [2, "PermissionDecided"],
        [4, "TurnDone"],
      ]);

      const tail = await jetloopIn(["tail", "--server", natsUrl(), "--namespace", ns, "--session", sessionId, "--all", "--count", "2", "--json"]);
      expect(tail.code).toBe(0);
      expect(tail.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { journal_seq: number }).journal_seq)).toEqual([1, 2]);
    } finally {
      await bus.close();
    }
  });

  it("runs the demo on a throwaway server and leaves no process behind", async () => {
    const env = { ...process.env };
    delete env.NATS_URL;
    const r = await jetloop(["demo"], env);
    expect(r.stderr).toContain("started a throwaway nats-server");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("PermissionDecided");
    expect(r.stdout).toMatch(/approve \(looks safe\)/);
    expect(r.stdout).toMatch(/deny \(outside the allowed paths\)/);
    expect(r.stdout).toContain("demo complete");
    // This demo's own processes only: other files (the walkthroughs) may run a demo beside it.
    const url = /throwaway nats-server at (\S+)/.exec(r.stderr)?.[1];
    expect(url).toBeDefined();
    const port = new URL(url!).port;
    const left = execSync("ps -eo args", { encoding: "utf8" })
      .split("\n")
      .filter((l) => (l.includes("demo-answerer") && l.includes(url!)) || (l.includes("jetloop-demo-") && l.includes(` -p ${port} `)));
    expect(left).toEqual([]);
  }, 60_000);

  it("runs the demo against --server: prints its namespace, a legend, the answerer before its effect, and a replay that finds the run", async () => {
    const given = uniqueNamespace();
    const r = await jetloop(["demo", "--server", natsUrl(), "--namespace", given]);
    expect(r.code).toBe(0);
    const ns = /^namespace (\S+)$/m.exec(r.stdout)?.[1];
    const session = /^session +(\S+)$/m.exec(r.stdout)?.[1];
    expect(ns).toBe(given);
    expect(r.stdout).toContain('"live" (a preview, never stored)');
    expect(r.stdout).toContain("its\noutput is simulated");
    const lines = r.stdout.split("\n");
    for (const [effect, resolved] of [["approve", "answered Approve"], ["deny", "answered Deny"]]) {
      const answered = lines.findIndex((l) => l.includes(`[answerer] answering gate`) && l.includes(`: ${effect} (`));
      const gateResolved = lines.findIndex((l) => l.includes("GateResolved") && l.includes(resolved!));
      expect(answered, effect).toBeGreaterThan(0);
      expect(answered, effect).toBeLessThan(gateResolved);
    }
    // Run from a source checkout, where `jetloop` is not on PATH.
    expect(r.stdout).toContain(`replay it: npm run jetloop -- replay --server ${natsUrl()} --namespace ${ns} --session ${session}`);
    const replayed = await jetloopIn(["replay", "--namespace", ns!, "--session", session!, "--server", natsUrl()]);
    expect(replayed.stderr).toContain("12 event(s)");
    // Each call asks for what it needs: listing reads, removing writes.
    const bus = await connect({ servers: natsUrl(), namespace: ns! });
    try {
      const asked: [string | undefined, string | undefined][] = [];
      for await (const d of bus.replay({ sessions: [session!], enduring: "all" })) {
        if (d.event.type === "PermissionRequested") asked.push([d.event.request.summary, d.event.request.requirements[0]?.kind]);
      }
      expect(asked).toEqual([
        ["ls -la /tmp", "fs.read"],
        ["rm -rf /var/cache/app", "fs.write"],
      ]);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it("parked list/show/replay/drop and consumers, as lines or JSON; provision --max-age warns of an unacknowledged backlog", async () => {
    const ns = uniqueNamespace();
    const bus = await connect({ servers: natsUrl(), namespace: ns });
    try {
      await bus.provision();
      const base = ["--server", natsUrl(), "--namespace", ns];
      const sessionId = newId();
      const coords = { sessionId, loopId: newId(), turnId: newId(), stepId: newId() };
      const seqs: number[] = [];
      for (let i = 0; i < 3; i++) seqs.push((await bus.publish(createEvent("PermissionDecided", { ...coords, toolExecutionId: newId(), effect: "deny" }))).journalSeq);
      const sub = await bus.subscribeEvents({ sessions: [sessionId], enduring: "all" }, { durable: "svc", maxDeliver: 1 });
      const r = new Reader<DurableDelivery<JetloopEvent>>(sub);
      try {
        const [a, b, c] = await r.take(3);
        await a!.ack();
        await b!.fail(new Error("ledger offline"));
        c!.term("unsupported effect");
        await waitFor("two parked", async () => (await bus.parked.list("svc")).length === 2, 10_000);

        const list = await jetloopIn(["parked", "list", ...base, "--json"]);
        expect(list.code).toBe(0);
        const entries = list.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(entries).toMatchObject([
          { durable: "svc", journal_seq: seqs[1], state: "held", reason: "max_deliver", error_code: "Error", delivery_count: 1 },
          { durable: "svc", journal_seq: seqs[2], state: "held", reason: "terminated", error_code: "TERMINATED", error_message: "unsupported effect" },
        ]);
        expect(entries.every((e) => !("data" in e) && !("payload" in e))).toBe(true);
        expect(entries.every((e) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(e.parked_at as string))).toBe(true);
        // show prints the payload as text: the journal's own bytes.
        const shown = await jetloopIn(["parked", "show", ...base, "--durable", "svc", "--seq", String(seqs[2]), "--json"]);
        const payload = (JSON.parse(shown.stdout) as { payload: string }).payload;
        expect((JSON.parse(payload) as { type: string }).type).toBe("PermissionDecided");
        const show = await jetloopIn(["parked", "show", ...base, "--durable", "svc", "--seq", String(seqs[1])]);
        expect(show.code).toBe(0);
        expect(show.stdout).toContain(`#${seqs[1]} svc held max_deliver Error`);
        expect(show.stdout).toContain("ledger offline");
        expect((await jetloopIn(["parked", "show", ...base, "--durable", "svc", "--seq", "999"])).code).toBe(1);

        const consumers = await jetloopIn(["consumers", ...base, "--json"]);
        expect(consumers.code).toBe(0);
        const svc = JSON.parse(consumers.stdout.trim().split("\n")[0]!) as Record<string, unknown>;
        const ci = await (await jetstreamManager(bus.nc)).consumers.info(bus.stream, "svc");
        expect(svc).toMatchObject({ durable: "svc", pending: ci.num_pending, ack_pending: ci.num_ack_pending, redelivered: ci.num_redelivered, parked: 2, ack_floor_seq: ci.ack_floor.stream_seq });
        // How it redelivers: jetloop's limit and the default backoff, in the table and the JSON.
        expect(svc).toMatchObject({ max_deliver: 1, backoff_ms: [30_000, 60_000, 300_000, 900_000], ack_wait_ms: 30_000 });
        expect((await jetloopIn(["consumers", ...base])).stdout).toMatch(/^svc +pending=.* max_deliver=1 backoff=30s,1m,5m,15m$/m);

        const replay = await jetloopIn(["parked", "replay", ...base, "--durable", "svc", "--seq", String(seqs[1])]);
        expect(replay.code).toBe(0);
        expect(replay.stderr).toContain("1 sent back to durable svc");
        const back = await r.one(10_000);
        expect([back.journalSeq, back.replayed]).toEqual([seqs[1], true]);
        await back.ack();
        const drop = await jetloopIn(["parked", "drop", ...base, "--durable", "svc", "--all"]);
        expect(drop.stderr).toContain("1 dropped");
        expect(await bus.parked.list("svc")).toEqual([]);
      } finally {
        await sub.close();
      }

      // A backlog the durable has not acknowledged, then a retention limit: a warning.
      await bus.publish(createEvent("PermissionDecided", { ...coords, toolExecutionId: newId(), effect: "deny" }));
      const limited = await jetloopIn(["provision", ...base, "--max-age", "720h"]);
      expect(limited.code).toBe(0);
      expect(limited.stdout).toContain("max_age: live 0 → declared 2592000000000000");
      expect(limited.stderr).toContain("warning: stream");
      expect(limited.stderr).toContain("durable svc has not acknowledged (1)");
      expect((await jetloopIn(["consumers", ...base])).stderr).toContain("warning: stream");
      expect((await jetloopIn(["provision", ...base, "--max-age", "soon"])).code).toBe(2);
    } finally {
      await bus.close();
    }
  }, 60_000);
});
