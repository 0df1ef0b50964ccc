// The session catalog's entry against the Go runtime's own catalog: the sessions a Go
// runtime wrote into NATS (test/conformance/data/natsstore/, recorded with looprig/natsstore:
// every stored message, offloaded records included) folded by catalog/fold.ts, field by
// field against the SessionMeta Go's catalog built from the same records
// (catalog-go.json, `list_sessions`), and the entry's fields in Go's order.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { unmarshalEvent } from "../../src/index.js";
import { encodeEntry, entryOf } from "../../src/catalog/entry.js";
import { StatusFold } from "../../src/catalog/fold.js";
import { conformanceDir } from "../conformance/go-oracle.js";

const at = (name: string) => join(conformanceDir, "natsstore", name);
const lines = (name: string) =>
  gunzipSync(readFileSync(at(name)))
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const messages = lines("messages.jsonl.gz") as { stream: string; seq: number; subject: string; data_b64: string }[];
const objects = new Map((lines("objects.jsonl.gz") as { name: string; data_b64: string }[]).map((o) => [o.name, Buffer.from(o.data_b64, "base64")]));
const goList = (JSON.parse(readFileSync(at("catalog-go.json"), "utf8")) as { list_sessions: Record<string, unknown>[] }).list_sessions;

interface Envelope {
  readonly kind: string;
  readonly body: string;
}

/** A ledger record's event bytes: an event envelope's body, or the one its blob pointer names; undefined for fences, commands and private records. */
function eventBytes(envelope: Envelope): Buffer | undefined {
  if (envelope.kind === "event") return Buffer.from(envelope.body, "base64");
  if (envelope.kind !== "blobptr") return undefined;
  const ptr = JSON.parse(Buffer.from(envelope.body, "base64").toString("utf8")) as { key: string };
  return eventBytes(JSON.parse(objects.get(ptr.key)!.toString("utf8")) as Envelope);
}

function fold(sessionId: string): StatusFold {
  const f = new StatusFold();
  for (const m of messages.filter((x) => x.subject === `sessions.${sessionId}`).sort((a, b) => a.seq - b.seq)) {
    const data = eventBytes(JSON.parse(Buffer.from(m.data_b64, "base64").toString("utf8")) as Envelope);
    if (data === undefined) continue;
    f.apply({ event: unmarshalEvent(data.toString("utf8")), journalSeq: m.seq, shard: 0, subject: m.subject, data });
  }
  return f;
}

/** The SessionMeta fields jetloop's entry keeps; `last_active_at` is Go's wall clock at update time, which no fold of a journal reproduces. */
const KEPT = ["session_id", "title", "created_at", "status", "loop_count", "state", "last_journal_seq", "active_turn_id", "waiting_gate_id"];

describe("the catalog entry against Go's SessionMeta", () => {
  it("has the Go-written sessions to compare", () => expect(goList.length).toBe(3));

  for (const go of goList) {
    const sid = go.session_id as string;
    it(`folds ${sid} to the entry Go's catalog built: title, created_at, status, loop_count, state, last_journal_seq, active turn`, () => {
      const f = fold(sid);
      const entry = JSON.parse(encodeEntry(entryOf(sid, 0, f.lastJournalSeq, f))) as Record<string, unknown>;
      const ours = Object.fromEntries(Object.entries(entry).filter(([k]) => KEPT.includes(k)));
      const theirs = Object.fromEntries(Object.entries(go).filter(([k]) => KEPT.includes(k)));
      expect(ours).toEqual(theirs);
      // The same fields in Go's order (SessionMeta's), then jetloop's object last.
      const goOrder = Object.keys(go).filter((k) => k in ours);
      expect(Object.keys(entry).filter((k) => k !== "last_active_at" && k !== "jetloop")).toEqual(goOrder);
      expect(Object.keys(entry).at(-1)).toBe("jetloop");
    });
  }
});
