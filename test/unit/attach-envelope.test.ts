// The Go ledger envelope read as harness pkg/sessionstore's decodeEnvelope reads it, over
// every recorded message (test/conformance/data/natsstore/) and the refusals Go makes; and
// the subject overlap provisioning refuses.
import { describe, expect, it } from "vitest";
import { decodeBlobPointer, decodeGoEnvelope, goBase64 } from "../../src/attach/envelope.js";
import { subjectsOverlap } from "../../src/streams/foreign-subjects.js";
import { readRecording } from "../harness/natsstore.js";

const enc = (s: string) => Buffer.from(s);

describe("a Go ledger envelope", () => {
  it("reads every recorded ledger message, its body the bytes Go handed the ledger", () => {
    const rec = readRecording();
    const ledgers = rec.messages.filter((m) => m.stream.startsWith("sessions_s"));
    expect(ledgers).toHaveLength(67);
    for (const m of ledgers) {
      const r = decodeGoEnvelope(Buffer.from(m.data_b64, "base64"));
      expect(r.ok, `${m.stream} ${m.seq}`).toBe(true);
      const sid = m.stream.slice("sessions_s".length);
      const go = rec.appended.find((a) => a.session === sid && a.seq === m.seq);
      if (r.ok && go && r.envelope.kind !== "blobptr") expect(Buffer.from(r.envelope.body).toString("base64")).toBe(go.body_b64);
    }
  });

  it("refuses what Go refuses: another version, an unknown kind, a body that is not standard base64, a non-object", () => {
    expect(decodeGoEnvelope(enc('{"v":2,"kind":"event","id":"a","body":""}'))).toMatchObject({ ok: false, reason: "unsupported version 2" });
    expect(decodeGoEnvelope(enc('{"v":null,"kind":"event"}'))).toMatchObject({ ok: false, reason: "unsupported version 0" });
    expect(decodeGoEnvelope(enc("null"))).toMatchObject({ ok: false, reason: "unsupported version 0" });
    expect(decodeGoEnvelope(enc('{"v":1,"kind":"snapshot","id":"a"}'))).toMatchObject({ ok: false, reason: 'unknown kind "snapshot"' });
    expect(decodeGoEnvelope(enc('{"v":1,"kind":"event","body":"e30"}')).ok).toBe(false);
    expect(decodeGoEnvelope(enc('{"v":1,"kind":"event","body":"e3-="}')).ok).toBe(false);
    expect(decodeGoEnvelope(enc('{"v":"1","kind":"event"}')).ok).toBe(false);
    expect(decodeGoEnvelope(enc("[1]")).ok).toBe(false);
    expect(decodeGoEnvelope(enc("{")).ok).toBe(false);
  });

  it("takes what Go takes: keys in any letter case (a later one wins), unknown keys, a null body, CR/LF inside base64", () => {
    const r = decodeGoEnvelope(enc('{"V":1,"KIND":"fence","kind":"event","Id":"x","extra":true,"body":"e30=\\r\\n"}'));
    expect(r).toMatchObject({ ok: true, envelope: { v: 1, kind: "event", id: "x" } });
    if (r.ok) expect(Buffer.from(r.envelope.body).toString()).toBe("{}");
    const empty = decodeGoEnvelope(enc('{"v":1,"kind":"fence","id":"1","body":null}'));
    expect(empty.ok && empty.envelope.body.length).toBe(0);
    expect(goBase64("e30=")).toBeDefined();
    expect(goBase64("e31=")).toBeUndefined(); // non-zero trailing bits: Go's strict decoder refuses them
  });

  it("reads a blob pointer's body", () => {
    expect(decodeBlobPointer(enc('{"key":"k","size":3,"sha256":"ab"}'))).toEqual({ key: "k", size: 3, sha256: "ab" });
    expect(typeof decodeBlobPointer(enc('{"key":1}'))).toBe("string");
  });
});

describe("subjects a jetloop stream must not capture", () => {
  it("overlap token by token", () => {
    expect(subjectsOverlap("sessions.journal.>", "sessions.>")).toBe(true);
    expect(subjectsOverlap("sessions.>", "sessions.>")).toBe(true);
    expect(subjectsOverlap("*.journal.>", "sessions.>")).toBe(true);
    expect(subjectsOverlap(">", "sessions.>")).toBe(true);
    expect(subjectsOverlap("jetloop.journal.>", "sessions.>")).toBe(false);
    expect(subjectsOverlap("sessions", "sessions.>")).toBe(false);
    expect(subjectsOverlap("sessionsx.journal.>", "sessions.>")).toBe(false);
  });
});
