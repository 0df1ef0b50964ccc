/**
 * One active attach among several (`attach(bus, { lease: … })`, `jetloop attach --lease`):
 * a lease in a KV bucket of jetloop's own namespace (`{ns}_attach`, never on the Go side),
 * one key, held by the attach that created it and renewed by compare-and-set.
 *
 * - Taken with `create` (only when the key is absent); renewed every third of the lease
 *   time with `update` at the revision this holder last wrote; released with a delete at
 *   that revision on a clean close, so a standby takes over at its next try.
 * - The bucket's max_age is the lease time: a holder that dies (SIGKILL, its host gone)
 *   stops renewing and the server removes the key a lease time after its last renewal; a
 *   standby, trying every third of the lease time, takes it within 4/3 of the lease time
 *   (plus the server's expiry sweep).
 * - A holder stops working before the server could give its lease to another: when no
 *   renewal sent in the last two thirds of the lease time has been answered (a paused
 *   process, a cut connection), it stands down (its followers closed) and takes the lease
 *   again only by a renewal or a create the server accepts. A renewal refused (another
 *   holder wrote the key) stands it down at once.
 * - Two actives for a moment (a holder paused past its lease, resumed before it looks) do
 *   no harm: every append is fenced on the session's journal position (appender.ts), so the
 *   lease decides who does the work, and the fence that nothing is appended twice.
 */
import { Kvm, type KV } from "@nats-io/kv";
import { jetstream, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AttachError } from "../errors.js";

/** The lease's key in the bucket: one attach of the Go store per namespace. */
export const LEASE_KEY = "go-store";

/** Who holds the lease now, from this attach's side. */
export type AttachRole = "active" | "standby";

/** Opens (creating when missing) the namespace's attach lease bucket, whose max_age is the lease time. */
export async function openLeaseBucket(nc: NatsConnection, bucket: string, leaseMs: number): Promise<KV> {
  // A renewal unanswered for a third of the lease time is a failed one: the next try comes then.
  const kvm = new Kvm(jetstream(nc, { checkAPI: false, timeout: Math.max(500, Math.floor(leaseMs / 3)) }));
  let kv: KV;
  let ttl: number;
  try {
    kv = await kvm.open(bucket);
    ttl = (await kv.status()).ttl;
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
    kv = await kvm.create(bucket, { history: 1, ttl: leaseMs });
    ttl = (await kv.status()).ttl;
  }
  if (ttl !== leaseMs) {
    throw new AttachError(undefined, "lease", `the lease bucket ${bucket} keeps a lease ${ttl} ms and this attach asks for ${leaseMs} ms: every attach of a namespace uses one lease time`);
  }
  return kv;
}

export class AttachLease {
  readonly #kv: KV;
  readonly #holder: string;
  readonly #leaseMs: number;
  readonly #onRole: (role: AttachRole) => Promise<void>;
  readonly #onError: (error: Error) => void;
  /** The last failure reported, so that one failing again and again is said once. */
  #lastError = "";
  /** Undefined until the first try has said which. */
  #role: AttachRole | undefined;
  /** The revision this holder last wrote (0: it holds nothing it knows of). */
  #revision = 0;
  /** When (this process's clock) the last renewal or create the server accepted was sent. */
  #provenAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Stands an active holder down when its last accepted renewal grows too old (the self-fence). */
  #fence: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #tick: Promise<void> = Promise.resolve();
  /** The changes of role, run one after the other, apart from the tries (a renewal never waits for followers to close). */
  #changes: Promise<void> = Promise.resolve();

  /**
   * `onRole` runs on each change of role, one at a time (its failures are its own to
   * report); `onError` hears a try that failed for another reason than the lease being
   * held (a refused permission, no answer), once until another failure or a success.
   */
  constructor(kv: KV, holder: string, leaseMs: number, onRole: (role: AttachRole) => Promise<void>, onError: (error: Error) => void) {
    this.#kv = kv;
    this.#holder = holder;
    this.#leaseMs = leaseMs;
    this.#onRole = onRole;
    this.#onError = onError;
  }

  get role(): AttachRole {
    return this.#role ?? "standby";
  }

  /** Tries to take the lease now, then keeps trying (standby) or renewing (active). */
  start(): Promise<void> {
    this.#tick = this.#try();
    return this.#tick;
  }

  async #try(): Promise<void> {
    if (this.#closed) return;
    const sent = performance.now();
    try {
      this.#revision = this.#revision > 0 ? await this.#kv.update(LEASE_KEY, this.#holder, this.#revision) : await this.#kv.create(LEASE_KEY, this.#holder);
      this.#proven(sent);
      this.#lastError = "";
    } catch (e) {
      // A create of a key that exists, an update at a revision that moved on: the lease is another's, no failure.
      if (!(e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown))) this.#failed(e);
      // Refused (another holder wrote the key, or it is there) or unanswered: not renewed by
      // this try. A key that moved on stands this holder down now; an unanswered renewal
      // leaves it to the self-fence.
      if (!(await this.#stillOurs())) {
        this.#revision = 0;
        this.#become("standby");
      }
    }
    if (!this.#closed) {
      this.#timer = setTimeout(() => {
        this.#tick = this.#try();
      }, this.#leaseMs / 3);
    }
  }

  #failed(e: unknown): void {
    const error = e instanceof Error ? e : new Error(String(e));
    if (error.message === this.#lastError) return;
    this.#lastError = error.message;
    this.#onError(new AttachError(undefined, "lease", `the lease ${LEASE_KEY} could not be taken or renewed: ${error.message}`, { cause: error }));
  }

  /** A renewal or create sent at `sent` was accepted: active until two thirds of the lease time after it, unless renewed again. */
  #proven(sent: number): void {
    this.#provenAt = sent;
    clearTimeout(this.#fence);
    const left = this.#provenAt + (2 * this.#leaseMs) / 3 - performance.now();
    if (left <= 0) return this.#become("standby");
    this.#fence = setTimeout(() => this.#become("standby"), left);
    this.#become("active");
  }

  /**
   * Whether the key holds this holder's name: a write whose answer was lost may have landed
   * (its revision is taken up then; holder names are unique, so nobody else writes this one).
   */
  async #stillOurs(): Promise<boolean> {
    try {
      const e = await this.#kv.get(LEASE_KEY);
      if (e === null || e.operation !== "PUT" || e.string() !== this.#holder) return false;
      this.#revision = e.revision;
      return true;
    } catch {
      // Unreadable now: keep what this holder knows; the self-fence stands it down in time.
      return this.#revision > 0;
    }
  }

  #become(role: AttachRole): void {
    if (role === this.#role || this.#closed) return;
    this.#role = role;
    if (role === "standby") clearTimeout(this.#fence);
    this.#changes = this.#changes.then(() => this.#onRole(role)).catch(() => undefined);
  }

  /** Stops trying; a holder releases the key so a standby takes over at its next try. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#fence);
    await this.#tick.catch(() => undefined);
    if (this.#role === "active") {
      this.#role = "standby";
      this.#changes = this.#changes.then(() => this.#onRole("standby")).catch(() => undefined);
    }
    await this.#changes;
    if (this.#revision > 0) await this.#kv.delete(LEASE_KEY, { previousSeq: this.#revision }).catch(() => undefined);
    this.#revision = 0;
  }
}
