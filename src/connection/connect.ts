import { readFileSync } from "node:fs";
import {
  connect as natsConnect,
  credsAuthenticator,
  nkeyAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
} from "@nats-io/transport-node";
import { ConnectionFailedError, OptionsError } from "../errors.js";
import type { ConnectionSettings } from "./options.js";

export type { ConnectionSettings };

/** Builds the NATS.js connection options; checks combinations eagerly. */
export function connectionOptions(s: ConnectionSettings): ConnectionOptions {
  const servers = s.servers ?? process.env.NATS_URL?.split(",") ?? "nats://127.0.0.1:4222";
  if (s.nkeySeed && s.credsFile) throw new OptionsError("credsFile", "give nkeySeed or credsFile, not both");
  if ((s.user === undefined) !== (s.pass === undefined)) throw new OptionsError("user", "user and pass go together");
  const opts: ConnectionOptions = {
    maxReconnectAttempts: -1,
    // NATS.js captures an Error (the caller's stack) for every request, in case it times out:
    // a third of the CPU of a loop of requests (the attach's reads and fenced appends). A
    // jetloop error names its operation and carries NATS.js's as its cause; natsOptions can
    // turn the capture back on.
    noAsyncTraces: true,
    ...s.natsOptions,
    servers,
    name: s.name ?? s.natsOptions?.name ?? "jetloop",
  };
  if (s.user !== undefined) {
    opts.user = s.user;
    opts.pass = s.pass;
  }
  if (s.token !== undefined) opts.token = s.token;
  if (s.nkeySeed) opts.authenticator = nkeyAuthenticator(new TextEncoder().encode(s.nkeySeed));
  if (s.credsFile) {
    const file = s.credsFile;
    opts.authenticator = credsAuthenticator(() => readFileSync(file));
  }
  if (s.tls) opts.tls = { ...s.tls };
  return opts;
}

/**
 * Connects, turning NATS.js's failures into typed errors that name the servers: a URL
 * it cannot parse is an OptionsError, no answer a ConnectionFailedError, and a server
 * without JetStream (which the journal needs) is refused with the flag that enables it.
 */
export async function openConnection(s: ConnectionSettings): Promise<NatsConnection> {
  const options = connectionOptions(s);
  const servers = [options.servers ?? []].flat();
  let nc: NatsConnection;
  try {
    nc = await natsConnect(options);
  } catch (e) {
    if ((e as { code?: unknown }).code === "ERR_INVALID_URL") throw new OptionsError("servers", `${servers.map((u) => JSON.stringify(u)).join(", ")} is not a valid NATS URL`);
    throw new ConnectionFailedError(servers, "unreachable", `cannot connect to ${servers.join(", ")}: ${(e as Error).message}`, { cause: e });
  }
  if (nc.info?.jetstream !== true) {
    const url = nc.getServer();
    await nc.close();
    throw new ConnectionFailedError(servers, "jetstream_disabled", `nats-server at ${url} runs without JetStream: start it with -js (or a jetstream {} block in its configuration)`);
  }
  return nc;
}

