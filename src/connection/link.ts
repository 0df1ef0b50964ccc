import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Whether the connection's socket is up at this instant, as NATS.js knows it:
 * `protocol.connected`, a public field of NATS.js's connection class though not of the
 * NatsConnection interface. It is false from the moment the socket is found closed until
 * the next one has answered its first PING. What is published meanwhile waits in NATS.js's
 * outbound buffer, which the next dial discards (3.3 resets it) or sends on the new socket,
 * so a writer that must keep an order holds its messages instead. Undefined for a
 * connection without the field: the caller goes by the status events alone.
 */
export function linkUp(nc: NatsConnection): boolean | undefined {
  const connected = (nc as { protocol?: { connected?: unknown } }).protocol?.connected;
  return typeof connected === "boolean" ? connected : undefined;
}
