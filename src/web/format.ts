/**
 * How the page writes ids and times: short ids (the first block of a UUID, the whole id
 * in the tooltip), clock times in the viewer's zone, and "how long ago" in one unit.
 * Pure, so the unit tests cover every input.
 */

/**
 * An id's last 8 characters after an ellipsis: enough to tell ids apart on one screen. The
 * tail, not the head: a version-7 UUID begins with its time, so ids made together share it.
 */
export function shortId(id: string): string {
  return id.length <= 9 ? id : `…${id.slice(-8)}`;
}

/** Milliseconds since the epoch, or undefined for a missing or unreadable RFC 3339 time. */
export function parseTime(at: string | undefined): number | undefined {
  if (at === undefined || at === "") return undefined;
  const ms = Date.parse(at);
  return Number.isFinite(ms) ? ms : undefined;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** HH:MM:SS in the viewer's time zone; "" when the time is unknown. */
export function clock(at: string | undefined): string {
  const ms = parseTime(at);
  if (ms === undefined) return "";
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago"; "" when the time is unknown. */
export function ago(at: string | undefined, now: number): string {
  const ms = parseTime(at);
  if (ms === undefined) return "";
  const s = Math.floor((now - ms) / 1000);
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** A duration between two times: "850 ms", "12 s", "3 min 5 s"; "" when either is unknown. */
export function duration(from: string | undefined, to: string | undefined): string {
  const a = parseTime(from);
  const b = parseTime(to);
  if (a === undefined || b === undefined || b < a) return "";
  const ms = b - a;
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** Words for a snake_case state: "waiting_on_gate" → "waiting on gate". */
export function words(state: string): string {
  return state.replace(/_/g, " ");
}
