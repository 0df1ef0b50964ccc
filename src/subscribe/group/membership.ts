/**
 * A group's members, as the membership store (`streams/members.json`) has them: each
 * member publishes its lease on `{ns}.members.{group}.{member}` every third of the lease
 * time and removes it when it leaves. A member is live while its lease keeps changing:
 * the first reading of a lease trusts the server's timestamp, later ones only whether
 * its sequence moved within the lease time by this process's clock, so clock skew
 * between machines shortens or lengthens nothing after the first reading.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { memberSubject } from "../../subjects/subjects.js";

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

  constructor(js: JetStreamClient, jsm: () => Promise<JetStreamManager>, stream: string, ns: string, group: string, member: string, leaseMs: number) {
    this.#js = js;
    this.#jsm = jsm;
    this.#stream = stream;
    this.#ns = ns;
    this.#group = group;
    this.member = member;
    this.#leaseMs = leaseMs;
  }

  /** Publishes this member's lease (stored before it resolves). */
  async renew(): Promise<void> {
    await this.#js.publish(memberSubject(this.#ns, this.#group, this.member), JSON.stringify({ leaseMs: this.#leaseMs }), { expect: { streamName: this.#stream } });
  }

  /** The live members, this one included, sorted. */
  async live(): Promise<string[]> {
    const jsm = await this.#jsm();
    const filter = memberSubject(this.#ns, this.#group);
    const info = await jsm.streams.info(this.#stream, { subjects_filter: filter });
    const subjects = Object.keys(info.state.subjects ?? {});
    const now = Date.now();
    const live = new Set<string>([this.member]);
    const present = new Set<string>();
    await Promise.all(
      subjects.map(async (subject) => {
        const member = subject.slice(subject.lastIndexOf(".") + 1);
        const m = await jsm.streams.getMessage(this.#stream, { last_by_subj: subject }).catch(() => null);
        if (!m) return;
        present.add(member);
        const prev = this.#seen.get(member);
        if (prev === undefined) this.#seen.set(member, { seq: m.seq, at: Math.min(now, m.time.getTime()) });
        else if (prev.seq !== m.seq) this.#seen.set(member, { seq: m.seq, at: now });
        if (now - this.#seen.get(member)!.at < this.#leaseMs) live.add(member);
      }),
    );
    for (const m of this.#seen.keys()) if (!present.has(m)) this.#seen.delete(m);
    return [...live].sort();
  }

  /** Removes this member's lease: the others take its partitions at their next look. */
  async leave(): Promise<void> {
    const jsm = await this.#jsm();
    await jsm.streams.purge(this.#stream, { filter: memberSubject(this.#ns, this.#group, this.member) });
  }
}
