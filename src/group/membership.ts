/**
 * A group's members, as the membership store (`streams/members.json`) has them: each
 * member publishes its lease on `{ns}.members.{group}.{member}` every third of the lease
 * time and removes it when it leaves. A member is live while its lease keeps changing:
 * the first reading of a lease trusts the server's timestamp, later ones only whether
 * its sequence moved within the lease time by this process's clock, so clock skew
 * between machines shortens or lengthens nothing after the first reading.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { memberSubject } from "../subjects/subjects.js";

interface Seen {
  seq: number;
  /** When (this process's clock) the lease last changed. */
  at: number;
}

export class Membership {
  readonly #js: JetStreamClient;
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly #stream: string;
  readonly #ns: string;
  readonly #group: string;
  readonly member: string;
  readonly #leaseMs: number;
  readonly #seen = new Map<string, Seen>();
  readonly #proofRttMs: number;
  #provenAt = 0;

  /** `proofRttMs`: the longest round trip of a renewal that still proves this member live at its sending. */
  constructor(js: JetStreamClient, jsm: () => Promise<JetStreamManager>, stream: string, ns: string, group: string, member: string, leaseMs: number, proofRttMs: number) {
    this.#js = js;
    this.#jsm = jsm;
    this.#stream = stream;
    this.#ns = ns;
    this.#group = group;
    this.member = member;
    this.#leaseMs = leaseMs;
    this.#proofRttMs = proofRttMs;
  }

  /**
   * When (this process's clock) a renewal that proved this member live was sent: one the
   * server answered within `proofRttMs`. A member paused, or cut off from the server,
   * proves nothing meanwhile (a renewal stuck in a stalled connection is answered late).
   */
  get provenAt(): number {
    return this.#provenAt;
  }

  /** Publishes this member's lease (stored before it resolves). */
  async renew(): Promise<void> {
    const sent = Date.now();
    try {
      await this.#js.publish(memberSubject(this.#ns, this.#group, this.member), JSON.stringify({ leaseMs: this.#leaseMs }), { expect: { streamName: this.#stream } });
    } finally {
      // A prompt answer proves the process and its connection live, a refusal too (the
      // membership store gone or full must not stop the partitions: that is the server's
      // to keep in order); a timeout does not.
      if (Date.now() - sent <= this.#proofRttMs) this.#provenAt = Math.max(this.#provenAt, sent);
    }
  }

  /** The live members, this one included, sorted. */
  async live(): Promise<string[]> {
    const leases = await readLeases(await this.#jsm(), this.#stream, this.#ns, this.#group);
    const now = Date.now();
    const live = new Set<string>([this.member]);
    for (const l of leases) {
      const prev = this.#seen.get(l.member);
      if (prev === undefined) this.#seen.set(l.member, { seq: l.seq, at: Math.min(now, l.time.getTime()) });
      else if (prev.seq !== l.seq) this.#seen.set(l.member, { seq: l.seq, at: now });
      if (now - this.#seen.get(l.member)!.at < this.#leaseMs) live.add(l.member);
    }
    const present = new Set(leases.map((l) => l.member));
    for (const m of this.#seen.keys()) if (!present.has(m)) this.#seen.delete(m);
    return [...live].sort();
  }

  /** Removes this member's lease: the others take its partitions at their next look. */
  async leave(): Promise<void> {
    const jsm = await this.#jsm();
    await jsm.streams.purge(this.#stream, { filter: memberSubject(this.#ns, this.#group, this.member) });
  }
}

/** A member's last lease as the store holds it. */
export interface Lease {
  readonly member: string;
  readonly seq: number;
  /** The server's timestamp of the lease. */
  readonly time: Date;
  /** The lease time the member renews for; undefined when its record cannot be read. */
  readonly leaseMs: number | undefined;
}

/** Every lease of a group in the membership store (one per member, its last). */
export async function readLeases(jsm: JetStreamManager, stream: string, ns: string, group: string): Promise<Lease[]> {
  const info = await jsm.streams.info(stream, { subjects_filter: memberSubject(ns, group) });
  const leases = await Promise.all(
    Object.keys(info.state.subjects ?? {}).map(async (subject): Promise<Lease | undefined> => {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
      return m ? { member: subject.slice(subject.lastIndexOf(".") + 1), seq: m.seq, time: m.time, leaseMs: leaseOf(m.data) } : undefined;
    }),
  );
  return leases.filter((l) => l !== undefined);
}

function leaseOf(data: Uint8Array): number | undefined {
  try {
    const v = (JSON.parse(new TextDecoder().decode(data)) as { leaseMs?: unknown }).leaseMs;
    return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The members live at `now` as one outside reading sees them (`jetloop consumers`): a lease
 * younger than its own lease time by the server's timestamp. A member judges by its own
 * clock over repeated readings (`Membership.live`); one reading can only trust the server's.
 */
export function liveAt(leases: readonly Lease[], now: number): string[] {
  return leases.filter((l) => l.leaseMs !== undefined && now - l.time.getTime() < l.leaseMs).map((l) => l.member).sort();
}
