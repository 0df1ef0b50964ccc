import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { PermissionViolationError } from "@nats-io/transport-node";
import { NotProvisionedError, PermissionDeniedError, SubscriptionError } from "../errors.js";

/** Maps a failure to set up or run a consumer to jetloop's typed errors. */
export function consumerError(e: unknown, stream: string, what: string): Error {
  if (e instanceof PermissionViolationError) return new PermissionDeniedError(e.operation === "publish" ? "api" : "subscribe", e.subject, { cause: e });
  if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return new NotProvisionedError(stream);
  if (e instanceof Error && /permissions? violation/i.test(e.message)) return new PermissionDeniedError("api", what, { cause: e });
  return new SubscriptionError(`${what} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}
