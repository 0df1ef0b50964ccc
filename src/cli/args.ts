import type { ParseArgsConfig } from "node:util";
import type { ConnectOptions } from "../bus.js";
import { type OptionsError, UsageError } from "../errors.js";
import { readFileSync } from "node:fs";
import { idProblem } from "../events/ids.js";
import { readNatsContext, selectedContextName } from "./nats-context.js";

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
  context: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

export const connectionHelp = `Connection:
  -s, --server URL        NATS server(s), comma-separated (default: $NATS_URL, else nats://127.0.0.1:4222)
  -n, --namespace NS      subject namespace (default: $JETLOOP_NAMESPACE, else jetloop)
      --stream NAME       events stream (default: {namespace}_journal)
      --user U --password P | --token T | --creds FILE | --nkey FILE|SEED
      --tls-ca FILE --tls-cert FILE --tls-key FILE
      --context NAME      a nats CLI context (~/.config/nats/context/NAME.json): its url,
                          user/password, token, creds, nkey, cert/key/ca and tls_first
                          (default: $NATS_CONTEXT, else the one \`nats context select\` chose);
                          a flag, or NATS_URL for the servers, wins over the context's field`;

/** The flag a library option is given with, for messages about bad input. */
const FLAG_OF_OPTION: Record<string, string> = {
  servers: "--server",
  namespace: "--namespace",
  stream: "--stream",
  sessionId: "--session",
  sessions: "--session",
  loops: "--loop",
  types: "--type",
  families: "--family",
  maxAge: "--max-age",
  maxBytes: "--max-bytes",
  maxEventBytes: "--max-event-bytes",
  replicas: "--replicas",
  fromSeq: "--from-seq",
  toSeq: "--to-seq",
  listen: "--listen",
  maxBodyBytes: "--max-body-bytes",
  feed: "--feed",
  token: "--auth-token-env",
  insecurePublicBind: "--insecure-public-bind",
  shard: "--shard",
};

/** An OptionsError of the library, reworded to name the flag the option came from. */
export function asUsageError(e: OptionsError): UsageError {
  const flag = FLAG_OF_OPTION[e.option] ?? e.option;
  return new UsageError(`${flag} ${e.message.slice(e.option.length + 2)}`);
}

/** What `parse` needs of parseArgs' result: run with `tokens: true`, so a repeated flag can be told. */
interface Parsed {
  readonly values: Record<string, unknown>;
  readonly tokens: readonly { readonly kind: string; readonly name?: string; readonly rawName?: string }[];
}

/**
 * Runs node's parseArgs (given the command's flags plus connectionFlags, strict, with
 * tokens); bad flags are a UsageError. So is a value flag given twice: parseArgs keeps the
 * last, so `parked drop --seq 2 --seq 1` would drop entry 1 unasked. Repeatable flags
 * (`multiple`) and a repeated switch (which means the same) are fine.
 */
export function parse<T extends Parsed>(run: () => T): T {
  let parsed: T;
  try {
    parsed = run();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind !== "option" || t.name === undefined || typeof parsed.values[t.name] !== "string") continue;
    if (seen.has(t.name)) throw new UsageError(`--${t.name} is given twice: give it once`);
    seen.add(t.name);
  }
  return parsed;
}

/** A flag that holds ids (sessions, loops): each checked before connecting. */
export function ids(name: string, values: string[] | undefined): string[] | undefined {
  for (const v of values ?? []) {
    const problem = idProblem(v);
    if (problem) throw new UsageError(`--${name} ${JSON.stringify(v)} ${problem}`);
  }
  return values;
}

/** A journal range: both bounds positive, the first not past the last. */
export function seqRange(values: { "from-seq"?: string | undefined; "to-seq"?: string | undefined }): { fromSeq?: number; toSeq?: number } {
  const fromSeq = positiveInt("from-seq", values["from-seq"]);
  const toSeq = positiveInt("to-seq", values["to-seq"]);
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) throw new UsageError(`--from-seq ${fromSeq} is past --to-seq ${toSeq}: the range is empty`);
  return { fromSeq, toSeq };
}

type Values = Partial<Record<keyof typeof connectionFlags, string | boolean>>;

