// The Go runtime's session store as recorded (test/conformance/data/natsstore/): read the
// recording, and load it into a real nats-server exactly as recorded: each stream with its
// recorded configuration, each message at its recorded sequence with its recorded subject,
// headers and bytes (the write-time preconditions it carries, Nats-Expected-Last-Sequence
// and Nats-Expected-Last-Subject-Sequence, hold again because the revisions they name are
// recreated first and purged after), then checked against the recorded stream states.
// Only the stored times differ (a server stamps its own). Also a small Go-layout writer for
// the faults: a ledger record appended as natsstore appends it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connect as natsConnect, headers, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop } from "../../src/index.js";
import { uniqueNamespace } from "./namespace.js";
import { startServer, type NatsServer } from "./server.js";
import { conformanceDir } from "../conformance/go-oracle.js";

const at = (name: string) => join(conformanceDir, "natsstore", name);
const jsonLines = <T>(text: string): T[] =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as T);

export interface RecordedMessage {
  readonly stream: string;
  readonly seq: number;
  readonly subject: string;
  readonly headers: Record<string, string[]> | null;
  readonly data_b64: string;
}

export interface RecordedStream {
  readonly config: Record<string, unknown> & { name: string; subjects: string[] };
  readonly state: { messages: number; first_seq: number; last_seq: number; num_deleted: number };
}

/** The Go side's own record of one ledger append (appended.jsonl.gz). */
export interface GoAppend {
  readonly session: string;
  readonly seq: number;
  readonly kind: "event" | "command" | "fence" | "gate_prepared";
  readonly record_id: string;
  readonly event_type?: string;
  readonly body_b64: string;
}

export interface Recording {
  readonly streams: RecordedStream[];
  readonly messages: RecordedMessage[];
  readonly appended: GoAppend[];
  readonly catalog: { list_sessions: Record<string, unknown>[] };
}

let cached: Recording | undefined;

export function readRecording(): Recording {
  cached ??= {
    streams: JSON.parse(readFileSync(at("streams.json"), "utf8")) as RecordedStream[],
    messages: jsonLines<RecordedMessage>(gunzipSync(readFileSync(at("messages.jsonl.gz"))).toString("utf8")),
    appended: jsonLines<GoAppend>(gunzipSync(readFileSync(at("appended.jsonl.gz"))).toString("utf8")),
    catalog: JSON.parse(readFileSync(at("catalog-go.json"), "utf8")) as { list_sessions: Record<string, unknown>[] },
  };
  return cached;
}

/** The Go events of the recording in Go's order per session: the bytes Go handed its ledger. */
export function recordedGoEvents(): Map<string, { seq: number; id: string; bytes: Buffer }[]> {
  const out = new Map<string, { seq: number; id: string; bytes: Buffer }[]>();
  for (const a of readRecording().appended) {
    if (a.kind !== "event") continue;
    const list = out.get(a.session) ?? [];
    list.push({ seq: a.seq, id: a.record_id, bytes: Buffer.from(a.body_b64, "base64") });
    out.set(a.session, list);
  }
  for (const list of out.values()) list.sort((x, y) => x.seq - y.seq);
  return out;
}

const EXPECT_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence";
// Config keys the server reports but a create does not take as given.
const SERVER_KEYS = new Set(["metadata"]);

export interface LoadOptions {
  /** Leave out recorded messages (a fault: an object's chunks or metadata gone). */
  readonly omit?: (m: RecordedMessage) => boolean;
}

