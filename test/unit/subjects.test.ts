// The subject module: every subject jetloop uses is built and parsed here, and no token
// can smuggle a NATS metacharacter, whitespace or a non-canonical id into a subject.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  commandSubject,
  eventSubject,
  filterSubject,
  NIL_UUID,
  NO_LOOP,
  parseEventSubject,
  SubjectError,
  type Channel,
  type SubjectAddress,
} from "../../src/index.js";
import { checkNamespace, journalToken, shardOfToken, UNSHARDED, eventSubject as buildSubject, durableNameSchema, feedRepublish, filterSelects, parkedFilter, sessionJournalSubject, streamLeaderElectedSubject, streamSubjects, switchChannel, validEventSubject } from "../../src/subjects/subjects.js";
import { ApiCodes, RepublishHeaders } from "../../src/subjects/nats-names.js";
import { JetStreamApiCodes, RepublishHeaders as NatsRepublishHeaders } from "@nats-io/jetstream";

const S = "0190f2a1-5b3c-7d4e-8f60-000000000001";
const L = "0190f2a1-5b3c-7d4e-8f60-000000000002";

/** Ids and tokens that must never reach a subject. */
const BAD_IDS: unknown[] = [
  "a.b",
  "*",
  ">",
  `${S}.>`,
  `${S}.*`,
  `${S}.x`,
  "",
  " ",
  ` ${S}`,
  `${S} `,
  `${S}\t`,
  `${S}\n`,
  `${S}\r`,
  S.toUpperCase(),
  S.slice(0, 8).toUpperCase() + S.slice(8),
  S.replaceAll("-", ""),
  `{${S}}`,
  `urn:uuid:${S}`,
  S.slice(0, -1),
  `${S}0`,
  NIL_UUID,
  NO_LOOP,
  undefined,
  null,
  42,
  {},
];

function subjectError(fn: () => unknown): SubjectError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(SubjectError);
  expect((thrown as SubjectError).code).toBe("SUBJECT_INVALID");
  return thrown as SubjectError;
}

describe("namespaces", () => {
  it.each(["jetloop", "a", "acme.prod", "A-b-c", "a.b.c.d", "x".repeat(64), "0"])("accepts %j", (ns) => {
    expect(checkNamespace(ns)).toBe(ns);
    expect(eventSubject(ns, "journal", { sessionId: S, family: "session", type: "SessionStarted" })).toBe(`${ns}.journal.${S}._.session.SessionStarted`);
  });

  it.each([
    "",
    ".",
    "a.",
    ".a",
    "a..b",
    "a.*",
    "*",
    ">",
    "a.>",
    "a b",
    " a",
    "a\t",
    "a\n",
    "a.b.c.d.e",
    "x".repeat(65),
    "ä",
    "a/b",
    "$JS",
    // `_` would let "a.b" and "a_b" share the stream name a_b_journal
    "a_b",
    "_INBOX",
  ])("refuses %j", (ns) => {
    subjectError(() => checkNamespace(ns));
    subjectError(() => eventSubject(ns, "journal", { sessionId: S, loopId: L, family: "tool", type: "PermissionDecided" }));
    subjectError(() => filterSubject(ns, "journal", {}));
    subjectError(() => commandSubject(ns, S, L, "answer"));
    subjectError(() => streamSubjects(ns));
  });

  it("refuses non-strings", () => {
    for (const ns of [undefined, null, 1, {}, ["a"]]) subjectError(() => checkNamespace(ns as string));
  });

  it("keeps the dotted namespace as leading tokens", () => {
    expect(streamSubjects("acme.prod")).toEqual(["acme.prod.journal.>"]);
    expect(sessionJournalSubject("acme.prod", S)).toBe(`acme.prod.journal.${S}.>`);
  });
});

