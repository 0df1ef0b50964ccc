// Events at the size limit: the largest a bus publishes on its connection (maxEventBytes
// lowered by the journal's header room so that it fits the server's max_payload).
import { encodeValidated } from "../../src/codec/codec.js";
import { AGENCY_USER } from "../../src/events/header.js";
import { createEvent, type Jetloop, type JetloopEvent, newId } from "../../src/index.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";

/** The largest encoded event `bus` publishes. */
export function eventCapOf(bus: Jetloop): number {
  const maxPayload = bus.nc.info!.max_payload;
  return Math.min(bus.settings.maxEventBytes, maxPayload - journalHeaderRoom(bus.stream, bus.namespace));
}

/** An event of `sessionId` whose encoding is exactly `cap` bytes: a PermissionDecided with a long reason. */
export function eventOfSize(cap: number, sessionId: string): JetloopEvent {
  const coords = { sessionId, loopId: newId(), turnId: newId(), stepId: newId() };
  const toolExecutionId = newId();
  const make = (n: number) => createEvent("PermissionDecided", { ...coords, cause: { commandId: newId(), toolExecutionId, agency: AGENCY_USER }, toolExecutionId, effect: "approve", reason: "r".repeat(n) });
  // Sized by trial: an empty reason is left out of the encoding, and a timestamp's
  // fraction is written without its trailing zeros, so the size moves by a few bytes.
  let n = cap - encodeValidated(make(1)).bytes.length;
  let e = make(n);
  for (let tries = 0; encodeValidated(e).bytes.length !== cap; tries++) {
    if (tries === 10) throw new Error(`no event of exactly ${cap} bytes after ${tries} tries`);
    e = make((n += cap - encodeValidated(e).bytes.length));
  }
  return e;
}
