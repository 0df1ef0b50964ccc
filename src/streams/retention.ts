/**
 * Retention that could silently lose the journal: the limits of a stream that remove
 * events (age, bytes, counts), and the durables holding events such a limit can remove
 * before they are acknowledged. `provision --verify` and `jetloop consumers` print these.
 */

export type RetentionField = "max_age" | "max_bytes" | "max_msgs" | "max_msgs_per_subject";

/** One retention limit of the journal's stream, as the server has it. */
export interface RetentionLimit {
  readonly field: RetentionField;
  /** As the server has it: nanoseconds for max_age, else bytes or messages. */
  readonly value: number;
}

/** A warning that the journal's retention may drop events a durable has not acknowledged yet. */
export interface RetentionWarning {
  readonly durable: string;
  /** Events the durable has not acknowledged: pending plus waiting for ack. */
  readonly unacknowledged: number;
  readonly limits: readonly RetentionLimit[];
  readonly message: string;
}

const FIELDS: readonly RetentionField[] = ["max_age", "max_bytes", "max_msgs", "max_msgs_per_subject"];

/** The limits of a stream configuration that remove events (none when the journal is kept). */
export function retentionLimits(config: Readonly<Record<string, unknown>>): RetentionLimit[] {
  if (config.retention !== undefined && config.retention !== "limits") return [];
  return FIELDS.flatMap((field) => {
    const value = config[field];
    return typeof value === "number" && value > 0 ? [{ field, value }] : [];
  });
}

/** `max_age 720h`, `max_bytes 1073741824`. */
export function describeLimit(l: RetentionLimit): string {
  return l.field === "max_age" ? `max_age ${formatAge(l.value)}` : `${l.field} ${l.value}`;
}

function formatAge(ns: number): string {
  const s = ns / 1e9;
  return s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`;
}

/** One warning per durable with unacknowledged events on a stream that has limits. */
export function retentionWarnings(
  stream: string,
  config: Readonly<Record<string, unknown>>,
  durables: readonly { readonly durable: string; readonly unacknowledged: number }[],
): RetentionWarning[] {
  const limits = retentionLimits(config);
  if (limits.length === 0) return [];
  const which = limits.map(describeLimit).join(", ");
  return durables
    .filter((d) => d.unacknowledged > 0)
    .map((d) => ({
      durable: d.durable,
      unacknowledged: d.unacknowledged,
      limits,
      message: `stream ${stream} has ${which}: it can remove events durable ${d.durable} has not acknowledged (${d.unacknowledged})`,
    }));
}
