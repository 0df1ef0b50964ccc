/**
 * The browser boundary: which requests a browser may make to the gateway, and from where.
 *
 * - `Host` must name the gateway: one of the allowed hosts (loopback names by default) or
 *   the address the request arrived on. A DNS-rebinding page reaches the gateway under its
 *   own name (`Host: attacker.example`) and is refused before anything is read or routed.
 * - `Origin`, when present, must be the gateway's own (the scheme and the `Host`) or on the
 *   allowlist; any other, `null` included, is refused. Requests without `Origin` come from
 *   non-browser clients (browsers send it on every POST and every cross-origin request).
 * - A state-changing request (every POST) with a body not declared JSON, or with none, is
 *   taken only from a caller that no page of another site can be: no `Origin` (a
 *   non-browser client: the Go runtime's own client posts interrupt with no body and no
 *   Content-Type) or the gateway's own, and `Sec-Fetch-Site` absent or `same-origin`. A page
 *   can send such a request cross-site without a preflight (a form, a no-cors fetch,
 *   sendBeacon), and every browser sends its `Origin` on a POST; JSON from another origin
 *   needs a preflight first, which only allowed origins pass.
 *
 * Every value is parsed strictly (no userinfo, no trailing dot, no empty port); one that
 * does not parse is refused, never normalised into something allowed.
 */
import { isIP } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayErrorName } from "./envelope.js";

/** A host as the gateway compares it: lower-case name or IPv4, or `[canonical IPv6]`. */
export interface HostPort {
  readonly host: string;
  readonly port: number | undefined;
}

const NAME = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;
const HOST_PORT = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/;

/** Canonical `[v6]` for a bracketed literal, else undefined. */
function canonicalV6(bracketed: string): string | undefined {
  const inner = bracketed.slice(1, -1);
  if (isIP(inner) !== 6) return undefined;
  return new URL(`http://${bracketed}`).host;
}

/** A host name, IPv4 or bracketed IPv6 literal, lower-cased; undefined when it is not exactly one. */
export function parseHost(raw: string): string | undefined {
  const h = raw.toLowerCase();
  if (h.startsWith("[")) return h.endsWith("]") ? canonicalV6(h) : undefined;
  if (isIP(h) === 4) return h;
  // A dotted-decimal that is not an IPv4 address (`127.1`, `1.2.3.256`) is refused, not resolved.
  if (/^[0-9.]+$/.test(h)) return undefined;
  return NAME.test(h) && h.length <= 253 ? h : undefined;
}

/** The `Host` header (`host[:port]`); undefined when it is not exactly that. */
export function parseHostHeader(raw: string | undefined): HostPort | undefined {
  if (raw === undefined) return undefined;
  const m = HOST_PORT.exec(raw.toLowerCase());
  if (m === null) return undefined;
  const host = parseHost(m[1]!);
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (host === undefined || (port !== undefined && (port < 1 || port > 65535))) return undefined;
  return { host, port };
}

const DEFAULT_PORT = { http: 80, https: 443 } as const;

/** An origin `scheme://host[:port]` serialised as browsers send it (default port left out); undefined when it is not one. */
export function parseOrigin(raw: string): string | undefined {
  const m = /^(https?):\/\/(.+)$/.exec(raw.toLowerCase());
  if (m === null) return undefined;
  const scheme = m[1] as keyof typeof DEFAULT_PORT;
  const hp = parseHostHeader(m[2]);
  if (hp === undefined) return undefined;
  return serializeOrigin(scheme, hp);
}

function serializeOrigin(scheme: keyof typeof DEFAULT_PORT, hp: HostPort): string {
  return `${scheme}://${hp.host}${hp.port === undefined || hp.port === DEFAULT_PORT[scheme] ? "" : `:${hp.port}`}`;
}

/** The address a request arrived on, as a `Host` would name it (`::ffff:a.b.c.d` is the IPv4 address). */
function localHost(req: IncomingMessage): string | undefined {
  const a = req.socket.localAddress;
  if (a === undefined) return undefined;
  const v4 = /^::ffff:([0-9.]+)$/i.exec(a);
  if (v4) return v4[1];
  return isIP(a) === 6 ? canonicalV6(`[${a}]`) : a;
}

/** The browser boundary's settings: the host names and origins a request may come from. */
export interface BoundarySettings {
  /** Parsed host names (`parseHost`). */
  readonly allowedHosts: ReadonlySet<string>;
  /** Parsed origins (`parseOrigin`). */
  readonly allowedOrigins: ReadonlySet<string>;
}

