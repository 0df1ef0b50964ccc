/**
 * Events for the benchmarks: valid, representative, built before any timer starts.
 * `PermissionDecided` (a tool event with the full quartet and a short reason) is the
 * enduring workload, `ToolCallStarted` the ephemeral one; both encode to a few hundred
 * bytes, the size of most journal traffic.
 */
import { defaultRegistry, encodeEvent, eventSubject, marshalEvent, newId, validateEvent, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { shardOfSession } from "../../src/streams/shards.js";

export interface Coordinates {
  sessionId: string;
  loopId: string;
  turnId: string;
  stepId: string;
}

export function coordinates(sessionId = newId(), loopId = newId()): Coordinates {
  return { sessionId, loopId, turnId: newId(), stepId: newId() };
}

/**
 * Events are cloned from one validated template per kind with fresh ids: createEvent costs
 * tens of microseconds here (validation, v7 ids), and a run needs a few million events.
 * The ids come from a counter in the shape of a canonical v7 UUID, so every clone is as
 * valid as the template (jetloop validates it again when it is published).
 */
let counter = 0;

function freshId(): string {
  counter += 1;
  return `0190f2a1-5b3c-7aaa-8f60-${counter.toString(16).padStart(12, "0")}`;
}

const CREATED_AT = new Date().toISOString();

export function enduringEvent(c: Coordinates): JetloopEvent {
  return {
    type: "PermissionDecided",
    ...c,
    eventId: freshId(),
    createdAt: CREATED_AT,
    toolExecutionId: freshId(),
    effect: "approve",
    reason: "the command matches the workspace policy for npm test",
    subject: "bash: npm test",
  } as JetloopEvent;
}

export function ephemeralEvent(c: Coordinates): JetloopEvent {
  return {
    type: "ToolCallStarted",
    ...c,
    eventId: freshId(),
    createdAt: CREATED_AT,
    toolExecutionId: freshId(),
    toolName: "bash",
    summary: "npm test -- --reporter=dot",
  } as JetloopEvent;
}

/** Appends `events` with `publishAll` in chunks of 1,000 (the fan-out benchmark's appends, here and in its child process). */
export async function publishInChunks(bus: Pick<Jetloop, "publishAll">, events: readonly JetloopEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) await bus.publishAll(events.slice(i, i + 1000));
}

/** The templates are valid events: checked once, by jetloop's own validation. */
export function checkTemplates(): void {
  const c = coordinates();
  for (const e of [enduringEvent(c), ephemeralEvent(c)]) validateEvent(e);
}

/** An event already on the wire: its subject, bytes and message id (for the raw clients). */
export interface WireEvent {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly eventId: string;
}

/** `shards`: the count the namespace's journal is split in (the subject of the session's shard). */
export function toWire(ns: string, e: JetloopEvent, shards = 1): WireEvent {
  const def = defaultRegistry.get(e.type)!;
  const live = def.class === "ephemeral";
  const data = live ? encodeEvent(e) : marshalEvent(e);
  const loopId = "loopId" in e ? e.loopId : undefined;
  const subject = eventSubject(ns, live ? "live" : "journal", { sessionId: e.sessionId, loopId, family: def.family, type: e.type }, live ? undefined : shardOfSession(e.sessionId, shards));
  return { subject, data, eventId: e.eventId };
}

/** `n` enduring events spread over `sessions` sessions of `loops` loops each, round robin. */
export function enduringBatch(n: number, sessions = 1, loops = 4): JetloopEvent[] {
  const coords: Coordinates[] = [];
  for (let s = 0; s < sessions; s++) {
    const sessionId = newId();
    for (let l = 0; l < loops; l++) coords.push(coordinates(sessionId));
  }
  const out: JetloopEvent[] = new Array<JetloopEvent>(n);
  for (let i = 0; i < n; i++) out[i] = enduringEvent(coords[i % coords.length]!);
  return out;
}

/** An event's wire object (snake_case, as jetloop's codec writes it), for a raw JSON.stringify. */
export function wireObject(e: JetloopEvent): unknown {
  return JSON.parse(new TextDecoder().decode(encodeEvent(e))) as unknown;
}