describe("eventSubject", () => {
  it("builds {ns}.{journal|live}.{sessionId}.{loopId|_}.{family}.{Type}", () => {
    expect(eventSubject("jl", "journal", { sessionId: S, loopId: L, family: "tool", type: "PermissionRequested" })).toBe(
      `jl.journal.${S}.${L}.tool.PermissionRequested`,
    );
    expect(eventSubject("jl", "live", { sessionId: S, loopId: L, family: "tool", type: "ToolCallStarted" })).toBe(`jl.live.${S}.${L}.tool.ToolCallStarted`);
    expect(eventSubject("jl", "journal", { sessionId: S, family: "session", type: "SessionStarted" })).toBe(`jl.journal.${S}._.session.SessionStarted`);
    expect(eventSubject("jl", "journal", { sessionId: S, loopId: undefined, family: "gate", type: "GateOpened" })).toBe(`jl.journal.${S}._.gate.GateOpened`);
  });

  it("refuses a session or loop id that is not a canonical, non-nil, lowercase UUID", () => {
    for (const bad of BAD_IDS) {
      subjectError(() => eventSubject("jl", "journal", { sessionId: bad as string, loopId: L, family: "tool", type: "PermissionDecided" }));
      if (bad !== undefined) subjectError(() => eventSubject("jl", "journal", { sessionId: S, loopId: bad as string, family: "tool", type: "PermissionDecided" }));
    }
  });

  it("refuses a family or type token that is not lowercase / PascalCase without metacharacters", () => {
    const families = ["", "Tool", "to.ol", "tool*", ">", "to ol", "1tool", "tool-x", "t".repeat(33)];
    for (const family of families) subjectError(() => eventSubject("jl", "journal", { sessionId: S, loopId: L, family, type: "PermissionDecided" }));
    const types = ["", "permissionDecided", "Permission.Decided", "Permission*", ">", "Permission Decided", "Permission_Decided", "P".repeat(65)];
    for (const type of types) subjectError(() => eventSubject("jl", "journal", { sessionId: S, loopId: L, family: "tool", type }));
  });

  it("refuses a channel other than journal and live (a caller bypassing the type)", () => {
    for (const channel of ["cmd", "journal.x", "*", ">", "", "Journal"]) {
      subjectError(() => eventSubject("jl", channel as Channel, { sessionId: S, loopId: L, family: "tool", type: "PermissionDecided" }));
      subjectError(() => filterSubject("jl", channel as Channel, {}));
    }
  });
});

describe("parseEventSubject", () => {
  const addresses: SubjectAddress[] = [
    { sessionId: S, loopId: L, family: "tool", type: "PermissionRequested" },
    { sessionId: S, loopId: undefined, family: "session", type: "SessionStopped" },
    { sessionId: L, loopId: S, family: "my_family2", type: "MyEvent42" },
  ];

  it("round-trips every address on both channels and in dotted namespaces", () => {
    for (const ns of ["jl", "acme.prod", "a.b.c.d"]) {
      for (const channel of ["journal", "live"] as const) {
        for (const a of addresses) {
          const subject = eventSubject(ns, channel, a);
          expect(parseEventSubject(ns, subject)).toEqual({ channel, ...a, shard: UNSHARDED });
          expect(eventSubject(ns, channel, parseEventSubject(ns, subject))).toBe(subject);
          // The hot paths' unchecked builder writes the same subject for good parts.
          expect(validEventSubject(ns, channel, a)).toBe(subject);
        }
      }
    }
  });

  it("refuses subjects that are not event subjects of the namespace", () => {
    const ok = `jl.journal.${S}.${L}.tool.PermissionDecided`;
    expect(parseEventSubject("jl", ok).loopId).toBe(L);
    const bad = [
      `other.journal.${S}.${L}.tool.PermissionDecided`, // another namespace
      `jlx.journal.${S}.${L}.tool.PermissionDecided`, // a namespace that merely starts alike
      `jl.prod.journal.${S}.${L}.tool.PermissionDecided`, // a longer namespace
      `jl.cmd.${S}.${L}.tool.PermissionDecided`,
      `jl.journal.${S}.${L}.tool`,
      `jl.journal.${S}.${L}.tool.PermissionDecided.extra`,
      `jl.journal.${S}.${L}.>`,
      `jl.journal.*.${L}.tool.PermissionDecided`,
      `jl.journal.${S}.*.tool.PermissionDecided`,
      `jl.journal.${S}.${L}.*.PermissionDecided`,
      `jl.journal.${S}.${L}.tool.*`,
      `jl.journal.${S.toUpperCase()}.${L}.tool.PermissionDecided`,
      `jl.journal.${NIL_UUID}.${L}.tool.PermissionDecided`,
      `jl.journal.${S}.${NIL_UUID}.tool.PermissionDecided`,
      `jl.journal._.${L}.tool.PermissionDecided`,
      `jl.journal.${S}.${L}.Tool.PermissionDecided`,
      `jl.journal.${S}.${L}.tool.permissionDecided`,
      `jl.journal.${S}..tool.PermissionDecided`,
      "",
      "jl",
      "jl.",
    ];
    for (const subject of bad) expect(() => parseEventSubject("jl", subject), subject).toThrow(SubjectError);
  });
});

