import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { PermissionViolationError } from "@nats-io/transport-node";
import { NotProvisionedError, PermissionDeniedError, SubscriptionError } from "../errors.js";

/** The permission violation behind `e`: NATS.js wraps a refused request in a RequestError. */
export function permissionViolation(e: unknown): PermissionViolationError | undefined {
  for (let c = e, depth = 0; c instanceof Error && depth < 4; c = c.cause, depth++) {
    if (c instanceof PermissionViolationError) return c;
  }
  return undefined;
}

/** `e` as a PermissionDeniedError when the server's permissions refused it; else `e` itself. */
export function permissionRefusal(e: unknown): unknown {
  const pv = permissionViolation(e);
  return pv ? new PermissionDeniedError(pv.operation === "publish" ? "api" : "subscribe", pv.subject, { cause: e }) : e;
}

/** Maps a failure to set up or run a consumer to jetloop's typed errors. */
export function consumerError(e: unknown, stream: string, what: string): Error {
  if (e instanceof SubscriptionError) return e;
  const pv = permissionViolation(e);
  if (pv) return new PermissionDeniedError(pv.operation === "publish" ? "api" : "subscribe", pv.subject, { cause: e });
  if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return new NotProvisionedError(stream);
  if (e instanceof Error && /permissions? violation/i.test(e.message)) return new PermissionDeniedError("api", what, { cause: e });
  return new SubscriptionError(`${what} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}
