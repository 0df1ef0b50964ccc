/**
 * The runtime's SSE frame shapes (reference §3): an enduring frame carries the journal
 * bytes verbatim with `id:` = journal sequence; an ephemeral frame carries the serve
 * shape (kind/header/delta), not the journal envelope.
 */
import { encodeEvent } from "../codec/codec.js";
import { goJson } from "../wire/wire.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { Delivery } from "../sources/delivery.js";
import { storedEventJson } from "./journal-page.js";

/** event.Header's fields in Go struct order; zero fields are omitted. */
const HEADER_KEYS = ["session_id", "loop_id", "turn_id", "step_id", "agent_name", "event_id", "created_at", "cause"] as const;

const decoder = new TextDecoder();

export function enduringFrame(journalSeq: number, json: string): string {
  return `event: enduring\nid: ${journalSeq}\ndata: {"v":1,"event":${json}}\n\n`;
}

function ephemeralFrame(event: JetloopEvent): string | undefined {
  let kind: string;
  let delta: Record<string, unknown>;
  if (event.type === "ToolCallStarted") {
    kind = "tool_call_started";
    delta = { tool_execution_id: event.toolExecutionId, tool_name: event.toolName, summary: event.summary };
  } else if (event.type === "ToolCallCompleted") {
    kind = "tool_call_completed";
    // is_error appears only when true, like Go's omitempty.
    delta = { tool_execution_id: event.toolExecutionId, is_error: event.isError || undefined, result_preview: event.resultPreview };
  } else {
    return undefined; // the runtime skips an ephemeral type it has no frame for
  }
  // The wire form carries the header (cause included) as Go writes it.
  const wire = JSON.parse(decoder.decode(encodeEvent(event))) as Record<string, unknown>;
  const header: Record<string, unknown> = {};
  for (const k of HEADER_KEYS) if (wire[k] !== undefined) header[k] = wire[k];
  const deltaJson = goJson(Object.fromEntries(Object.entries(delta).filter(([, v]) => v !== undefined && v !== "")));
  return `event: ephemeral\ndata: {"v":1,"kind":"${kind}","header":${goJson(header)},"delta":${deltaJson}}\n\n`;
}

/**
 * Enduring frames by journal position, shared by a handler's clients: every viewer of a
 * session gets the same bytes for the same position, so they are encoded once. Bounded;
 * the oldest entry goes first. A position is (shard, sequence): on a namespace split in
 * shards every shard's stream has its own sequence 1, 2, …, so a key of the sequence alone
 * served one shard's event (another session's) to a viewer of another shard.
 */
export class FrameCache {
  readonly #frames = new Map<string, string>();

  constructor(readonly capacity = 4096) {}

  /** The frame for one delivery, or undefined when the runtime writes none for it. */
  frameFor(d: Delivery<JetloopEvent>): string | undefined {
    if (d.journalSeq === 0) return ephemeralFrame(d.event);
    const at = `${d.shard}:${d.journalSeq}`;
    let frame = this.#frames.get(at);
    if (frame === undefined) {
      frame = enduringFrame(d.journalSeq, storedEventJson(d));
      this.#frames.set(at, frame);
      if (this.#frames.size > this.capacity) this.#frames.delete(this.#frames.keys().next().value!);
    }
    return frame;
  }
}

export const PING_FRAME = ": ping\n\n";
