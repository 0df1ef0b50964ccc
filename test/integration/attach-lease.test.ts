// Two attaches under one lease: `jetloop attach --go-store --lease` twice, as processes,
// while the Go side keeps writing. One holds the lease and appends; the other stands by
// and appends nothing. The holder is SIGKILLed: the standby takes over within the bound
// (4/3 of the lease time, plus the server's expiry sweep) and every Go event is in the
// journal once, in Go's order, byte for byte. In the SDK: a holder that closes hands over
// at once (its key deleted), and a namespace asked for two lease times is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { attach, connect, type AttachReport, type Jetloop } from "../../src/index.js";
import { goSeqOf } from "../../src/attach/journal-position.js";
import { reportFigure } from "../harness/figures-log.js";
import { saveAttachFault } from "../harness/reliability/attach-faults.js";
import { appendGoRecord, goEnvelope, loadRecording, recordedGoEvents } from "../harness/natsstore.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { startProxy } from "../harness/proxy.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";

const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";
const LEASE_MS = 3000;
/** The hand-over bound: 4/3 of the lease time, the server's expiry sweep (up to a lease time) and slack for a loaded machine. */
const HANDOVER_BOUND_MS = (4 * LEASE_MS) / 3 + LEASE_MS + 5000;

interface Child {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  stderr(): string;
  /** When this process said it holds the lease (performance.now()), or undefined. */
  activeAt(): number | undefined;
}

