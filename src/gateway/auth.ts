/**
 * Authentication: a bearer token, or a function of the request. It runs before routing on
 * every request (reference §9); a session the caller may not see answers 404, as if it
 * did not exist.
 */
import { timingSafeEqual, createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Who the caller is, as far as the gateway cares: which sessions they may see. */
export interface GatewayPrincipal {
  /** Default: every session. */
  readonly canSee?: (sessionId: string) => boolean;
}

/** `false` (or a rejection) is 401; `true` sees every session. */
export type Authenticate = (req: IncomingMessage) => boolean | GatewayPrincipal | Promise<boolean | GatewayPrincipal>;

const digest = (s: string) => createHash("sha256").update(s).digest();

/** `Authorization: Bearer <token>`, compared in constant time. */
export function bearerToken(token: string): Authenticate {
  const expected = digest(token);
  return (req) => {
    const h = req.headers.authorization;
    if (h === undefined || !/^Bearer /i.test(h)) return false;
    return timingSafeEqual(digest(h.slice(7)), expected);
  };
}

export const EVERYONE: GatewayPrincipal = {};

export async function authenticate(auth: Authenticate | undefined, req: IncomingMessage): Promise<GatewayPrincipal | undefined> {
  if (auth === undefined) return EVERYONE;
  try {
    const r = await auth(req);
    return r === true ? EVERYONE : r === false ? undefined : r;
  } catch {
    return undefined;
  }
}
