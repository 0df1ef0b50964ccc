// The declarative stream configuration in streams/: how it renders for a namespace, the
// Go durations it uses, and how a live configuration is compared with it.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  declaredStreamConfig,
  defaultStreamName,
  DEFAULT_MAX_EVENT_BYTES,
  diffStreamConfig,
  OptionsError,
  SubjectError,
} from "../../src/index.js";
import { declaredConsumerTemplates, parseDuration } from "../../src/streams/declared.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { feedRepublish, streamSubjects } from "../../src/subjects/subjects.js";

const SECOND = 1e9;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

describe("parseDuration", () => {
  it.each([
    ["0", 0],
    ["0s", 0],
    ["7ns", 7],
    ["10us", 10e3],
    ["10µs", 10e3],
    ["250ms", 250e6],
    ["1s", SECOND],
    ["1.5s", 1.5 * SECOND],
    ["30s", 30 * SECOND],
    ["2m", 2 * MINUTE],
    ["5m", 5 * MINUTE],
    ["1h", HOUR],
    ["720h", 720 * HOUR],
    ["2160h", 2160 * HOUR],
    ["1h30m", 90 * MINUTE],
    ["1h0m30s", HOUR + 30 * SECOND],
    ["2m500ms", 2 * MINUTE + 500e6],
  ])("%s is %d ns", (text, ns) => {
    expect(parseDuration(text)).toBe(ns);
  });

  it.each(["", " ", "5", "s", "m5", "5x", "5 s", " 5s", "5s ", "1h 30m", "-5s", "+5s", "1d", "1w", "5S", "5sec", "1.s", ".5s", "5s5", "1e3s", "0x10s", "NaN"])(
    "refuses %j with OptionsError",
    (text) => {
      let thrown: unknown;
      try {
        parseDuration(text);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(OptionsError);
      expect(thrown).toMatchObject({ code: "OPTIONS_INVALID", option: "duration" });
    },
  );
});

describe("defaultStreamName", () => {
  it("is the namespace with dots as underscores, plus _journal", () => {
    expect(defaultStreamName("jetloop")).toBe("jetloop_journal");
    expect(defaultStreamName("acme.prod")).toBe("acme_prod_journal");
    expect(defaultStreamName("A-b")).toBe("A-b_journal");
  });

  it("refuses an invalid namespace", () => {
    for (const ns of ["", "a.*", "a b", "a..b"]) expect(() => defaultStreamName(ns)).toThrow(SubjectError);
  });
});

describe("declaredStreamConfig", () => {
  const vars = { namespace: "acme.prod", stream: "acme_prod_journal", maxEventBytes: DEFAULT_MAX_EVENT_BYTES, replicas: 3 };

  it("renders streams/events.json for a namespace in JetStream API form", () => {
    expect(declaredStreamConfig(vars)).toEqual({
      name: "acme_prod_journal",
      description: "jetloop journal of namespace acme.prod",
      subjects: ["acme.prod.journal.>"],
      republish: { src: "acme.prod.journal.>", dest: "acme.prod.feed.>" },
      storage: "file",
      retention: "limits",
      discard: "old",
      num_replicas: 3,
      duplicate_window: 2 * MINUTE,
      max_msg_size: DEFAULT_MAX_EVENT_BYTES + journalHeaderRoom("acme_prod_journal", "acme.prod"),
      max_age: 0,
      max_bytes: -1,
      max_msgs: -1,
      max_msgs_per_subject: -1,
      allow_direct: true,
      deny_delete: true,
      deny_purge: false,
    });
  });

  it("keeps whole-variable values typed (numbers stay numbers), drops $-keys, and captures the journal root only", () => {
    const c = declaredStreamConfig({ namespace: "jl", stream: "custom", maxEventBytes: 4096, replicas: 1 });
    expect(c.num_replicas).toBe(1);
    expect(c.max_msg_size).toBe(4096 + journalHeaderRoom("custom", "jl"));
    expect(c.name).toBe("custom");
    expect(Object.keys(c).some((k) => k.startsWith("$"))).toBe(false);
    expect(c.subjects).toEqual(streamSubjects("jl"));
    // The live feed: what the subject module says live subscriptions follow.
    expect(c.republish).toEqual(feedRepublish("jl"));
    expect(JSON.stringify(c)).not.toContain("${");
    expect(JSON.stringify(c)).not.toContain(".live");
  });

  it("matches the file on disk field for field (no field is added or lost in rendering)", () => {
    const raw = JSON.parse(readFileSync(new URL("../../streams/events.json", import.meta.url), "utf8")) as Record<string, unknown>;
    expect(Object.keys(declaredStreamConfig({ ...vars, serverVersion: "2.14.0" })).sort()).toEqual(Object.keys(raw).filter((k) => !k.startsWith("$")).sort());
  });

  it("declares allow_atomic from nats-server 2.12 and allow_batched from 2.14, and leaves both out before (a 2.10 server takes the stream)", () => {
    const batching = (serverVersion?: string) => {
      const c = declaredStreamConfig({ ...vars, serverVersion });
      return [c.allow_atomic, c.allow_batched, "allow_atomic" in c, "allow_batched" in c];
    };
    expect(batching(undefined)).toEqual([undefined, undefined, false, false]);
    expect(batching("2.10.27")).toEqual([undefined, undefined, false, false]);
    expect(batching("2.11.9")).toEqual([undefined, undefined, false, false]);
    expect(batching("2.12.0")).toEqual([true, undefined, true, false]);
    expect(batching("2.13.5")).toEqual([true, undefined, true, false]);
    expect(batching("2.14.0")).toEqual([true, true, true, true]);
    expect(batching("2.15.1")).toEqual([true, true, true, true]);
  });

  it("keeps the journal by default; retention is an explicit choice, rendered into max_age and max_bytes", () => {
    const c = declaredStreamConfig(vars);
    expect([c.max_age, c.max_bytes]).toEqual([0, -1]);
    expect(c.duplicate_window as number).toBeGreaterThan(0);
    const limited = declaredStreamConfig({ ...vars, maxAge: 720 * HOUR, maxBytes: 1 << 30 });
    expect([limited.max_age, limited.max_bytes]).toEqual([720 * HOUR, 1 << 30]);
    // A retried publish is deduplicated within any sensible retention.
    expect(limited.duplicate_window as number).toBeLessThan(limited.max_age as number);
    expect(declaredStreamConfig({ ...vars, maxAge: undefined, maxBytes: undefined })).toEqual(c);
  });
});

describe("declaredConsumerTemplates", () => {
  it("renders durations in ns and backoff as a list of ns", () => {
    const { durable, ordered } = declaredConsumerTemplates();
    expect(durable).toEqual({
      ack_policy: "explicit",
      ack_wait: 30 * SECOND,
      max_deliver: 5,
      backoff: [30 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE],
      max_ack_pending: 1000,
      replay_policy: "instant",
      inactive_threshold: 0,
    });
    expect(ordered).toEqual({ ack_policy: "none", mem_storage: true, num_replicas: 1, inactive_threshold: 5 * MINUTE });
  });

  it("keeps backoff shorter than max_deliver, as JetStream requires", () => {
    const { durable } = declaredConsumerTemplates();
    expect((durable.backoff as number[]).length).toBeLessThan(durable.max_deliver as number);
  });
});

describe("diffStreamConfig", () => {
  const desired = declaredStreamConfig({ namespace: "jl", stream: "jl_journal", maxEventBytes: DEFAULT_MAX_EVENT_BYTES, replicas: 1 });
  /** A live config as the server returns it: every declared field plus server defaults. */
  const live = (): Record<string, unknown> => ({
    ...desired,
    max_consumers: -1,
    compression: "none",
    sealed: false,
    mirror_direct: false,
    allow_rollup_hdrs: false,
    consumer_limits: {},
    metadata: { "_nats.ver": "2.15.1" },
  });

  it("finds nothing when the live stream has the declared values, whatever else it has", () => {
    expect(diffStreamConfig(live(), desired)).toEqual([]);
  });

  it("treats absent, false, 0 and empty string as the same zero value", () => {
    for (const zero of [undefined, false, 0, ""]) {
      expect(diffStreamConfig({ ...live(), deny_purge: zero }, desired)).toEqual([]);
    }
    const { deny_purge: _, ...withoutDenyPurge } = live();
    expect(diffStreamConfig(withoutDenyPurge, desired)).toEqual([]);
    // A zero is not the same as a non-zero, in either direction.
    expect(diffStreamConfig({ ...live(), deny_delete: false }, desired)).toEqual([{ field: "deny_delete", live: false, desired: true, updatable: true }]);
    expect(diffStreamConfig({ ...live(), max_bytes: 0 }, desired)).toEqual([{ field: "max_bytes", live: 0, desired: -1, updatable: true }]);
  });

  it("reports each differing declared field with both values; mutable fields are updatable", () => {
    const drift = diffStreamConfig({ ...live(), max_age: HOUR, duplicate_window: 30 * SECOND, subjects: ["jl.>"], num_replicas: 3 }, desired);
    expect(drift).toEqual([
      { field: "subjects", live: ["jl.>"], desired: ["jl.journal.>"], updatable: true },
      { field: "num_replicas", live: 3, desired: 1, updatable: true },
      { field: "duplicate_window", live: 30 * SECOND, desired: 2 * MINUTE, updatable: true },
      { field: "max_age", live: HOUR, desired: 0, updatable: true },
    ]);
  });

  it("marks storage, retention and name as not updatable", () => {
    const drift = diffStreamConfig({ ...live(), name: "other", storage: "memory", retention: "workqueue" }, desired);
    expect(drift).toEqual([
      { field: "name", live: "other", desired: "jl_journal", updatable: false },
      { field: "storage", live: "memory", desired: "file", updatable: false },
      { field: "retention", live: "workqueue", desired: "limits", updatable: false },
    ]);
  });

  it("compares lists by value and order", () => {
    expect(diffStreamConfig({ ...live(), subjects: ["jl.journal.>"] }, desired)).toEqual([]);
    expect(diffStreamConfig({ ...live(), subjects: ["jl.journal.>", "jl.extra"] }, desired)).toHaveLength(1);
    expect(diffStreamConfig({ ...live(), subjects: [] }, desired)).toHaveLength(1);
  });

  it("reports every declared field missing from an empty live config except the zero-valued ones", () => {
    const drift = diffStreamConfig({}, desired);
    expect(drift.map((d) => d.field).sort()).toEqual(Object.keys(desired).filter((k) => desired[k] !== false && desired[k] !== 0).sort());
    expect(drift.every((d) => d.live === undefined)).toBe(true);
  });
});
