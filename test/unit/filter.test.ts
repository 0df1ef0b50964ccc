// resolveFilter: every part of an EventFilter becomes a server-side subject filter.
import { describe, expect, it } from "vitest";
import {
  defaultRegistry,
  defineEventType,
  OptionsError,
  type EventFilter,
} from "../../src/index.js";
import { resolveFilter } from "../../src/sources/filter.js";
import { ID } from "./fixtures.js";

const NS = "acme";
const S1 = ID.session;
const S2 = "0190f2a1-5b3c-7d4e-8f60-0000000000b2";
const L1 = ID.loop;
const L2 = "0190f2a1-5b3c-7d4e-8f60-0000000000c2";

const resolve = (filter: EventFilter) => resolveFilter(NS, filter, defaultRegistry);

/** Runs `fn`, expecting an OptionsError about `option`. */
function expectOptionsError(fn: () => unknown, option: string, message?: RegExp): OptionsError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(OptionsError);
  const err = thrown as OptionsError;
  expect(err.code).toBe("OPTIONS_INVALID");
  expect(err.option).toBe(option);
  if (message) expect(err.message).toMatch(message);
  return err;
}

describe("resolveFilter: loops", () => {
  it("all loops of all sessions is one wildcard subject per channel", () => {
    expect(resolve({ enduring: "all", ephemeral: "all" })).toEqual({
      journalSubjects: ["acme.journal.*.*.>"],
      feedSubjects: ["acme.feed.*.*.>"],
      previewSubjects: ["acme.live.*.*.>"],
      shards: [{ shard: { index: 0, count: 1 }, journalSubjects: ["acme.journal.*.*.>"], feedSubjects: ["acme.feed.*.*.>"] }],
      includeInternal: false,
    });
  });

  it("a set of loops is one subject per loop plus the `_` token for session-scoped events", () => {
    const r = resolve({ enduring: { loops: [L1, L2] } });
    expect(r.journalSubjects).toEqual([`acme.journal.*.${L1}.>`, `acme.journal.*.${L2}.>`, "acme.journal.*._.>"]);
    // Live subscriptions follow the same selection on the feed.
    expect(r.feedSubjects).toEqual([`acme.feed.*.${L1}.>`, `acme.feed.*.${L2}.>`, "acme.feed.*._.>"]);
    expect(r.previewSubjects).toEqual([]);
  });

  it("repeated loop ids are listed once", () => {
    expect(resolve({ enduring: { loops: [L1, L1, L1] } }).journalSubjects).toEqual([`acme.journal.*.${L1}.>`, "acme.journal.*._.>"]);
  });

  it("an empty loop set still passes session-scoped events, and nothing else", () => {
    expect(resolve({ enduring: { loops: [] } }).journalSubjects).toEqual(["acme.journal.*._.>"]);
  });

  it("ephemeral and enduring scopes are independent", () => {
    const r = resolve({ enduring: "all", ephemeral: { loops: [L2] } });
    expect(r.journalSubjects).toEqual(["acme.journal.*.*.>"]);
    expect(r.previewSubjects).toEqual([`acme.live.*.${L2}.>`, "acme.live.*._.>"]);
    const only = resolve({ ephemeral: { loops: [L1] } });
    expect(only.journalSubjects).toEqual([]);
    expect(only.previewSubjects).toEqual([`acme.live.*.${L1}.>`, "acme.live.*._.>"]);
  });

  it("accepts any iterable of loop ids (a Set)", () => {
    expect(resolve({ enduring: { loops: new Set([L2]) } }).journalSubjects).toEqual([`acme.journal.*.${L2}.>`, "acme.journal.*._.>"]);
  });

  it("a multi-token namespace prefixes every subject", () => {
    const r = resolveFilter("org.team", { enduring: { loops: [L1] } }, defaultRegistry);
    expect(r.journalSubjects).toEqual([`org.team.journal.*.${L1}.>`, "org.team.journal.*._.>"]);
  });
});

describe("resolveFilter: sessions", () => {
  it("one session fixes the session token", () => {
    expect(resolve({ enduring: "all", sessions: [S1] }).journalSubjects).toEqual([`acme.journal.${S1}.*.>`]);
  });

  it("several sessions give one subject per session (and per loop)", () => {
    expect(resolve({ enduring: "all", sessions: [S1, S2] }).journalSubjects).toEqual([`acme.journal.${S1}.*.>`, `acme.journal.${S2}.*.>`]);
    expect(resolve({ ephemeral: { loops: [L1] }, sessions: [S1, S2] }).previewSubjects).toEqual([
      `acme.live.${S1}.${L1}.>`,
      `acme.live.${S1}._.>`,
      `acme.live.${S2}.${L1}.>`,
      `acme.live.${S2}._.>`,
    ]);
  });

  it('"all" and an omitted session list are the same wildcard', () => {
    const all = resolve({ enduring: "all", sessions: "all" });
    expect(all).toEqual(resolve({ enduring: "all" }));
    expect(all.journalSubjects).toEqual(["acme.journal.*.*.>"]);
  });

  it("repeated session ids are listed once", () => {
    expect(resolve({ enduring: "all", sessions: [S1, S1] }).journalSubjects).toEqual([`acme.journal.${S1}.*.>`]);
  });
});

