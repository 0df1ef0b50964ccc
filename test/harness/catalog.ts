// The session catalog's reference and readers for the tests: every session's journal folded
// whole (what the list must equal), the list paged whole, the stored entries and checkpoints.
import { Kvm } from "@nats-io/kv";
import type { Jetloop, SessionCatalog } from "../../src/index.js";
import { StatusFold } from "../../src/catalog/fold.js";
import { parseEventSubject } from "../../src/subjects/subjects.js";

export interface Row {
  session_id: string;
  state?: string;
  title?: string;
  created_at?: string;
  last_active_at?: string;
  /** Why the session's entry is a mark, not its fold (only the catalog's rows have it). */
  poisoned?: string;
}

/** Every session with a journal, by the stream's subjects (the sessions the old list folded). */
export async function journalSessions(bus: Jetloop): Promise<string[]> {
  const jsm = await bus.jetstreamManager();
  const out = new Set<string>();
  for (const j of bus.journals()) {
    const info = await jsm.streams.info(j.stream, { subjects_filter: j.subject });
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      try {
        const sid = parseEventSubject(bus.namespace, subject).sessionId;
        if (bus.journalOf(sid).shard.index === j.shard.index) out.add(sid);
      } catch {
        // not an event subject: names no session
      }
    }
  }
  return [...out];
}

/** The reference: every session's journal folded whole, sorted by last activity (as instants) descending, then id. */
export async function fullFold(bus: Jetloop): Promise<Row[]> {
  const rows: (Row & { at: number })[] = [];
  for (const sid of await journalSessions(bus)) {
    const f = new StatusFold();
    let any = false;
    for await (const d of bus.session(sid).replay({ enduring: "all", includeInternal: true })) {
      any = true;
      f.apply(d);
    }
    if (!any) continue;
    const row: Row & { at: number } = { session_id: sid, at: f.lastActiveAt === undefined ? -Infinity : Date.parse(f.lastActiveAt) };
    if (f.state) row.state = f.state;
    if (f.title) row.title = f.title;
    if (f.createdAt) row.created_at = f.createdAt;
    if (f.lastActiveAt) row.last_active_at = f.lastActiveAt;
    rows.push(row);
  }
  rows.sort((a, b) => (a.at === b.at ? (a.session_id < b.session_id ? -1 : 1) : b.at > a.at ? 1 : -1));
  return rows.map(({ at: _, ...r }) => r);
}

/** The catalog's list as the gateway writes its rows (and the mark, where an entry is one). */
export async function listed(catalog: SessionCatalog, limit = 1000): Promise<Row[]> {
  const out: Row[] = [];
  for (let skip = 0; ; skip += limit) {
    const page = await catalog.list({ skip, limit });
    for (const s of page.sessions) {
      const r: Row = { session_id: s.sessionId };
      if (s.state) r.state = s.state;
      if (s.title) r.title = s.title;
      if (s.createdAt) r.created_at = s.createdAt;
      if (s.lastActiveAt) r.last_active_at = s.lastActiveAt;
      if (s.poisoned) r.poisoned = s.poisoned.reason;
      out.push(r);
    }
    if (page.sessions.length < limit) return out;
  }
}

const bucketOf = (bus: Jetloop) => `${bus.namespace.replaceAll(".", "_")}_catalog`;

/** The catalog's session entries as stored: key → [revision, value]. */
export async function entries(bus: Jetloop): Promise<Map<string, [number, string]>> {
  const kv = await new Kvm(bus.nc).open(bucketOf(bus));
  const out = new Map<string, [number, string]>();
  for await (const key of await kv.keys("sessions.>")) {
    const e = await kv.get(key);
    if (e?.operation === "PUT") out.set(key, [e.revision, e.string()]);
  }
  return out;
}

/** Every checkpoint set back to 0: the next update is offered every record again. */
export async function resetCheckpoints(bus: Jetloop): Promise<void> {
  const kv = await new Kvm(bus.nc).open(bucketOf(bus));
  for (let k = 0; k < bus.shards; k++) await kv.put(`checkpoint.${k}`, "0");
}

/** Each shard's checkpoint as stored (0: none), beside its journal's last sequence. */
export async function checkpoints(bus: Jetloop): Promise<{ checkpoint: number; end: number }[]> {
  const kv = await new Kvm(bus.nc).open(bucketOf(bus));
  const jsm = await bus.jetstreamManager();
  return Promise.all(
    bus.journals().map(async (j, k) => {
      const got = await kv.get(`checkpoint.${k}`);
      return { checkpoint: got?.operation === "PUT" ? Number(got.string()) : 0, end: (await jsm.streams.info(j.stream)).state.last_seq };
    }),
  );
}
