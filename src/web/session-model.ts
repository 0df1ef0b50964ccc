/**
 * One session as the page shows it: its loops, their turns in order with start and end
 * times and outcome, and each turn's tool calls from the SDK's ToolActivityProjection.
 * The projection drops a call's previews once the call settles (the journal wins);
 * the page keeps the last preview it saw per call so a finalized call still shows what
 * its tool printed. Pure: deliveries in, a view out.
 */
import { ToolActivityProjection } from "../projection/tool-activity.js";
import type { ToolActivity, ToolActivityDelivery } from "../projection/types.js";

export type TurnEnd = "done" | "failed" | "interrupted";

export interface TurnView {
  readonly loopId: string;
  readonly turnId: string;
  readonly turnIndex: number | undefined;
  readonly startedAt: string | undefined;
  readonly endedAt: string | undefined;
  readonly outcome: TurnEnd | undefined;
  /** TurnFailed's error in words. */
  readonly error: string | undefined;
  readonly tools: readonly ToolActivity[];
}

export interface LoopView {
  readonly loopId: string;
  readonly startedAt: string | undefined;
  readonly turns: readonly TurnView[];
}

/** The last preview seen for a call on this page, kept after the call settles. */
export interface KeptPreview {
  readonly summary: string | undefined;
  readonly resultPreview: string | undefined;
  readonly isError: boolean;
}

interface TurnFacts {
  loopId: string;
  turnId: string;
  turnIndex: number | undefined;
  startedAt: string | undefined;
  endedAt: string | undefined;
  outcome: TurnEnd | undefined;
  error: string | undefined;
}

/** The fields of the events this model reads besides the projection's. */
interface Seen {
  readonly type: string;
  readonly loopId?: string | undefined;
  readonly turnId?: string | undefined;
  readonly createdAt?: string | undefined;
  readonly turnIndex?: number | undefined;
  readonly err?: { readonly kind?: string | undefined; readonly message?: string | undefined } | undefined;
}

const ENDS: Record<string, TurnEnd> = { TurnDone: "done", TurnFailed: "failed", TurnInterrupted: "interrupted" };
const key = (loopId: string, id: string) => `${loopId} ${id}`;

export class SessionModel {
  readonly tools = new ToolActivityProjection();
  readonly #loops = new Map<string, { startedAt: string | undefined }>();
  readonly #turns = new Map<string, TurnFacts>();
  readonly #previews = new Map<string, KeptPreview>();
  #startedAt: string | undefined;
  #lastAt: string | undefined;

  get lastJournalSeq(): number {
    return this.tools.lastJournalSeq;
  }

  /** When the session's first event was written, and its latest. */
  get startedAt(): string | undefined {
    return this.#startedAt;
  }

  get lastActivityAt(): string | undefined {
    return this.#lastAt;
  }

  /** Applies one delivery; false for an enduring one already applied (a replayed frame). */
  apply(d: ToolActivityDelivery): boolean {
    if (d.journalSeq !== 0 && d.journalSeq <= this.tools.lastJournalSeq) return false;
    const { changed } = this.tools.apply(d);
    for (const a of changed) this.#keep(a);
    const e = d.event as Seen;
    if (d.journalSeq !== 0) this.#record(e);
    return true;
  }

  /** After a lost connection: previews missed meanwhile are gone; the kept ones stay. */
  resetLive(): void {
    this.tools.resetLive();
  }

  /** The preview to show for a call: the live one, else the last one this page saw. */
  preview(a: ToolActivity): KeptPreview | undefined {
    return this.#previews.get(key(a.loopId, a.toolExecutionId));
  }

  /** Loops in the order first seen; turns in order; calls of each turn in the order first seen. */
  loops(): LoopView[] {
    const turnsByLoop = new Map<string, TurnFacts[]>();
    const addTurn = (t: TurnFacts) => {
      if (!this.#loops.has(t.loopId)) this.#loops.set(t.loopId, { startedAt: t.startedAt });
      const list = turnsByLoop.get(t.loopId) ?? [];
      list.push(t);
      turnsByLoop.set(t.loopId, list);
    };
    for (const t of this.#turns.values()) addTurn(t);
    const toolsByTurn = new Map<string, ToolActivity[]>();
    for (const a of this.tools.list()) {
      const k = key(a.loopId, a.turnId);
      // A call seen before its turn's TurnStarted (a preview overtaking the journal).
      if (!this.#turns.has(k) && !toolsByTurn.has(k)) {
        addTurn({ loopId: a.loopId, turnId: a.turnId, turnIndex: undefined, startedAt: undefined, endedAt: undefined, outcome: undefined, error: undefined });
      }
      const list = toolsByTurn.get(k) ?? [];
      list.push(a);
      toolsByTurn.set(k, list);
    }
    return [...this.#loops].map(([loopId, l]) => ({
      loopId,
      startedAt: l.startedAt,
      turns: (turnsByLoop.get(loopId) ?? []).map((t) => ({ ...t, tools: toolsByTurn.get(key(loopId, t.turnId)) ?? [] })),
    }));
  }

  #keep(a: ToolActivity): void {
    const live = a.live;
    if (live === undefined || (live.started === undefined && live.completed === undefined)) return;
    const k = key(a.loopId, a.toolExecutionId);
    const before = this.#previews.get(k);
    this.#previews.set(k, {
      summary: live.started?.summary ?? before?.summary,
      resultPreview: live.completed?.resultPreview ?? before?.resultPreview,
      isError: live.completed?.isError ?? before?.isError ?? false,
    });
  }

  #record(e: Seen): void {
    this.#startedAt ??= e.createdAt;
    if (e.createdAt !== undefined) this.#lastAt = e.createdAt;
    if (e.loopId === undefined) return;
    if (!this.#loops.has(e.loopId)) this.#loops.set(e.loopId, { startedAt: e.createdAt });
    if (e.turnId === undefined) return;
    const k = key(e.loopId, e.turnId);
    let t = this.#turns.get(k);
    if (t === undefined) {
      t = { loopId: e.loopId, turnId: e.turnId, turnIndex: undefined, startedAt: undefined, endedAt: undefined, outcome: undefined, error: undefined };
      this.#turns.set(k, t);
    }
    if (e.type === "TurnStarted") {
      t.startedAt = e.createdAt;
      t.turnIndex = e.turnIndex ?? t.turnIndex;
    } else if (e.type in ENDS) {
      t.outcome = ENDS[e.type];
      t.endedAt = e.createdAt;
      t.turnIndex = e.turnIndex ?? t.turnIndex;
      if (e.type === "TurnFailed") t.error = e.err?.message || e.err?.kind || undefined;
    } else {
      t.startedAt ??= e.createdAt;
    }
  }
}