export function connectOptions(values: Values): ConnectOptions {
  const str = (k: keyof typeof connectionFlags) => (typeof values[k] === "string" ? values[k] : undefined);
  const selected = selectedContextName(str("context"));
  const ctx = selected === undefined ? undefined : readNatsContext(selected.name, selected.source);
  // Each TLS file: the flag, else the context's.
  const tlsFiles = { caFile: str("tls-ca") ?? ctx?.ca, certFile: str("tls-cert") ?? ctx?.cert, keyFile: str("tls-key") ?? ctx?.key };
  const tls = tlsFiles.caFile || tlsFiles.certFile || tlsFiles.keyFile || ctx?.tlsFirst ? { ...tlsFiles, ...(ctx?.tlsFirst ? { handshakeFirst: true } : {}) } : undefined;
  const opts: ConnectOptions = { name: "jetloop-cli" };
  const server = str("server");
  if (server) opts.servers = serverUrls("--server", server);
  else if (process.env.NATS_URL) opts.servers = serverUrls("NATS_URL", process.env.NATS_URL);
  else if (ctx?.url) opts.servers = serverUrls(`context ${ctx.name} url`, ctx.url);
  const ns = str("namespace") ?? process.env.JETLOOP_NAMESPACE;
  if (ns !== undefined) opts.namespace = oneTokenNamespace(str("namespace") === undefined ? "JETLOOP_NAMESPACE" : "--namespace", ns, str("stream") !== undefined);
  const stream = str("stream");
  if (stream !== undefined && !/^[A-Za-z0-9_-]{1,255}$/.test(stream)) throw new UsageError(`--stream ${JSON.stringify(stream)} is not a stream name ([A-Za-z0-9_-], 1-255 characters)`);
  if (stream) opts.stream = stream;
  // Authentication as the flags give it; else as the context does (not mixed: a flag's
  // user with the context's token would be neither the flags' nor the context's identity).
  const flagAuth = ["user", "password", "token", "creds", "nkey"].some((k) => str(k as keyof typeof connectionFlags) !== undefined);
  const auth = flagAuth
    ? { user: str("user"), pass: str("password"), token: str("token"), credsFile: str("creds"), nkey: str("nkey"), nkeySource: "--nkey" }
    : { user: ctx?.user, pass: ctx?.password, token: ctx?.token, credsFile: ctx?.creds, nkey: ctx?.nkey, nkeySource: `context ${ctx?.name} nkey` };
  if (auth.user) opts.user = auth.user;
  if (auth.pass) opts.pass = auth.pass;
  if (auth.token) opts.token = auth.token;
  if (auth.credsFile) opts.credsFile = auth.credsFile;
  if (auth.nkey) opts.nkeySeed = nkeySeed(auth.nkeySource, auth.nkey);
  if (tls) opts.tls = tls;
  return opts;
}

const USER_SEED = /^SU[A-Z2-7]{56}$/;

/**
 * An nkey seed given as itself (`SU…`, as --nkey always took it) or, as the nats CLI takes
 * it, as the path of a file holding it.
 */
function nkeySeed(source: string, value: string): string {
  if (USER_SEED.test(value)) return value;
  let text: string;
  try {
    text = readFileSync(value, "utf8");
  } catch (e) {
    throw new UsageError(`${source} ${JSON.stringify(value)} is neither a user seed (SU…) nor a readable file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  const seeds = text.split(/\s+/).filter((w) => USER_SEED.test(w));
  if (seeds.length !== 1) throw new UsageError(`${source} ${value} holds ${seeds.length === 0 ? "no user seed (SU…)" : "more than one user seed"}`);
  return seeds[0]!;
}

/**
 * The servers of --server (or NATS_URL), each checked before dialing: `nats://` or `tls://`
 * (the schemes the Node transport speaks) or a bare HOST[:PORT], and nothing else — a URL
 * of another scheme must not be tried as a host name.
 */
export function serverUrls(source: string, value: string): string[] {
  const urls = value.split(",").map((u) => u.trim());
  for (const u of urls) {
    const problem = serverUrlProblem(u);
    if (problem) throw new UsageError(`${source} ${JSON.stringify(u)} ${problem}`);
  }
  return urls;
}

function serverUrlProblem(u: string): string | undefined {
  if (u === "") return "is empty";
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(u)?.[1];
  if (scheme !== undefined && scheme !== "nats" && scheme !== "tls") return `has scheme ${scheme}://: use nats:// or tls://`;
  let url: URL;
  try {
    url = new URL(scheme === undefined ? `nats://${u}` : u);
  } catch {
    return "is not a NATS URL (nats://HOST:PORT or tls://HOST:PORT)";
  }
  if (url.hostname === "") return "has no host";
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") return "has a path, query or fragment: a NATS URL is scheme://[user:pass@]HOST[:PORT]";
  return undefined;
}

/**
 * The namespace is the first subject token. One with dots (the library allows up to four
 * tokens) has no stream name of its own: the default would rewrite it (a.b → a_b_journal),
 * so the command line takes it only beside an explicit --stream.
 */
export function oneTokenNamespace(source: string, ns: string, streamGiven: boolean): string {
  if (/^[A-Za-z0-9-]+$/.test(ns)) return ns;
  if (!streamGiven || !/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+){1,3}$/.test(ns)) {
    throw new UsageError(
      `${source} ${JSON.stringify(ns)} is not one subject token of [A-Za-z0-9-]${ns.includes(".") && !streamGiven ? " (a dotted namespace needs --stream NAME: its stream name is not derived)" : ""}`,
    );
  }
  return ns;
}

export function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  // Decimal digits only: Number() would also read "0x3", "3.0", "+3", " 3" or "3e0" as 3.
  const n = /^[1-9]\d*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} must be a positive integer, not ${JSON.stringify(value)}`);
  return n;
}

export function list(value: string[] | string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(",")).filter((v) => v !== "");
}
