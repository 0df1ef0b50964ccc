/**
 * `attach(bus)`: follows the sessions a Go runtime writes through looprig/natsstore on the
 * bus's NATS deployment and appends their events to the bus's journal, exactly once, in
 * Go's order, byte for byte (src/attach/README.md). Read-only on the Go side: it lists
 * and reads the session streams, watches the catalog, reads the object store and
 * subscribes to the ledger subjects; it never publishes there.
 */
import { hostname } from "node:os";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { nuid } from "@nats-io/nats-core";
import type { Jetloop } from "../bus.js";
import { requireFeature } from "../subjects/server-features.js";
import { AttachError, NotProvisionedError, OptionsError } from "../errors.js";
import { Discovery, listGoSessions } from "./discovery.js";
import { GO_SESSIONS_ALL, overlapsGoSessions } from "./go-layout.js";
import { type AttachOptions, type AttachSettings, parseAttachOptions } from "./options.js";
import { AttachLease, type AttachRole, openLeaseBucket } from "./lease.js";
import { defaultAttachLeaseBucketName } from "../streams/declared.js";
import { type AttachedSession, type AttachReport, type DiscoveredVia, SessionFollower } from "./session-follower.js";
import { Slots } from "./slots.js";
import { GoLive, type LiveFigures } from "./go-live.js";
import { checkGoHttpUrl } from "./go-http.js";
import { type AttachGauges, observeAttach } from "../telemetry/metrics.js";

export type { AttachOptions, AttachRole };

/** A running attach of a Go runtime's natsstore sessions (`attach()`): its sessions' figures, and how to stop it. */
export interface Attach {
  /** Whether this attach does the work: always `active` without a lease; with one, `standby` while another attach holds it. */
  role(): AttachRole;
  /** Every session followed, with its figures (lag in Go sequences, counts, last error); none on a standby. */
  sessions(): AttachedSession[];
  /** The Go catalog's SessionMeta of a session, as last watched; undefined when it has no entry. */
  goMeta(sessionId: string): Readonly<Record<string, unknown>> | undefined;
  /** With `goHttp`: a session's live figures (its /events stream, whether its answers are served); undefined without. */
  live(sessionId: string): LiveFigures | undefined;
  /**
   * Resolves once every Go session stream that exists now has been handled up to its last
   * sequence as of this call (or stopped); with a lease, once this attach is active and
   * has. For a one-shot attach and for tests.
   */
  caughtUp(): Promise<void>;
  /** Stops following; resolves when every session's loop has ended. Idempotent. */
  close(): Promise<void>;
}

/**
 * Refuses a bus whose journal subjects would capture the Go ledgers' (`sessions.>`): the
 * Go runtime could not create its session streams beside it.
 */
export function checkNoOverlap(bus: Pick<Jetloop, "journals" | "namespace">): void {
  for (const j of bus.journals()) {
    if (overlapsGoSessions(j.subject) || overlapsGoSessions(`${bus.namespace}.>`)) {
      throw new AttachError(undefined, "layout", `the journal's subjects ${j.subject} overlap the Go runtime's ${GO_SESSIONS_ALL}: choose another namespace`);
    }
  }
}

/** Follows the sessions a Go runtime writes through natsstore on the bus's NATS deployment and appends their events to the bus's journal, byte for byte, in Go's order, once (docs/go-interop.md). Read-only on the Go side. Needs nats-server 2.11 or later (fencing) and a provisioned namespace; refuses otherwise. */
export async function attach(bus: Jetloop, options?: AttachOptions): Promise<Attach> {
  const settings = parseAttachOptions(options);
  if (settings.goHttp) {
    try {
      checkGoHttpUrl(settings.goHttp.url);
    } catch (e) {
      throw new OptionsError("goHttp.url", (e as Error).message);
    }
  }
  // The fence on a session's journal subjects (Nats-Expected-Last-Subject-Sequence-Subject) is what makes it exactly once.
  requireFeature(bus.serverVersion, "fencing");
  checkNoOverlap(bus);
  const jsm = await bus.jetstreamManager();
  for (const j of bus.journals()) {
    const exists = await jsm.streams.info(j.stream).then(
      () => true,
      (e: unknown) => {
        if ((e as { code?: number }).code === 10059) return false;
        throw e;
      },
    );
    if (!exists) throw new NotProvisionedError(j.stream);
  }
  const report =
    settings.onReport ??
    ((r: AttachReport) => {
      if (r.kind === "parked") bus.log.warn({ session: r.sessionId, goSeq: r.goSeq, code: r.error.code }, `Go session ${r.sessionId}: record ${r.goSeq} parked: ${r.error.message}`);
      else if (r.kind === "error" || r.kind === "stopped") bus.log.warn({ session: r.sessionId }, `attach: ${r.error.message}`);
      else if (r.kind === "session") bus.log.info({ session: r.sessionId, via: r.via }, `attach: following Go session ${r.sessionId} (found by its ${r.via})`);
      else if (r.kind === "role") bus.log.info({ role: r.role }, `attach: ${r.role === "active" ? "holds the lease: following the Go sessions" : "standby: another attach holds the lease"}`);
      else bus.log.info({ session: r.sessionId, goSeq: r.goSeq }, `Go session ${r.sessionId}: event ${r.eventId} (record ${r.goSeq}) shares its id with another session's: appended without a message id`);
    });
  if (settings.lease === undefined) {
    const { gauges, ...following } = await follow(bus, jsm, settings, report);
    const unobserve = observeAttach({ ...gauges, role: () => "active" });
    return {
      role: () => "active",
      ...following,
      close: async () => {
        unobserve();
        await following.close();
      },
    };
  }
  return leased(bus, jsm, settings, settings.lease, report);
}