/** What the boundary decided for one request. */
export type Verdict =
  | { readonly ok: true; /** The cross-origin caller to name in CORS headers, when it is an allowed one. */ readonly corsOrigin: string | undefined }
  | { readonly ok: false; readonly error: GatewayErrorName };

const REFUSE_HOST: Verdict = { ok: false, error: "host_not_allowed" };
const REFUSE_ORIGIN: Verdict = { ok: false, error: "origin_not_allowed" };

/** Host and Origin, for every request (before authentication and routing). */
export function checkRequest(req: IncomingMessage, s: BoundarySettings): Verdict {
  const hp = parseHostHeader(req.headers.host);
  if (hp === undefined || !(s.allowedHosts.has(hp.host) || hp.host === localHost(req))) return REFUSE_HOST;
  const origin = req.headers.origin;
  if (origin === undefined) {
    // No Origin: a non-browser client, or a browser's same-origin GET. A browser that says
    // the request is cross-site and hides the origin is refused.
    const site = req.headers["sec-fetch-site"];
    return site === "cross-site" || site === "same-site" ? REFUSE_ORIGIN : { ok: true, corsOrigin: undefined };
  }
  const o = parseOrigin(origin);
  if (o === undefined) return REFUSE_ORIGIN; // `null`, a path, userinfo, another scheme...
  if (o === serializeOrigin("http", hp) || o === serializeOrigin("https", hp)) return { ok: true, corsOrigin: undefined };
  return s.allowedOrigins.has(o) ? { ok: true, corsOrigin: o } : REFUSE_ORIGIN;
}

const JSON_TYPE = /^application\/json[ \t]*(?:;[^,]*)?$/i;

/** A body declared JSON: `application/json`, parameters allowed. */
export function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && JSON_TYPE.test(value);
}

/**
 * Whether a POST whose body is not declared JSON (another type, or none) may go on: only
 * from the gateway's own origin or a non-browser caller (no `Origin`), and never when the
 * browser says the request crosses sites (`Sec-Fetch-Site` other than `same-origin`;
 * `none`, a user's own navigation, never posts). Runs after `checkRequest`, so `Host` is
 * the gateway's and an `Origin` is the gateway's own or an allowed one; an allowed foreign
 * origin is cross-site here and must send JSON (after its preflight).
 */
export function mayPostUntyped(req: IncomingMessage): boolean {
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin") return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const hp = parseHostHeader(req.headers.host);
  const o = parseOrigin(origin);
  return hp !== undefined && o !== undefined && (o === serializeOrigin("http", hp) || o === serializeOrigin("https", hp));
}

/** What an allowed cross-origin caller may send. */
const PREFLIGHT_HEADERS = {
  "Access-Control-Allow-Methods": "GET, HEAD, POST",
  "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, Last-Event-ID",
  "Access-Control-Max-Age": "600",
};

/** CORS headers on a response to an allowed cross-origin caller. */
export function setCorsHeaders(res: ServerResponse, origin: string): void {
  res.setHeader("Access-Control-Allow-Origin", origin);
  res.setHeader("Access-Control-Allow-Credentials", "true");
  res.setHeader("Vary", "Origin");
}

/** A CORS preflight (OPTIONS with `Access-Control-Request-Method`) from a caller the boundary allowed. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === "OPTIONS" && req.headers.origin !== undefined && req.headers["access-control-request-method"] !== undefined;
}

export function answerPreflight(res: ServerResponse): void {
  res.writeHead(204, PREFLIGHT_HEADERS);
  res.end();
}

/** Parses the option lists; the first entry that is not exactly a host (or an origin) is named. */
export function parseBoundaryLists(hosts: readonly string[], origins: readonly string[]): BoundarySettings | { readonly bad: "allowedHosts" | "allowedOrigins"; readonly value: string } {
  const allowedHosts = new Set<string>();
  for (const h of hosts) {
    const p = parseHost(h);
    if (p === undefined) return { bad: "allowedHosts", value: h };
    allowedHosts.add(p);
  }
  const allowedOrigins = new Set<string>();
  for (const o of origins) {
    const p = parseOrigin(o);
    if (p === undefined) return { bad: "allowedOrigins", value: o };
    allowedOrigins.add(p);
  }
  return { allowedHosts, allowedOrigins };
}

export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"] as const;
