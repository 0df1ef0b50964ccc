/**
 * Subjects jetloop's streams must never capture: the Go runtime's session store
 * (looprig/natsstore) writes one stream per session on `sessions.<uuid>`, and a jetloop
 * stream whose subjects overlap them makes the Go runtime's stream creation fail (a
 * server refuses two streams with overlapping subjects), or, created after it, is refused
 * itself. src/attach/ follows those sessions; provisioning keeps clear of them.
 */
import { OptionsError } from "../errors.js";

/** The Go runtime's session ledgers: `sessions.<uuid>`, one stream each. */
export const GO_SESSION_SUBJECTS = "sessions.>";

/** Whether some subject matches both filters (`*` one token, `>` the rest). */
export function subjectsOverlap(a: string, b: string): boolean {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; ; i++) {
    const p = x[i];
    const q = y[i];
    if (p === ">" || q === ">") return p !== undefined && q !== undefined;
    if (p === undefined || q === undefined) return p === q;
    if (p !== "*" && q !== "*" && p !== q) return false;
  }
}

/** Refuses a declared stream configuration whose subjects (or republish destination) capture the Go session subjects. */
export function refuseGoSessionOverlap(stream: string, config: Record<string, unknown>): void {
  const subjects = Array.isArray(config.subjects) ? (config.subjects as unknown[]).filter((s): s is string => typeof s === "string") : [];
  const republish = config.republish as { dest?: unknown } | undefined;
  const all = typeof republish?.dest === "string" ? [...subjects, republish.dest] : subjects;
  const hit = all.find((s) => subjectsOverlap(s, GO_SESSION_SUBJECTS));
  if (hit !== undefined) {
    throw new OptionsError("namespace", `stream ${stream} would capture ${hit}, which overlaps the Go runtime's session subjects ${GO_SESSION_SUBJECTS} (its session store's streams could no longer be created): choose another namespace`);
  }
}