describe("resolveFilter: types and families", () => {
  it("a type selects its family and type tokens", () => {
    const r = resolve({ enduring: "all", ephemeral: "all", types: ["PermissionDecided", "ToolCallStarted"] });
    expect(r.journalSubjects).toEqual(["acme.journal.*.*.tool.PermissionDecided", "acme.journal.*.*.tool.ToolCallStarted"]);
    expect(r.previewSubjects).toEqual(["acme.live.*.*.tool.PermissionDecided", "acme.live.*.*.tool.ToolCallStarted"]);
  });

  it("a family selects every type of it", () => {
    expect(resolve({ enduring: "all", families: ["gate", "turn"] }).journalSubjects).toEqual(["acme.journal.*.*.gate.*", "acme.journal.*.*.turn.*"]);
  });

  it("a type inside a selected family is not listed again (overlapping filters are refused by the server)", () => {
    const r = resolve({ enduring: "all", families: ["step"], types: ["StepDone", "TurnDone"] });
    expect(r.journalSubjects).toEqual(["acme.journal.*.*.step.*", "acme.journal.*.*.turn.TurnDone"]);
  });

  it("repeated types and families are listed once", () => {
    const r = resolve({ enduring: "all", families: ["gate", "gate"], types: ["TurnDone", "TurnDone"] });
    expect(r.journalSubjects).toEqual(["acme.journal.*.*.gate.*", "acme.journal.*.*.turn.TurnDone"]);
  });

  it("types, loops and sessions multiply: session × loop × selector", () => {
    const r = resolve({ enduring: { loops: [L1] }, sessions: [S1], types: ["StepDone", "SessionStopped"] });
    expect(r.journalSubjects).toEqual([
      `acme.journal.${S1}.${L1}.step.StepDone`,
      `acme.journal.${S1}.${L1}.session.SessionStopped`,
      `acme.journal.${S1}._.step.StepDone`,
      `acme.journal.${S1}._.session.SessionStopped`,
    ]);
  });

  it("an application's registered type and family resolve like built-in ones", () => {
    const registry = defaultRegistry.with(defineEventType({ type: "ReviewPosted", family: "review", class: "enduring", scope: "loop", body: {} }));
    expect(resolveFilter(NS, { enduring: "all", types: ["ReviewPosted"] }, registry).journalSubjects).toEqual(["acme.journal.*.*.review.ReviewPosted"]);
    expect(resolveFilter(NS, { enduring: "all", families: ["review"] }, registry).journalSubjects).toEqual(["acme.journal.*.*.review.*"]);
  });

  it("unknown types and families are refused", () => {
    expectOptionsError(() => resolve({ enduring: "all", types: ["NoSuchEvent"] }), "types", /not a known event type/);
    expectOptionsError(() => resolve({ enduring: "all", families: ["nosuch"] }), "families", /not a known event family/);
    expectOptionsError(() => resolve({ enduring: "all", types: ["tool.*"] }), "types");
    expectOptionsError(() => resolve({ enduring: "all", families: [">"] }), "families");
  });
});

describe("resolveFilter: visibility", () => {
  it("internal events are excluded unless the caller opts in", () => {
    expect(resolve({ enduring: "all" }).includeInternal).toBe(false);
    expect(resolve({ enduring: "all", includeInternal: false }).includeInternal).toBe(false);
    expect(resolve({ enduring: "all", includeInternal: true }).includeInternal).toBe(true);
  });
});

describe("resolveFilter: invalid filters", () => {
  const bad = [
    ["a dot", `${L1.slice(0, 8)}.${L1.slice(9)}`],
    ["a star", "*"],
    ["a tail wildcard", ">"],
    ["whitespace", ` ${L1}`],
    ["uppercase", L1.toUpperCase()],
    ["a UUID without dashes", L1.replaceAll("-", "")],
    ["an empty string", ""],
    ["a subject injection", `${L1}.>`],
  ] as const;

  it.each(bad)("refuses a loop id with %s", (_what, id) => {
    expectOptionsError(() => resolve({ enduring: { loops: [L1, id] } }), "enduring.loops", /canonical lowercase UUID/);
    expectOptionsError(() => resolve({ ephemeral: { loops: [id] } }), "ephemeral.loops", /canonical lowercase UUID/);
  });

  it.each(bad)("refuses a session id with %s", (_what, id) => {
    expectOptionsError(() => resolve({ enduring: "all", sessions: [S1, id] }), "sessions", /canonical lowercase UUID/);
  });

  it("refuses the nil UUID for its own reason: it is well formed but names nothing", () => {
    const nil = "00000000-0000-0000-0000-000000000000";
    expectOptionsError(() => resolve({ enduring: { loops: [nil] } }), "enduring.loops", /is the nil UUID, which names nothing/);
    expectOptionsError(() => resolve({ enduring: "all", sessions: [nil] }), "sessions", /is the nil UUID, which names nothing/);
  });

  it("refuses a filter that selects neither the enduring nor the ephemeral part", () => {
    expectOptionsError(() => resolve({}), "filter", /at least one/);
    expectOptionsError(() => resolve({ sessions: [S1], types: ["StepDone"] }), "filter");
    expectOptionsError(() => resolve({ enduring: undefined, ephemeral: undefined }), "filter");
  });

  it("refuses empty session, type and family lists: they would select nothing", () => {
    expectOptionsError(() => resolve({ enduring: "all", sessions: [] }), "sessions", /selects nothing/);
    expectOptionsError(() => resolve({ enduring: "all", types: [] }), "types", /selects nothing/);
    expectOptionsError(() => resolve({ enduring: "all", families: [] }), "types", /selects nothing/);
    expectOptionsError(() => resolve({ enduring: "all", families: [], types: [] }), "types", /selects nothing/);
  });

  it("refuses a loop scope that is neither \"all\" nor { loops }", () => {
    const scopes: unknown[] = ["some", null, 3, {}, { loop: [L1] }];
    for (const scope of scopes) {
      expectOptionsError(() => resolve({ enduring: scope as EventFilter["enduring"] }), "enduring");
      expectOptionsError(() => resolve({ ephemeral: scope as EventFilter["ephemeral"] }), "ephemeral");
    }
  });
});
