/**
 * The `nats` CLI's contexts (`--context NAME`, `NATS_CONTEXT`, or the one `nats context
 * select` chose), read as that CLI stores them: `$XDG_CONFIG_HOME/nats/context/NAME.json`
 * (default `~/.config/nats`), the selection in `…/nats/context.txt`. A field jetloop cannot
 * honour (a JetStream domain, an API prefix, a proxy, a credential URI other than a file) is
 * refused, never dropped: a connection made without it would reach another place, or
 * another account, than the user configured.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../errors.js";

/** What a context gives jetloop's connection. Every field optional, as in the file. */
export interface NatsContext {
  readonly name: string;
  readonly file: string;
  readonly url?: string;
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  /** A credentials file path. */
  readonly creds?: string;
  /** An nkey seed file path. */
  readonly nkey?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string;
  readonly tlsFirst?: boolean;
}

const STRING_FIELDS = ["url", "user", "password", "token", "creds", "nkey", "cert", "key", "ca"] as const;
/** Fields that change nothing about where or as whom jetloop connects. */
const IGNORED_FIELDS = new Set(["description", "color_scheme"]);

/** A context name as the nats CLI makes them; never a path (no separator, no leading dot). */
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

export function natsConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "nats");
}

/**
 * The context to use: `--context`, else `NATS_CONTEXT`, else the selected one (context.txt),
 * else none. A context named by the flag or the variable must exist; a selection naming a
 * context that is gone is an error too (the nats CLI would fail the same way).
 */
export function selectedContextName(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): { name: string; source: string } | undefined {
  if (flag !== undefined) return { name: flag, source: "--context" };
  if (env.NATS_CONTEXT) return { name: env.NATS_CONTEXT, source: "NATS_CONTEXT" };
  const selection = join(natsConfigDir(env), "context.txt");
  if (!existsSync(selection)) return undefined;
  const name = readFileSync(selection, "utf8").trim();
  return name === "" ? undefined : { name, source: selection };
}

/** Reads and checks a context file; every problem is a UsageError naming where the name came from. */
export function readNatsContext(name: string, source: string, env: NodeJS.ProcessEnv = process.env): NatsContext {
  if (!NAME.test(name)) throw new UsageError(`${source} ${JSON.stringify(name)} is not a context name (letters, digits, _ - and ., not starting with .)`);
  const file = join(natsConfigDir(env), "context", `${name}.json`);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(`${source} ${name}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? String(e)}); \`nats context ls\` lists the contexts`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${source} ${name}: ${file} is not JSON (${(e as Error).message})`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new UsageError(`${source} ${name}: ${file} is not a JSON object`);
  const fields = raw as Record<string, unknown>;
  const out: Record<string, unknown> = { name, file };
  for (const [k, v] of Object.entries(fields)) {
    const where = `${source} ${name}: ${file}: "${k}"`;
    if ((STRING_FIELDS as readonly string[]).includes(k)) {
      if (typeof v !== "string") throw new UsageError(`${where} must be a string`);
      if (v !== "") out[k] = k === "creds" || k === "nkey" ? credentialPath(where, v) : v;
    } else if (k === "tls_first") {
      if (typeof v !== "boolean") throw new UsageError(`${where} must be true or false`);
      if (v) out.tlsFirst = true;
    } else if (!IGNORED_FIELDS.has(k) && v !== "" && v !== false && v !== null) {
      // jetstream_domain, jetstream_api_prefix, inbox_prefix, user_jwt, nsc, socks_proxy,
      // windows_cert_*, and whatever a newer nats CLI adds: set, it changes the connection.
      throw new UsageError(`${where} is set, and jetloop does not support it: use a context without it`);
    }
  }
  if ((out.user === undefined) !== (out.password === undefined)) throw new UsageError(`${source} ${name}: ${file}: "user" and "password" go together`);
  return out as unknown as NatsContext;
}

/** A creds or nkey value: a path, or a file:// URI; the other credential URIs are refused. */
function credentialPath(where: string, v: string): string {
  if (v.startsWith("file://")) return fileURLToPath(v);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(v) && !/^[A-Za-z]:[\\/]/.test(v)) throw new UsageError(`${where} is a credential URI jetloop does not read (${v.split(":")[0]}:): give a file path`);
  return v;
}
