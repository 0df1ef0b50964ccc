/**
 * The page's calls to the gateway's JSON API, as result values: a reply is either its
 * JSON or an ApiFailure in words (the gateway's error envelope, or what went wrong when
 * there is none). State-changing requests carry `Content-Type: application/json` and go
 * to the page's own origin only, as the gateway's browser boundary requires.
 */

export interface ApiFailure {
  /** 0 when the gateway could not be reached at all. */
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
}

export type ApiResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: ApiFailure };

/** The failure a non-2xx reply stands for: its error envelope, else its status in words. */
export function failureOf(status: number, body: string): ApiFailure {
  try {
    const v = JSON.parse(body) as { error?: { code?: unknown; message?: unknown; retryable?: unknown } };
    const e = v.error;
    if (e && typeof e.code === "string" && typeof e.message === "string" && e.message !== "") {
      return { status, code: e.code, message: e.message, retryable: e.retryable === true };
    }
  } catch {
    // Not an envelope (a proxy's page, the router's plain 404): described from the status.
  }
  const text = body.trim().split("\n")[0]?.slice(0, 200) ?? "";
  return { status, code: `http_${status}`, message: text === "" ? `the gateway answered HTTP ${status}` : text, retryable: status === 503 };
}

/** The failure for a request that never got an answer. */
export function unreachable(e: unknown): ApiFailure {
  const why = e instanceof Error && e.message ? ` (${e.message})` : "";
  return { status: 0, code: "unreachable", message: `the gateway could not be reached${why}`, retryable: true };
}

/** Whether a failure says the namespace has no stream yet (`jetloop provision` fixes it). */
export function isNotProvisioned(f: ApiFailure): boolean {
  return f.code === "not_provisioned" || /jetloop provision/i.test(f.message);
}

/** The failure as one sentence: message, status and code, and whether a retry is safe. */
export function describeFailure(f: ApiFailure): string {
  if (f.status === 0) return f.message;
  return `${f.message} (HTTP ${f.status}, ${f.code})${f.retryable ? "; safe to retry" : ""}`;
}

async function call<T>(path: string, init: RequestInit): Promise<ApiResult<T>> {
  let res: Response;
  try {
    res = await fetch(path, { ...init, credentials: "same-origin", cache: "no-store" });
  } catch (e) {
    return { ok: false, failure: unreachable(e) };
  }
  const body = await res.text().catch(() => "");
  if (!res.ok) return { ok: false, failure: failureOf(res.status, body) };
  try {
    return { ok: true, value: JSON.parse(body) as T };
  } catch {
    return { ok: false, failure: { status: res.status, code: "invalid_reply", message: "the gateway's reply is not JSON", retryable: false } };
  }
}

export function getJson<T>(path: string): Promise<ApiResult<T>> {
  return call<T>(path, { method: "GET" });
}

export function postJson<T>(path: string, body: unknown): Promise<ApiResult<T>> {
  return call<T>(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}
