// `jetloop attach --go-store` as a process, SIGKILLed mid-session while the Go side keeps
// writing, restarted at once, killed again and restarted after the journal's duplicate
// window: every Go event (the recording's and the thousands written meanwhile, in a running
// session and in one that appears during the run) is in the journal once, in Go's order,
// byte for byte. The Go side is written as natsstore writes it (test/harness/natsstore.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Jetloop } from "../../src/index.js";
import { goSeqOf } from "../../src/attach/journal-position.js";
import { reportFigure } from "../harness/figures-log.js";
import { saveAttachFault } from "../harness/reliability/attach-faults.js";
import { appendGoRecord, goEnvelope, loadRecording, readRecording, recordedGoEvents } from "../harness/natsstore.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";

const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";
const S104 = "6f1c2a3b-4d5e-4f60-8a7b-000000000104";
/** At most this many events written by the Go side; it stops when the test says so. */
const WRITTEN = 20_000;

interface Child {
  readonly child: ChildProcess;
  readonly caughtUp: Promise<void>;
  readonly exited: Promise<void>;
  stderr(): string;
}

function startAttach(url: string, ns: string, ...extra: string[]): Child {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "src/cli/main.ts"), "attach", "--go-store", "-s", url, "-n", ns, "--status-every", "0", ...extra], {
    cwd: REPO_ROOT,
    env: { ...process.env, JETLOOP_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const caughtUp = new Promise<void>((resolve, reject) => {
    child.stderr.on("data", (b: Buffer) => {
      err += b.toString();
      if (err.includes("caught up:")) resolve();
    });
    void exited.then(() => reject(new Error(`attach exited before it caught up: ${err}`)));
  });
  // A child killed before it caught up is what the test does: only an awaited one fails it.
  caughtUp.catch(() => undefined);
  child.stdout.resume();
  return { child, caughtUp, exited, stderr: () => err };
}

async function journalMessages(jsm: JetStreamManager, stream: string) {
  const info = await jsm.streams.info(stream);
  const out: { subject: string; goSeq: number | undefined; data: Buffer }[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m) out.push({ subject: m.subject, goSeq: goSeqOf(m.header), data: Buffer.from(m.data) });
  }
  return out;
}

