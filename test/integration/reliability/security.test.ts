// Scenario 7 (RELIABILITY.md): deploy/nats/permissions.example.conf, run verbatim. A user
// follows its own session and is refused another's (and the whole namespace feed) with a
// typed PermissionDeniedError, not a hang; a gateway user follows every session's feed; a user without publish rights on the journal cannot append; grant tokens and raw
// tool arguments reach neither the stream nor the logs.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { securityScenario } from "../../harness/reliability/scenarios/security.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: per-session permissions and secrets", () => {
  it("confines each user to its session, refuses the rest typed and promptly, and leaks no secret", async () => {
    const r = await securityScenario(defaultContext(), { events: 40 });
    saveRecord(r.record);

    // Each follows its own session, and nothing of the other's.
    expect(r.alice).toMatchObject({ published: 40, delivered: 40, lost: 0, duplicated: 0, unexpected: 0, foreign: 0 });
    expect(r.bob).toMatchObject({ published: 40, delivered: 40, lost: 0, duplicated: 0, unexpected: 0, foreign: 0 });
    // The gateway user follows every session on the namespace feed: each enduring event once, in order.
    expect(r.gateway).toMatchObject({ published: 40, delivered: 40, lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0 });
    // A service's durable with a guessable name: alice (her grant names only her pool's
    // consumers) could neither pull from it nor delete it; it delivered every event once.
    expect(r.billing).toMatchObject({ published: 40, delivered: 40, lost: 0, duplicated: 0 });
    for (const what of ["pull from the durable billing", "delete the durable billing", "read the durable billing's state"]) {
      expect(r.attacks.find((a) => a.what === what), what).toMatchObject({ refused: true, how: "permissions violation" });
    }
    // Every other read, append, answer or control through jetloop: PermissionDeniedError (the
    // commands: CommandError with code PERMISSION_DENIED), promptly.
    expect(r.refusals.map((x) => [x.what, x.outcome])).toEqual(r.refusals.map((x) => [x.what, "PermissionDeniedError"]));
    for (const x of r.refusals) expect(x.ms, x.what).toBeLessThan(2000);
    // ... naming the subject the server refused.
    for (const x of r.refusals) expect(x.subject, x.what).toMatch(/^(\$JS\.API\.CONSUMER\.CREATE\.acme_journal(\.|$)|acme\.(journal|live|feed|cmd)\.)/);
    // Her own session replays, before and after the crossing table (her pool's names, her filter in the create subject).
    expect(r.ownReplay).toBe(r.ownEnduring);
    // The raw API: every attempt refused, by the permissions or by the JetStream API.
    expect(r.attacks.filter((a) => !a.refused)).toEqual([]);
    // The crossing table: every consumer path (raw and through jetloop) × every consumer not
    // hers (service durables, partition durables, bob's pool, her pool aimed at bob's session):
    // 0 crossings, each refused promptly (jetloop: typed), no consumer's config changed.
    expect(r.crossings.targets.map((t) => t.kind)).toEqual(expect.arrayContaining(["service durable", "partition durable", "another follower's pool", "her own pool"]));
    expect(r.crossings.attempts.length).toBeGreaterThan(200);
    expect(r.crossings.attempts.filter((a) => !a.refused)).toEqual([]);
    for (const a of r.crossings.attempts) expect(a.ms, `${a.path} ${a.target}`).toBeLessThan(2500);
    expect(r.crossings.changed).toEqual([]);
    // The gateway with a per-user principal: bob's session is not there for alice's token (404), hers is.
    const own = r.gatewayAttempts.find((g) => g.what.startsWith("her own"));
    expect(own?.status).toBe(200);
    for (const g of r.gatewayAttempts.filter((x) => x !== own)) {
      // The journal route answers an unseen session as an empty page (reference §4), never 404.
      if (g.what.includes("journal")) expect([g.status, g.events], g.what).toEqual([200, 0]);
      else expect(g.status, g.what).toBe(404);
      expect(g.ms, g.what).toBeLessThan(2500);
    }
    // Her pool's reads delete their consumers.
    expect(r.poolLeft).toEqual([]);
    // Secrets: requests carrying them refused typed; extra envelope keys dropped, not stored.
    for (const s of r.secretAppends) {
      if (s.what.startsWith("request") || s.what.startsWith("requirement")) expect(s, s.what).toMatchObject({ outcome: "EVENT_ENCODE", typed: true });
      expect(s.leaksInMessage, s.what).toBe(false);
    }
    expect(r.poisonReported).toBe(r.poisonInjected);
    expect(r.streamHits).toBe(0);
    expect(r.deliveredHits).toBe(0);
    expect(r.logLines).toBeGreaterThan(0);
    expect(r.logHits).toEqual([]);
  }, 90_000);
});