function startAttach(url: string, ns: string, name: string, ...extra: string[]): Child {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "src/cli/main.ts"), "attach", "--go-store", "--lease", "--lease-ms", String(LEASE_MS), "-s", url, "-n", ns, "--status-every", "0", ...extra], {
    cwd: REPO_ROOT,
    env: { ...process.env, JETLOOP_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  let activeAt: number | undefined;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.stderr.on("data", (b: Buffer) => {
    err += b.toString();
    if (activeAt === undefined && err.includes("holds the lease: following")) activeAt = performance.now();
  });
  child.stdout.resume();
  return { child, exited, stderr: () => `${name}: ${err}`, activeAt: () => activeAt };
}

const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 60_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe("attach: one active under a lease", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let bus: Jetloop;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startServer();
    nc = await natsConnect({ servers: server.url });
    jsm = await jetstreamManager(nc);
    await loadRecording(nc);
    bus = await connect({ servers: server.url, namespace: uniqueNamespace("atls"), publishDeadlineMs: 2000 });
    await bus.provision();
  }, 60_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await bus?.close();
    await nc?.close();
    await server?.close();
  });

  it("the standby appends nothing, takes over within the bound when the holder is SIGKILLed, and nothing is lost or doubled", async () => {
    const startedAt = Date.now();
    const expected = recordedGoEvents();
    const template = expected.get(S103)!.at(-1)!.bytes.toString();
    const written: { seq: number; bytes: Buffer }[] = [];
    let stop = false;
    // The Go side keeps writing into a recorded session, paced, through the hand-over.
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        const id = `6f1c2a3b-4d5e-4f60-8a7b-${(0xc00000000000 + i).toString(16)}`;
        const bytes = Buffer.from(template.replace(/"event_id":"[0-9a-f-]{36}"/, `"event_id":"${id}"`));
        written.push({ seq: await appendGoRecord(nc, S103, goEnvelope("event", id, bytes)), bytes });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    // Stopped with the test, passed or not: awaited below for its failures.
    const writer = writing.finally(() => undefined);
    writing.catch(() => undefined);
    onTestFinished(() => {
      stop = true;
    });
    const stored = async () => (await jsm.streams.info(bus.stream)).state.messages;

    const a = startAttach(server.url, bus.namespace, "a");
    children.push(a.child);
    await waitFor("a to hold the lease", () => a.activeAt() !== undefined);
    const b = startAttach(server.url, bus.namespace, "b", "--metrics", "127.0.0.1:0");
    children.push(b.child);
    await waitFor("b to say it stands by", () => b.stderr().includes("standby"));
    await waitFor("events appended by a", async () => (await stored()) >= 300);
    // Two renewals later b still stands by.
    await new Promise((r) => setTimeout(r, LEASE_MS));
    expect(b.activeAt(), b.stderr()).toBeUndefined();
    // Its metrics say so.
    const metricsUrl = /jetloop attach metrics on (\S+)/.exec(b.stderr())?.[1];
    expect(metricsUrl, b.stderr()).toBeDefined();
    const role = async () => (await (await fetch(metricsUrl!)).text()).split("\n").filter((l) => l.startsWith("jetloop_attach_role{"));
    expect(await role()).toEqual(expect.arrayContaining([expect.stringMatching(/role="standby".* 1$/), expect.stringMatching(/role="active".* 0$/)]));

    a.child.kill("SIGKILL");
    const killedAt = performance.now();
    await a.exited;
    await waitFor("b to take the lease", () => b.activeAt() !== undefined, 30_000);
    const handover = b.activeAt()! - killedAt;
    expect(await role()).toEqual(expect.arrayContaining([expect.stringMatching(/role="standby".* 0$/), expect.stringMatching(/role="active".* 1$/)]));
    const atTakeover = written.length;
    await waitFor("more Go events after the take-over", () => written.length >= atTakeover + 200);
    stop = true;
    await writer;
    for (const w of written) expected.get(S103)!.push({ ...w, id: "" });
    const total = [...expected.values()].reduce((n, l) => n + l.length, 0);
    await waitFor("every Go event in the journal", async () => (await stored()) >= total, 60_000);
    await new Promise((r) => setTimeout(r, 500));
    b.child.kill("SIGTERM");
    await b.exited;

    const info = await jsm.streams.info(bus.stream);
    const entries: { subject: string; goSeq: number | undefined; data: Buffer }[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(bus.stream, { seq }).catch(() => null);
      if (m) entries.push({ subject: m.subject, goSeq: goSeqOf(m.header), data: Buffer.from(m.data) });
    }
    let duplicated = 0;
    let missing = 0;
    let outOfOrder = 0;
    let mismatched = 0;
    for (const [sid, events] of expected) {
      const mine = entries.filter((e) => e.subject.startsWith(`${bus.namespace}.journal.${sid}.`));
      const seqs = mine.map((e) => e.goSeq!);
      duplicated += seqs.length - new Set(seqs).size;
      for (let i = 1; i < seqs.length; i++) if (seqs[i]! <= seqs[i - 1]!) outOfOrder++;
      for (const ev of events) {
        const found = mine.filter((e) => e.goSeq === ev.seq);
        if (found.length === 0) missing++;
        else if (!found.every((f) => f.data.equals(ev.bytes))) mismatched++;
      }
    }
    const counts = { goEvents: total, jetloopEvents: entries.length, duplicated, missing, outOfOrder, mismatched, handoverMs: Math.round(handover) };
    reportFigure(`attach lease hand-over (lease ${LEASE_MS} ms): ${JSON.stringify(counts)}`);
    saveAttachFault("6", `two attaches under a lease (${LEASE_MS} ms), the holder SIGKILLed while the Go side writes`, { ...counts, parked: 0 }, startedAt, { "lease hand-over after the holder's SIGKILL (ms)": counts.handoverMs });
    expect(counts).toMatchObject({ goEvents: total, jetloopEvents: total, duplicated: 0, missing: 0, outOfOrder: 0, mismatched: 0 });
    expect(handover).toBeLessThan(HANDOVER_BOUND_MS);
  }, 120_000);

  it("a holder that closes hands over at once; a second lease time for the namespace is refused", async () => {
    const ns = uniqueNamespace("atls2");
    const one = await connect({ servers: server.url, namespace: ns });
    const two = await connect({ servers: server.url, namespace: ns });
    try {
      await one.provision();
      const first = await attach(one, { lease: { leaseMs: 6000, holder: "first" }, onReport: () => undefined });
      const second = await attach(two, { lease: { leaseMs: 6000, holder: "second" }, onReport: () => undefined });
      await waitFor("the first to hold the lease", () => first.role() === "active");
      expect(second.role()).toBe("standby");
      expect(second.sessions()).toEqual([]);
      await first.caughtUp();
      expect(first.sessions().length).toBeGreaterThan(0);
      const closedAt = performance.now();
      await first.close();
      // Released: the standby's next try (every third of the lease time) takes it, not the lease time.
      await waitFor("the second to hold the lease", () => second.role() === "active", 6000);
      expect(performance.now() - closedAt).toBeLessThan(6000 / 3 + 1500);
      await second.caughtUp();
      expect(second.sessions().every((s) => s.lag === 0)).toBe(true);
      await second.close();
      await expect(attach(one, { lease: { leaseMs: 3000 } })).rejects.toMatchObject({ code: "ATTACH_FAILED", reason: "lease" });
      await expect(attach(one, { lease: { leaseMs: 100 } })).rejects.toMatchObject({ code: "OPTIONS_INVALID" });
    } finally {
      await one.close();
      await two.close();
    }
  }, 60_000);

  it("a holder cut off from the server stands down before its lease could pass to another (the self-fence)", async () => {
    const ns = uniqueNamespace("atls3");
    const proxy = await startProxy(server.port);
    const cut = await connect({ servers: proxy.url, namespace: ns });
    const other = await connect({ servers: server.url, namespace: ns });
    const roles: { who: string; role: string; at: number }[] = [];
    const onReport = (who: string) => (r: AttachReport) => {
      if (r.kind === "role") roles.push({ who, role: r.role, at: performance.now() });
    };
    try {
      await other.provision();
      const first = await attach(cut, { lease: { leaseMs: 3000, holder: "cut" }, onReport: onReport("cut") });
      await waitFor("the cut-off one to hold the lease", () => first.role() === "active");
      const second = await attach(other, { lease: { leaseMs: 3000, holder: "other" }, onReport: onReport("other") });
      expect(second.role()).toBe("standby");
      proxy.down();
      await waitFor("the other to take the lease", () => second.role() === "active", 15_000);
      const stoodDown = roles.find((r) => r.who === "cut" && r.role === "standby");
      const tookOver = roles.find((r) => r.who === "other" && r.role === "active")!;
      reportFigure(`attach lease self-fence (lease 3000 ms): stood down ${stoodDown ? Math.round(tookOver.at - stoodDown.at) : "never"} ms before the other took over`);
      // Never two actives: the one cut off stood down before the other took over.
      expect(stoodDown, JSON.stringify(roles)).toBeDefined();
      expect(stoodDown!.at).toBeLessThan(tookOver.at);
      proxy.up();
      await second.close();
      await first.close();
    } finally {
      await cut.close();
      await other.close();
      await proxy.close();
    }
  }, 60_000);
});