/**
 * An attach under the namespace's lease (lease.ts): it follows the Go sessions while it
 * holds the lease, and stands by while another attach does.
 */
async function leased(bus: Jetloop, jsm: JetStreamManager, settings: AttachSettings, lease: NonNullable<AttachSettings["lease"]>, report: (r: AttachReport) => void): Promise<Attach> {
  const kv = await openLeaseBucket(bus.nc, defaultAttachLeaseBucketName(bus.namespace), lease.leaseMs);
  let following: Following | undefined;
  let active: () => void = () => undefined;
  let becameActive = new Promise<void>((r) => (active = r));
  const holder = lease.holder ?? `${hostname()}-${process.pid}-${nuid.next()}`;
  const l = new AttachLease(kv, holder, lease.leaseMs, async (role) => {
    report({ kind: "role", role });
    if (role === "active") {
      try {
        following = await follow(bus, jsm, settings, report);
        active();
      } catch (e) {
        report({ kind: "error", error: e instanceof Error ? e : new Error(String(e)) });
      }
      return;
    }
    becameActive = new Promise<void>((r) => (active = r));
    const was = following;
    following = undefined;
    await was?.close();
  }, (error) => report({ kind: "error", error }));
  const unobserve = observeAttach({
    states: () => following?.gauges.states() ?? new Map(),
    lag: () => following?.gauges.lag() ?? 0,
    role: () => (following === undefined ? "standby" : l.role),
  });
  await l.start();
  let closed = false;
  return {
    role: () => (following === undefined ? "standby" : l.role),
    sessions: () => following?.sessions() ?? [],
    goMeta: (sid) => following?.goMeta(sid),
    live: (sid) => following?.live(sid),
    async caughtUp() {
      for (;;) {
        if (closed) return;
        await becameActive;
        const f = following;
        if (f === undefined) continue;
        await f.caughtUp();
        if (following === f) return;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      active();
      await l.close();
      unobserve();
    },
  };
}

/** What an attach that follows does: everything but its role; and its gauges. */
type Following = Omit<Attach, "role"> & { readonly gauges: Omit<AttachGauges, "role"> };

/** Follows the Go sessions now: discovery, one follower per session, the gauges. */
async function follow(bus: Jetloop, jsm: JetStreamManager, settings: AttachSettings, report: (r: AttachReport) => void): Promise<Following> {
  const js = jetstream(bus.nc, { timeout: settings.ackTimeoutMs });
  const followers = new Map<string, SessionFollower>();
  // The live parts over the runtime's HTTP surface; a failure there is reported, never logged with the token.
  const live = settings.goHttp ? new GoLive(bus, settings.goHttp, (sid, error) => report({ kind: "error", sessionId: sid, error })) : undefined;
  const metas = new Map<string, Readonly<Record<string, unknown>>>();
  const slots = new Slots(settings.readers);
  let closed = false;
  const deps = {
    jsm,
    js,
    namespace: bus.namespace,
    registry: bus.registry as never,
    maxEventBytes: bus.settings.maxEventBytes,
    isClosed: () => closed || bus.nc.isClosed(),
    journalOf: (sid: string) => bus.journalOf(sid),
    park: (p: Parameters<Jetloop["parked"]["park"]>[0]) => bus.parked.park(p),
    report,
    slots,
    pollMs: settings.pollMs,
  };
  const seen = (sid: string, via: DiscoveredVia, last?: number) => {
    if (closed) return;
    let f = followers.get(sid);
    if (f === undefined) {
      f = new SessionFollower(deps, sid, via);
      followers.set(sid, f);
      report({ kind: "session", sessionId: sid, via });
      live?.follow(sid);
    }
    f.seen(last);
  };
  const discovery = new Discovery(bus.nc, jsm, { session: seen, meta: (sid, meta) => metas.set(sid, meta), error: (e) => report({ kind: "error", error: e }) }, settings.resyncMs);
  await discovery.start();
  // Gauges for the metrics endpoint: sessions by state, the lag summed (telemetry/metrics.ts).
  const gauges = {
    states: () => {
      const m = new Map<string, number>();
      for (const f of followers.values()) {
        const st = f.figures().state;
        m.set(st, (m.get(st) ?? 0) + 1);
      }
      return m;
    },
    lag: () => [...followers.values()].reduce((n, f) => n + f.figures().lag, 0),
  };
  const handle: Following = {
    gauges,
    sessions: () => [...followers.values()].map((f) => f.figures()).sort((a, b) => a.sessionId.localeCompare(b.sessionId)),
    goMeta: (sid) => metas.get(sid),
    live: (sid) => live?.figures(sid),
    async caughtUp() {
      const now = await listGoSessions(jsm);
      for (const [sid, last] of now) seen(sid, "stream", last);
      await live?.ready();
      for (;;) {
        if (closed) return;
        const behind = [...now].filter(([sid, last]) => {
          const f = followers.get(sid)!.figures();
          return f.state !== "stopped" && (f.goSeq < last || f.state !== "following");
        });
        if (behind.length === 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      discovery.close();
      await Promise.all([...followers.values()].map((f) => f.close()));
      await live?.close();
    },
  };
  return handle;
}
