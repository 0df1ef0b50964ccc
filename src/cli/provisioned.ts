import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { Jetloop } from "../bus.js";
import { NotProvisionedError } from "../errors.js";

/**
 * For a long-running command that still serves when the namespace has no journal yet (the
 * gateway: the page says "not provisioned" until it exists): says so at start, with the
 * code and hint a failing command would print. Other failures of the check are left to
 * the requests that meet them.
 */
export async function warnIfNotProvisioned(bus: Jetloop, who: string, err: (s: string) => void): Promise<void> {
  // Shard 0's stream stands for the journal: provisioning makes every shard's.
  const stream = bus.journals()[0]!.stream;
  try {
    await (await bus.jetstreamManager()).streams.info(stream);
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
      const np = new NotProvisionedError(stream);
      err(`${who}: ${np.code}: ${np.message} (serving meanwhile: what reads the journal fails until it exists)`);
    }
  }
}