describe("filterSubject", () => {
  it("leaves unselected parts as wildcards, and ends in > when family and type are open", () => {
    expect(filterSubject("jl", "journal", {})).toBe("jl.journal.*.*.>");
    expect(filterSubject("jl", "live", {})).toBe("jl.live.*.*.>");
    expect(filterSubject("jl", "journal", { sessionId: S })).toBe(`jl.journal.${S}.*.>`);
    expect(filterSubject("jl", "journal", { sessionId: S, loopId: L })).toBe(`jl.journal.${S}.${L}.>`);
    expect(filterSubject("jl", "journal", { loopId: L })).toBe(`jl.journal.*.${L}.>`);
    expect(filterSubject("jl", "journal", { sessionId: S, loopId: NO_LOOP })).toBe(`jl.journal.${S}._.>`);
    expect(filterSubject("jl", "journal", { family: "tool" })).toBe("jl.journal.*.*.tool.*");
    expect(filterSubject("jl", "journal", { family: "tool", type: "PermissionDecided" })).toBe("jl.journal.*.*.tool.PermissionDecided");
    expect(filterSubject("acme.prod", "live", { sessionId: S, loopId: L, family: "tool", type: "ToolCallStarted" })).toBe(
      `acme.prod.live.${S}.${L}.tool.ToolCallStarted`,
    );
  });

  it("selects exactly the subjects of what it names (NATS wildcard semantics)", () => {
    const matches = filterSelects;
    const loopEvent = eventSubject("jl", "journal", { sessionId: S, loopId: L, family: "tool", type: "PermissionDecided" });
    const sessionEvent = eventSubject("jl", "journal", { sessionId: S, family: "session", type: "SessionStarted" });
    const preview = eventSubject("jl", "live", { sessionId: S, loopId: L, family: "tool", type: "ToolCallStarted" });
    expect(matches(filterSubject("jl", "journal", { sessionId: S, loopId: L }), loopEvent)).toBe(true);
    expect(matches(filterSubject("jl", "journal", { sessionId: S, loopId: L }), sessionEvent)).toBe(false);
    expect(matches(filterSubject("jl", "journal", { sessionId: S, loopId: NO_LOOP }), sessionEvent)).toBe(true);
    expect(matches(filterSubject("jl", "journal", { sessionId: S }), preview)).toBe(false);
    expect(matches(filterSubject("jl", "live", { sessionId: S }), preview)).toBe(true);
    // The journal stream's subjects never capture the live root, and vice versa.
    for (const s of streamSubjects("jl")) {
      expect(matches(s, loopEvent)).toBe(true);
      expect(matches(s, sessionEvent)).toBe(true);
      expect(matches(s, preview)).toBe(false);
    }
    expect(matches(sessionJournalSubject("jl", S), loopEvent)).toBe(true);
    expect(matches(sessionJournalSubject("jl", S), sessionEvent)).toBe(true);
    expect(matches(sessionJournalSubject("jl", L), loopEvent)).toBe(false);
  });

  it("refuses bad tokens and a type without its family", () => {
    for (const bad of BAD_IDS.filter((b) => b !== undefined && b !== NO_LOOP)) {
      subjectError(() => filterSubject("jl", "journal", { sessionId: bad as string }));
      subjectError(() => filterSubject("jl", "journal", { loopId: bad as string }));
    }
    subjectError(() => filterSubject("jl", "journal", { sessionId: NO_LOOP }));
    subjectError(() => filterSubject("jl", "journal", { family: "*" }));
    subjectError(() => filterSubject("jl", "journal", { family: ">" }));
    subjectError(() => filterSubject("jl", "journal", { family: "tool", type: "*" }));
    subjectError(() => filterSubject("jl", "journal", { family: "tool", type: "Permission.Decided" }));
    const e = subjectError(() => filterSubject("jl", "journal", { type: "PermissionDecided" }));
    expect(e.message).toMatch(/family/);
  });
});

describe("commandSubject", () => {
  it("builds {ns}.cmd.{sessionId}.{loopId}.{command}", () => {
    expect(commandSubject("jl", S, L, "answer")).toBe(`jl.cmd.${S}.${L}.answer`);
    expect(commandSubject("acme.prod", S, L, "answer_gate2")).toBe(`acme.prod.cmd.${S}.${L}.answer_gate2`);
  });

  it("needs a real loop and a lowercase command token", () => {
    for (const bad of BAD_IDS) {
      subjectError(() => commandSubject("jl", bad as string, L, "answer"));
      subjectError(() => commandSubject("jl", S, bad as string, "answer"));
    }
    for (const command of ["", "Answer", "an.swer", "answer*", ">", "an swer", "1answer", "answer-x", "a".repeat(33)]) {
      subjectError(() => commandSubject("jl", S, L, command));
    }
  });
});

