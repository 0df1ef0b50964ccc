/**
 * The connection's status events, watched for as long as the connection lives: a
 * permission violation the server reports asynchronously goes to `onViolation` (a bus
 * fails what waits on its subject), every other status is logged.
 */
import { type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { logConnectionStatus } from "../telemetry/index.js";

export async function watchStatus(nc: NatsConnection, log: Logger, onViolation: (e: PermissionViolationError) => void): Promise<void> {
  try {
    for await (const s of nc.status()) {
      if (s.type === "error" && s.error instanceof PermissionViolationError) {
        log.warn({ operation: s.error.operation, subject: s.error.subject }, "permission violation");
        onViolation(s.error);
      } else logConnectionStatus(log, s);
    }
  } catch (e) {
    log.debug({ err: e }, "status watch ended");
  }
}