describe("attach: a lease holder paused past its lease", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let bus: Jetloop;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startServer();
    nc = await natsConnect({ servers: server.url });
    jsm = await jetstreamManager(nc);
    await loadRecording(nc);
    bus = await connect({ servers: server.url, namespace: uniqueNamespace("atlp"), publishDeadlineMs: 2000 });
    await bus.provision();
  }, 60_000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill("SIGCONT");
        c.kill("SIGKILL");
      }
    }
    await bus?.close();
    await nc?.close();
    await server?.close();
  });

  it("SIGSTOPped while the Go side writes, resumed after the other took over: it stands down, and nothing is doubled or lost", async () => {
    const startedAt = Date.now();
    const expected = recordedGoEvents();
    const template = expected.get(S103)!.at(-1)!.bytes.toString();
    const written: { seq: number; bytes: Buffer }[] = [];
    let stop = false;
    const writing = (async () => {
      for (let i = 0; !stop; i++) {
        const id = `6f1c2a3b-4d5e-4f60-8a7b-${(0xf00000000000 + i).toString(16)}`;
        const bytes = Buffer.from(template.replace(/"event_id":"[0-9a-f-]{36}"/, `"event_id":"${id}"`));
        written.push({ seq: await appendGoRecord(nc, S103, goEnvelope("event", id, bytes)), bytes });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    writing.catch(() => undefined);
    onTestFinished(() => {
      stop = true;
    });
    const stored = async () => (await jsm.streams.info(bus.stream)).state.messages;
    const a = startAttach(server.url, bus.namespace, "a");
    children.push(a.child);
    await waitFor("a to hold the lease", () => a.activeAt() !== undefined);
    const b = startAttach(server.url, bus.namespace, "b");
    children.push(b.child);
    await waitFor("b to say it stands by", () => b.stderr().includes("standby"));
    await waitFor("events appended by a", async () => (await stored()) >= 200);

    a.child.kill("SIGSTOP");
    await waitFor("b to take the lease", () => b.activeAt() !== undefined, 30_000);
    const atTakeover = written.length;
    await waitFor("Go events appended by b", () => written.length >= atTakeover + 150);
    const standbysBefore = a.stderr().split("standby:").length;
    a.child.kill("SIGCONT");
    // Resumed, it finds its lease gone (its renewal refused, or its self-fence past due) and stands down.
    await waitFor("a to stand down", () => a.stderr().split("standby:").length > standbysBefore, 15_000);
    await waitFor("more Go events after a resumed", () => written.length >= atTakeover + 300);
    stop = true;
    await writing;
    for (const w of written) expected.get(S103)!.push({ ...w, id: "" });
    const total = [...expected.values()].reduce((n, l) => n + l.length, 0);
    await waitFor("every Go event in the journal", async () => (await stored()) >= total, 60_000);
    await new Promise((r) => setTimeout(r, 500));
    for (const c of [a, b]) {
      c.child.kill("SIGTERM");
      await c.exited;
    }
    const info = await jsm.streams.info(bus.stream);
    const seen = new Map<string, number[]>();
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(bus.stream, { seq }).catch(() => null);
      if (m === null) continue;
      const sid = m.subject.split(".")[2]!;
      seen.set(sid, [...(seen.get(sid) ?? []), goSeqOf(m.header)!]);
    }
    let duplicated = 0;
    let missing = 0;
    let outOfOrder = 0;
    for (const [sid, events] of expected) {
      const got = seen.get(sid) ?? [];
      duplicated += got.length - new Set(got).size;
      missing += events.filter((e) => !got.includes(e.seq)).length;
      for (let i = 1; i < got.length; i++) if (got[i]! <= got[i - 1]!) outOfOrder++;
    }
    const counts = { goEvents: total, jetloopEvents: info.state.messages, duplicated, missing, outOfOrder };
    reportFigure(`attach lease, holder SIGSTOPped past its lease and resumed: ${JSON.stringify(counts)}`);
    saveAttachFault("7", `two attaches under a lease (${LEASE_MS} ms), the holder SIGSTOPped while the Go side writes, resumed after the other took over`, { ...counts, parked: 0 }, startedAt);
    expect(counts).toEqual({ goEvents: total, jetloopEvents: total, duplicated: 0, missing: 0, outOfOrder: 0 });
  }, 120_000);
});