describe("the feed", () => {
  it("is the journal republished under {ns}.feed: the same tokens, another channel", () => {
    expect(feedRepublish("acme.prod")).toEqual({ src: "acme.prod.journal.>", dest: "acme.prod.feed.>" });
    const journal = eventSubject("acme", "journal", { sessionId: S, loopId: L, family: "tool", type: "PermissionDecided" });
    const feed = eventSubject("acme", "feed", { sessionId: S, loopId: L, family: "tool", type: "PermissionDecided" });
    expect(feed).toBe(`acme.feed.${S}.${L}.tool.PermissionDecided`);
    expect(switchChannel("acme", journal, "journal", "feed")).toBe(feed);
    expect(switchChannel("acme", feed, "feed", "journal")).toBe(journal);
    expect(switchChannel("acme", filterSubject("acme", "journal", { sessionId: S }), "journal", "feed")).toBe(filterSubject("acme", "feed", { sessionId: S }));
    expect(parseEventSubject("acme", feed).channel).toBe("feed");
  });

  it("refuses to switch a subject of another channel or namespace", () => {
    expect(() => switchChannel("acme", `acme.live.${S}.${L}.tool.ToolCallStarted`, "journal", "feed")).toThrow(SubjectError);
    expect(() => switchChannel("acme", `other.journal.${S}.${L}.tool.PermissionDecided`, "journal", "feed")).toThrow(SubjectError);
  });

  it("names the stream's leader-election advisory", () => {
    expect(streamLeaderElectedSubject("acme_journal")).toBe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.acme_journal");
  });
});

describe("one rule per name", () => {
  it("a durable name: the option schema takes exactly the names the parked store's subjects take", () => {
    const name = fc.oneof(fc.string({ maxLength: 70 }), fc.stringMatching(/^[A-Za-z0-9_.*> -]{0,66}$/));
    fc.assert(
      fc.property(name, (n) => {
        let subjectOk = true;
        try {
          parkedFilter("ns", n);
        } catch (e) {
          expect(e).toBeInstanceOf(SubjectError);
          subjectOk = false;
        }
        expect(durableNameSchema.safeParse(n).success).toBe(subjectOk);
      }),
      { numRuns: 500 },
    );
  });

  it("header names and API codes are NATS.js's own, plus the codes it lacks", () => {
    expect(RepublishHeaders).toBe(NatsRepublishHeaders);
    for (const [k, v] of Object.entries(JetStreamApiCodes)) expect(ApiCodes[k as keyof typeof ApiCodes]).toBe(v);
    expect([ApiCodes.MessageTooLarge, ApiCodes.StreamMismatch]).toEqual([10054, 10060]);
  });
});

describe("journal shard tokens", () => {
  const shardArb = fc.integer({ min: 2, max: 64 }).chain((count) => fc.record({ index: fc.integer({ min: 0, max: count - 1 }), count: fc.constant(count) }));

  it("each shard has one token, read back as that shard; the unsplit journal keeps `journal`", () => {
    expect(journalToken()).toBe("journal");
    expect(shardOfToken("journal")).toEqual(UNSHARDED);
    fc.assert(
      fc.property(shardArb, (shard) => {
        const token = journalToken(shard);
        expect(token).toBe(`journal-${shard.index}-of-${shard.count}`);
        expect(shardOfToken(token)).toEqual(shard);
      }),
    );
  });

  it("any other spelling names no shard: leading zeros, an index past the count, a count of 1 or 0, signs, spaces", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 9999 }), fc.constantFrom("0", "+", " ", "-", ""), (index, count, pad) => {
        const spelled = `journal-${pad}${index}-of-${count}`;
        const valid = pad === "" && count >= 2 && index < count;
        expect(shardOfToken(spelled) !== undefined).toBe(valid);
      }),
    );
    for (const t of ["journal-0-of-1", "journal-1-of-1", "journal-3-of-3", "journal-00-of-3", "journal-0-of-03", "Journal-0-of-2", "journal-0-of-2 ", "journal-a-of-2", "journal0of2"]) expect(shardOfToken(t)).toBeUndefined();
  });

  it("an event subject of any shard parses back to its address and shard; live and feed subjects have none", () => {
    fc.assert(
      fc.property(shardArb, fc.uuid({ version: 7 }), (shard, sessionId) => {
        const a = { sessionId, loopId: undefined, family: "session", type: "SessionStarted" };
        const subject = buildSubject("acme.x", "journal", a, shard);
        expect(subject.startsWith(`acme.x.journal-${shard.index}-of-${shard.count}.${sessionId}.`)).toBe(true);
        expect(parseEventSubject("acme.x", subject)).toEqual({ channel: "journal", ...a, shard });
        expect(parseEventSubject("acme.x", buildSubject("acme.x", "feed", a, shard)).shard).toEqual(UNSHARDED);
      }),
    );
  });
});