/** Loads the recording into the server `nc` is connected to; resolves with the streams' states checked. */
export async function loadRecording(nc: NatsConnection, options: LoadOptions = {}): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const rec = readRecording();
  for (const s of rec.streams) {
    const msgs = rec.messages.filter((m) => m.stream === s.config.name && m.subject !== "").sort((a, b) => a.seq - b.seq);
    // The revision each compare-and-set names must be there when it is written again.
    const priors = new Map<number, string>();
    for (const m of msgs) {
      const n = Number(m.headers?.[EXPECT_SUBJECT_SEQ]?.[0] ?? 0);
      if (n > 0) priors.set(n, m.subject);
    }
    const first = Math.min(...msgs.map((m) => m.seq), ...priors.keys());
    const config = Object.fromEntries(Object.entries(s.config).filter(([k]) => !SERVER_KEYS.has(k))) as unknown as StreamConfig;
    await jsm.streams.add({ ...config, ...(first > 1 ? { first_seq: first } : {}) });
    const filler = s.config.subjects[0]!.replace(">", "jetloop_recording_filler").replace("*", "jetloop_recording_filler");
    let fillers = 0;
    const bySeq = new Map(msgs.map((m) => [m.seq, m]));
    const last = Math.max(...msgs.map((m) => m.seq));
    for (let seq = first; seq <= last; seq++) {
      const m = bySeq.get(seq);
      let ack;
      if (m !== undefined && !(options.omit?.(m) ?? false)) {
        const h = headers();
        for (const [k, vs] of Object.entries(m.headers ?? {})) for (const v of vs) h.append(k, v);
        ack = await js.publish(m.subject, Buffer.from(m.data_b64, "base64"), { headers: h });
      } else if (priors.has(seq)) {
        ack = await js.publish(priors.get(seq)!, new Uint8Array(0));
      } else {
        ack = await js.publish(filler, new Uint8Array(0));
        fillers++;
      }
      if (ack.seq !== seq) throw new Error(`loading ${s.config.name}: stored at ${ack.seq}, recorded at ${seq}`);
    }
    if (fillers > 0) await jsm.streams.purge(s.config.name, { filter: filler });
    if (options.omit) continue;
    const state = (await jsm.streams.info(s.config.name)).state;
    const want = s.state;
    if (state.messages !== want.messages || state.first_seq !== want.first_seq || state.last_seq !== want.last_seq || (state.num_deleted ?? 0) !== (want.num_deleted ?? 0)) {
      throw new Error(`loading ${s.config.name}: state ${JSON.stringify(state)} is not the recorded ${JSON.stringify(want)}`);
    }
  }
}

/** Every stored message of `stream` read back as the recording holds them, for comparing. */
export async function readBack(jsm: JetStreamManager, stream: string): Promise<RecordedMessage[]> {
  const info = await jsm.streams.info(stream);
  const out: RecordedMessage[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (!m) continue;
    const h: Record<string, string[]> = {};
    for (const k of m.header?.keys() ?? []) h[k] = m.header.values(k);
    out.push({ stream, seq, subject: m.subject, headers: Object.keys(h).length === 0 ? null : h, data_b64: Buffer.from(m.data).toString("base64") });
  }
  return out;
}

/** A Go ledger envelope as natsstore's Go writer encodes it (json.Marshal of {V, Kind, ID, Body []byte}). */
export function goEnvelope(kind: string, id: string, body: Uint8Array): Buffer {
  return Buffer.from(`{"v":1,"kind":${JSON.stringify(kind)},"id":${JSON.stringify(id)},"body":"${Buffer.from(body).toString("base64")}"}`);
}

/** A blob pointer's body (json.Marshal of {Key, Size, SHA256}). */
export function goBlobPointer(key: string, size: number, sha256: string): Buffer {
  return Buffer.from(`{"key":${JSON.stringify(key)},"size":${size},"sha256":"${sha256}"}`);
}

export const sha256Hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

/**
 * Appends `data` to Go session `sessionId`'s ledger as natsstore does: on its subject,
 * fenced by Nats-Expected-Last-Sequence (the stream's last sequence). Returns its sequence.
 */
export async function appendGoRecord(nc: NatsConnection, sessionId: string, data: Uint8Array): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const last = (await jsm.streams.info(`sessions_s${sessionId}`)).state.last_seq;
  const h = headers();
  h.set("Nats-Expected-Last-Sequence", String(last));
  const ack = await jetstream(nc).publish(`sessions.${sessionId}`, data, { headers: h });
  return ack.seq;
}

/** A nats-server of its own holding the recording as recorded, and a provisioned bus beside it in a fresh namespace. */
export interface RecordedStore {
  readonly server: NatsServer;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly bus: Jetloop;
  close(): Promise<void>;
}

export async function recordedStore(namespacePrefix: string): Promise<RecordedStore> {
  const server = await startServer();
  const nc = await natsConnect({ servers: server.url });
  const jsm = await jetstreamManager(nc);
  await loadRecording(nc);
  const bus = await connect({ servers: server.url, namespace: uniqueNamespace(namespacePrefix) });
  await bus.provision();
  return {
    server,
    nc,
    jsm,
    bus,
    async close() {
      await bus.close();
      await nc.close();
      await server.close();
    },
  };
}
