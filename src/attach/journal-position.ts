/**
 * Where an attached session stands in jetloop's journal: the last message on its journal
 * subjects, its stream sequence (the fence the next append expects) and the Go sequence
 * kept beside it (`Jetloop-Go-Seq`). Read from the journal itself, so a restart after any
 * delay resumes from what is stored, never from memory or the duplicate window.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { AttachError } from "../errors.js";
import { messageFrom } from "./blobs.js";
import { HEADER_GO_SEQ } from "./go-layout.js";

export interface JournalPosition {
  /** The stream sequence of the session's last journal message (0: none). */
  readonly journalSeq: number;
  /** The Go sequence of the last record attached (0: none). */
  readonly goSeq: number;
}

export const NOTHING_ATTACHED: JournalPosition = Object.freeze({ journalSeq: 0, goSeq: 0 });

/** The Go sequence a journal message carries, or undefined when it carries none (not attached). */
export function goSeqOf(header: { get(k: string): string } | undefined): number | undefined {
  const text = header?.get(HEADER_GO_SEQ) ?? "";
  if (!/^[1-9][0-9]{0,15}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The session's position in `stream` (its journal subjects `subject`). A last message
 * without a Go sequence was not written by an attach: the session's journal is not the Go
 * ledger's copy, and attaching on top of it would interleave two writers (AttachError).
 */
export async function journalPosition(jsm: JetStreamManager, stream: string, subject: string, sessionId: string): Promise<JournalPosition> {
  const last = await messageFrom(jsm, stream, { last_by_subj: subject });
  if (last === null) return NOTHING_ATTACHED;
  const goSeq = goSeqOf(last.header);
  if (goSeq === undefined) throw new AttachError(sessionId, "foreign", `its journal's last message (sequence ${last.seq}) carries no ${HEADER_GO_SEQ}: the session has events no attach wrote, so it is not followed`);
  return { journalSeq: last.seq, goSeq };
}
