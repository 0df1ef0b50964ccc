/**
 * Whether the journal's server is reachable, and what a failed request tells its client.
 * An outage is expected: the gateway answers 503 `nats_unavailable` (retryable) while it
 * lasts and logs one line when the connection drops and one when it is back, never a
 * stack per request. A namespace never provisioned is 503 `not_provisioned`, whose
 * message says to run `jetloop provision`. Anything else is the route's own 500, logged.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { type Status, TimeoutError } from "@nats-io/transport-node";
import type { Jetloop } from "../bus.js";
import { isJetloopError } from "../errors.js";
import type { GatewayErrorName } from "./envelope.js";

export class NatsHealth {
  #down = false;
  readonly #status: AsyncIterable<Status> & { stop?: () => void };

  constructor(private readonly bus: Jetloop) {
    // NATS.js returns its queued iterator, whose stop() ends the watch at once.
    this.#status = bus.nc.status();
    void this.#watch();
  }

  /** The connection is down (between a disconnect and its reconnect) or closed. */
  get down(): boolean {
    return this.#down || this.bus.nc.isClosed();
  }

  async #watch(): Promise<void> {
    for await (const s of this.#status) {
      if (s.type === "disconnect" && !this.#down) {
        this.#down = true;
        this.bus.log.warn("gateway: journal server disconnected; answering 503 nats_unavailable until it is back");
      } else if (s.type === "reconnect" && this.#down) {
        this.#down = false;
        this.bus.log.warn("gateway: journal server reconnected");
      }
    }
  }

  stop(): void {
    this.#status.stop?.();
  }

  /**
   * The error to answer for a failed request: an outage or a missing stream as such, else
   * `fallback` (the route's 500), which is the only case worth a log line with the cause.
   */
  failure(e: unknown, fallback: GatewayErrorName, context: Record<string, unknown>, what: string): GatewayErrorName {
    if (notProvisioned(e)) return "not_provisioned";
    if (this.down || outage(e)) return "nats_unavailable";
    this.bus.log.warn({ err: e, ...context }, `gateway: ${what}`);
    return fallback;
  }
}

function* chain(e: unknown): Generator<unknown> {
  for (let c = e, depth = 0; c !== undefined && c !== null && depth < 6; c = (c as { cause?: unknown }).cause, depth++) yield c;
}

function notProvisioned(e: unknown): boolean {
  for (const c of chain(e)) {
    if (isJetloopError(c, "NOT_PROVISIONED")) return true;
    if (c instanceof JetStreamApiError && c.code === JetStreamApiCodes.StreamNotFound) return true;
  }
  return false;
}

/** A request that timed out or found the connection closed: the server is not answering. */
function outage(e: unknown): boolean {
  for (const c of chain(e)) {
    if (c instanceof TimeoutError || isJetloopError(c, "CONNECTION_CLOSED") || isJetloopError(c, "CONNECTION_FAILED")) return true;
  }
  return false;
}
