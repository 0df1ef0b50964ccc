// The attach's fault table (RELIABILITY.md, scenario 19): each attach test that drives a
// fault records its counts as one part of the scenario, and the report joins the parts of
// a run into one table. The counts are per Go record: Go events written, journal events,
// duplicated, missing (lost), out of Go's order, parked.
import { natsServerVersion } from "../context.js";
import { defaultContext } from "./scenarios/common.js";
import { saveRecord } from "./save.js";

export const ATTACH_SCENARIO = "19-attach";
export const ATTACH_TITLE = "19. Attaching a Go runtime's session store under faults";

export interface AttachCounts {
  readonly goEvents: number;
  readonly jetloopEvents: number;
  readonly duplicated: number;
  readonly missing: number;
  readonly outOfOrder: number;
  readonly parked?: number;
}

/** Records one fault's counts as part `part` (its order in the table) of the attach scenario. */
export function saveAttachFault(part: string, fault: string, counts: AttachCounts, startedAt: number, facts: Record<string, number | string | boolean> = {}): void {
  saveRecord({
    id: ATTACH_SCENARIO,
    title: ATTACH_TITLE,
    part,
    run: defaultContext().run,
    serverVersion: natsServerVersion(),
    finishedAt: new Date().toISOString(),
    durationMs: Date.now() - startedAt,
    rows: [
      {
        what: fault,
        published: counts.goEvents,
        delivered: counts.jetloopEvents,
        lost: counts.missing,
        duplicated: counts.duplicated,
        notes: { "out of order": counts.outOfOrder, parked: counts.parked ?? 0 },
      },
    ],
    facts,
  });
}
