import type { ParseArgsConfig } from "node:util";
import type { ConnectOptions } from "../bus.js";

/** Flags every command that talks to NATS accepts. */
export const connectionFlags = {
  server: { type: "string", short: "s" },
  namespace: { type: "string", short: "n" },
  stream: { type: "string" },
  user: { type: "string" },
  password: { type: "string" },
  token: { type: "string" },
  creds: { type: "string" },
  nkey: { type: "string" },
  "tls-ca": { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

export const connectionHelp = `Connection:
  -s, --server URL        NATS server(s), comma-separated (default: $NATS_URL, else nats://127.0.0.1:4222)
  -n, --namespace NS      subject namespace (default: $JETLOOP_NAMESPACE, else jetloop)
      --stream NAME       events stream (default: {namespace}_journal)
      --user U --password P | --token T | --creds FILE | --nkey SEED
      --tls-ca FILE --tls-cert FILE --tls-key FILE`;

/** Thrown for a command line that cannot be run; main prints it with the usage. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Runs node's parseArgs (given the command's flags plus connectionFlags); bad flags are a UsageError. */
export function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

type Values = Partial<Record<keyof typeof connectionFlags, string | boolean>>;

export function connectOptions(values: Values): ConnectOptions {
  const str = (k: keyof typeof connectionFlags) => (typeof values[k] === "string" ? values[k] : undefined);
  const tls = str("tls-ca") || str("tls-cert") || str("tls-key") ? { caFile: str("tls-ca"), certFile: str("tls-cert"), keyFile: str("tls-key") } : undefined;
  const opts: ConnectOptions = { name: "jetloop-cli" };
  const server = str("server");
  if (server) opts.servers = server.split(",");
  const ns = str("namespace") ?? process.env.JETLOOP_NAMESPACE;
  if (ns) opts.namespace = ns;
  if (str("stream")) opts.stream = str("stream");
  if (str("user")) opts.user = str("user");
  if (str("password")) opts.pass = str("password");
  if (str("token")) opts.token = str("token");
  if (str("creds")) opts.credsFile = str("creds");
  if (str("nkey")) opts.nkeySeed = str("nkey");
  if (tls) opts.tls = tls;
  return opts;
}

export function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

export function list(value: string[] | string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(",")).filter((v) => v !== "");
}