describe("attach: a lease its user may not write", () => {
  it("stands by and reports the refusal once, typed (ATTACH_FAILED, reason lease), never silently", async () => {
    const server = await startServer({
      configText: `authorization { users: [
        { user: ops, password: ops }
        { user: nokv, password: nokv, permissions: { publish: { allow: [">"], deny: ["$KV.nokv_attach.>"] } } }
      ] }`,
    });
    const ops = await connect({ servers: server.url, namespace: "nokv", user: "ops", pass: "ops" });
    const nokv = await connect({ servers: server.url, namespace: "nokv", user: "nokv", pass: "nokv", logger: pino({ level: "silent" }) });
    const errors: Error[] = [];
    try {
      await ops.provision();
      const a = await attach(nokv, { lease: { leaseMs: 1500 }, onReport: (r) => (r.kind === "error" ? errors.push(r.error) : undefined) });
      try {
        await waitFor("the refusal reported", () => errors.length > 0, 15_000);
        expect(errors[0]).toMatchObject({ code: "ATTACH_FAILED", reason: "lease" });
        expect(a.role()).toBe("standby");
        // Tried again every half second: said once, not at every try.
        await new Promise((r) => setTimeout(r, 1600));
        expect(errors).toHaveLength(1);
      } finally {
        await a.close();
      }
    } finally {
      await nokv.close();
      await ops.close();
      await server.close();
    }
  }, 60_000);
});