const waitFor = async (what: string, ok: () => Promise<boolean>, ms = 60_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("attach: killed mid-session and restarted", () => {
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
    bus = await connect({ servers: server.url, namespace: uniqueNamespace("attk"), publishDeadlineMs: 2000 });
    await bus.provision({ duplicateWindow: "3s" });
  }, 60_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await bus?.close();
    await nc?.close();
    await server?.close();
  });

  it("appends nothing twice and misses nothing across SIGKILLs, at once and after the duplicate window", async () => {
    const startedAt = Date.now();
    const expected = recordedGoEvents();
    const template = expected.get(S103)!.at(-1)!.bytes.toString();
    const written = new Map<string, { seq: number; bytes: Buffer }[]>([[S103, []], [S104, []]]);
    const s103Stream = readRecording().streams.find((s) => s.config.name === `sessions_s${S103}`)!;
    let stopWriting = false;
    let writerDone = false;
    // The Go side keeps writing: events (and now and then a command) into the running
    // session, and a session that appears mid-run with its own stream.
    const writer = (async () => {
      for (let i = 0; i < WRITTEN && !stopWriting; i++) {
        const sid = i % 3 === 2 ? S104 : S103;
        if (sid === S104 && written.get(S104)!.length === 0) {
          const { metadata: _m, ...config } = s103Stream.config;
          await jsm.streams.add({ ...(config as unknown as StreamConfig), name: `sessions_s${S104}`, subjects: [`sessions.${S104}`] });
          await appendGoRecord(nc, S104, goEnvelope("fence", "1", Buffer.from('{"epoch":1}')));
        }
        const id = `6f1c2a3b-4d5e-4f60-8a7b-${(0xb00000000000 + i).toString(16)}`;
        let text = template.replace(/"event_id":"[0-9a-f-]{36}"/, `"event_id":"${id}"`);
        if (sid === S104) text = text.split(S103).join(S104);
        const bytes = Buffer.from(text);
        const seq = await appendGoRecord(nc, sid, goEnvelope("event", id, bytes));
        written.get(sid)!.push({ seq, bytes });
        if (i % 50 === 49) await appendGoRecord(nc, sid, goEnvelope("command", id, Buffer.from("{}")));
        // Paced, so the kills land while the Go side is still writing.
        if (i % 5 === 4) await new Promise((r) => setTimeout(r, 10));
      }
      writerDone = true;
    })();
    const stored = async () => (await jsm.streams.info(bus.stream)).state.messages;

    let a = startAttach(server.url, bus.namespace);
    children.push(a.child);
    await waitFor("200 events in the journal", async () => (await stored()) >= 200);
    a.child.kill("SIGKILL");
    await a.exited;
    const atFirstKill = await stored();
    const firstKillMidWrite = !writerDone;

    // At once.
    a = startAttach(server.url, bus.namespace);
    children.push(a.child);
    await waitFor("more events after the restart", async () => (await stored()) >= atFirstKill + 100).catch((e: Error) => {
      throw new Error(`${e.message} (stored ${atFirstKill} at the kill; the restarted attach said: ${a.stderr()})`);
    });
    a.child.kill("SIGKILL");
    await a.exited;
    const atSecondKill = await stored();
    const secondKillMidWrite = !writerDone;

    // After the duplicate window (3 s): only the journal can say what was stored.
    await new Promise((r) => setTimeout(r, 3500));
    a = startAttach(server.url, bus.namespace, "--metrics", "127.0.0.1:0");
    children.push(a.child);
    await a.caughtUp;
    stopWriting = true;
    await writer;
    for (const [sid, list] of written) expected.set(sid, [...(expected.get(sid) ?? []), ...list.map((x) => ({ ...x, id: "" }))]);
    const total = [...expected.values()].reduce((n, l) => n + l.length, 0);
    await waitFor("every Go event in the journal", async () => (await stored()) >= total, 120_000);
    // A moment more: anything appended twice would show now.
    await new Promise((r) => setTimeout(r, 500));
    // What the metrics endpoint says of it: four sessions following, nothing behind.
    const metricsUrl = /jetloop attach metrics on (\S+)/.exec(a.stderr())?.[1];
    expect(metricsUrl, a.stderr()).toBeDefined();
    const scrape = await (await fetch(metricsUrl!)).text();
    reportFigure(`attach metrics scrape: ${scrape.split("\n").filter((l) => l.includes("attach")).join(" | ")}`);
    expect(scrape).toMatch(/^jetloop_attach_sessions\{state="following"[^}]*\} 4$/m);
    expect(scrape).toMatch(/^jetloop_attach_lag(\{[^}]*\})? 0$/m);
    expect(scrape).toMatch(/^jetloop_attach_records_total\{outcome="appended"[^}]*\} \d+$/m);
    a.child.kill("SIGTERM");
    await a.exited;

    const entries = await journalMessages(jsm, bus.stream);
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
    const counts = { goEvents: total, jetloopEvents: entries.length, duplicated, missing, outOfOrder, mismatched, atFirstKill, atSecondKill, firstKillMidWrite, secondKillMidWrite };
    reportFigure(`attach killed and restarted: ${JSON.stringify(counts)}`);
    saveAttachFault("1", "attach SIGKILLed twice while the Go side writes (a running session and one appearing): restarted at once, then after the duplicate window", { ...counts, parked: 0 }, startedAt, {
      "journal events at the first kill": atFirstKill,
      "journal events at the second kill": atSecondKill,
    });
    // Both kills landed while the Go side was writing, with events still to come.
    expect([firstKillMidWrite, secondKillMidWrite]).toEqual([true, true]);
    expect(atSecondKill).toBeLessThan(total);
    expect(counts).toMatchObject({ goEvents: total, jetloopEvents: total, duplicated: 0, missing: 0, outOfOrder: 0, mismatched: 0 });
  }, 240_000);
});
