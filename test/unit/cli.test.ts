// The command line's rules that hold before anything is sent: every command × every bad
// input exits 2 with the command's usage and a message naming the flag; servers and
// namespaces are refused, never rewritten; --json is the Go wire; times have one width.
// Run in-process (runCli): nothing here connects. NATS_URL names a closed port, so an input
// wrongly accepted fails fast (exit 1, CONNECTION_FAILED) instead of starting a server.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { unmarshalEvent } from "../../src/index.js";
import { oneTokenNamespace, serverUrls } from "../../src/cli/args.js";
import { UsageError } from "../../src/errors.js";
import { fixedTime, formatJson, jsonRecord } from "../../src/cli/format.js";
import { failureText, runCli } from "../../src/cli/run.js";
import { ConnectionFailedError, NotProvisionedError } from "../../src/errors.js";
import { readJsonl, type GoWritten } from "../conformance/go-oracle.js";

const saved = { NATS_URL: process.env.NATS_URL, JETLOOP_NAMESPACE: process.env.JETLOOP_NAMESPACE };
const NOWHERE = "nats://127.0.0.1:1";
beforeAll(() => {
  process.env.NATS_URL = NOWHERE;
  delete process.env.JETLOOP_NAMESPACE;
});
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
  else process.env[k] = v;
});

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const SID = "01a2315b-13e0-75b2-aa70-5986cd93de6b";
/** Each command with the arguments that make it runnable (bad inputs are added to these). */
const COMMANDS: Record<string, string[]> = {
  provision: [],
  tail: [],
  replay: ["--session", SID],
  "parked list": [],
  "parked show": ["--durable", "svc", "--seq", "1"],
  consumers: [],
  demo: [],
  gateway: [],
  dev: [],
  attach: ["--go-store"],
};

/** A bad input, the flag its message must name. */
const CONNECTION_BAD: [string[], string][] = [
  [["--server", "foo://bar"], "--server"],
  [["--server", "http://127.0.0.1:4222"], "--server"],
  [["--server", "nats://127.0.0.1:4222/path"], "--server"],
  [["--server", "nats://127.0.0.1:99999"], "--server"],
  [["--server", "nats://a:4222,"], "--server"],
  [["--namespace", "a.b"], "--namespace"],
  [["--namespace", "a b"], "--namespace"],
  [["--namespace", "a>"], "--namespace"],
  [["--namespace", ""], "--namespace"],
  [["--stream", "a.b"], "--stream"],
  [["--no-such-flag"], "--no-such-flag"],
  // A value flag given twice: parseArgs would keep the last.
  [["--server", "nats://127.0.0.1:4222", "--server", "nats://127.0.0.1:4223"], "--server"],
  [["--namespace", "a", "-n", "b"], "--namespace"],
  [["--stream=a", "--stream", "a"], "--stream"],
];

const COMMAND_BAD: Record<string, [string[], string][]> = {
  tail: [
    [["--from-seq", "0"], "--from-seq"],
    [["--count", "x"], "--count"],
    [["--session", "not-a-uuid"], "--session"],
    [["--loop", SID.toUpperCase()], "--loop"],
  ],
  replay: [
    [["--from-seq", "5", "--to-seq", "2"], "--from-seq"],
    [["--type", "ToolCallStarted"], "--type"],
  ],
  "parked list": [
    [["--seq", "1"], "--seq"],
    [["--all"], "--all"],
  ],
  "parked show": [
    [["--seq", "-1"], "--seq"],
    [["--all"], "--all"],
    [["--seq", "2"], "--seq"],
    [["--durable", "other"], "--durable"],
    [["--shard", "0", "--shard", "1"], "--shard"],
  ],
  gateway: [
    [["--listen", "localhost"], "--listen"],
    [["--listen", "127.0.0.1:70000"], "--listen"],
    [["--listen", "0.0.0.0:8080"], "--insecure-public-bind"],
    [["--max-body-bytes", "lots"], "--max-body-bytes"],
    [["--feed", "everything"], "--feed"],
    [["--auth-token-env", "JETLOOP_TEST_UNSET_TOKEN"], "--auth-token-env"],
  ],
  dev: [
    [["--every", "0"], "--every"],
    [["--max-open", "many"], "--max-open"],
  ],
  attach: [
    [["--status-every", "soon"], "--status-every"],
    [["--readers", "0"], "--readers"],
    [["--go-store", "--go-store=x"], "--go-store"],
    [["--go-http", "ftp://127.0.0.1/"], "--go-http"],
    [["--go-http", "http://user:pw@127.0.0.1:8080"], "--go-http"],
    [["--go-token-file", "/nonexistent/token"], "--go-token-file"],
    [["--go-token-env", "JETLOOP_TEST_UNSET_TOKEN"], "--go-token-env"],
    [["--go-http", "http://127.0.0.1:8080", "--go-token-file", "/nonexistent/token"], "--go-token-file"],
    [["--go-http", "http://127.0.0.1:8080", "--go-token-env", "JETLOOP_TEST_UNSET_TOKEN"], "--go-token-env"],
    [["--go-http", "http://127.0.0.1:8080", "--go-token-env", "JETLOOP_TEST_UNSET_TOKEN", "--go-token-file", "/x"], "--go-token-file and --go-token-env"],
  ],
};

const table = Object.entries(COMMANDS).flatMap(([command, ok]) =>
  [...CONNECTION_BAD, ...(COMMAND_BAD[command] ?? [])].map(([bad, flag]) => [`${command} ${bad.join(" ")}`, command, [...ok, ...bad], flag] as const),
);

describe("jetloop CLI usage errors", () => {
  it.each(table)("%s: exit 2, OPTIONS_INVALID naming the flag, then the usage", async (_, command, args, flag) => {
    const r = await cli([...command.split(" "), ...args]);
    expect(r.code).toBe(2);
    const [first, ...rest] = r.stderr.split("\n");
    expect(first).toMatch(new RegExp(`^jetloop ${command.split(" ")[0]}: OPTIONS_INVALID: .*${flag.replace(/[-]/g, "\\-")}`));
    expect(rest.join("\n")).toContain(`jetloop ${command.split(" ")[0]}`);
    expect(rest.join("\n")).toContain("--server");
    expect(r.stdout).toBe("");
  });

  it("attach without --go-store: exit 2 naming it (it says what to attach), before connecting", async () => {
    const r = await cli(["attach"]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(/^jetloop attach: OPTIONS_INVALID: --go-store is required/);
  });

  it("attach's usage names the HTTP surface's flags; a token file is read and its token never printed", async () => {
    const help = await cli(["attach", "--help"]);
    for (const flag of ["--go-http URL", "--go-token-file PATH", "--go-token-env VAR"]) expect(help.stdout).toContain(flag);
    const dir = mkdtempSync(join(tmpdir(), "jetloop-cli-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "token");
    writeFileSync(file, "tok-123\nsecond line\n");
    const r = await cli(["attach", "--go-store", "--go-http", "http://127.0.0.1:8080", "--go-token-file", file]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(/--go-token-file: .* must hold the token on one line/);
    expect(r.stderr).not.toContain("tok-123");
  });

  it("a bad server or namespace from the environment is named by its variable", async () => {
    process.env.NATS_URL = "foo://bar";
    try {
      expect((await cli(["consumers"])).stderr).toMatch(/^jetloop consumers: OPTIONS_INVALID: NATS_URL "foo:\/\/bar" has scheme foo:\/\//);
    } finally {
      process.env.NATS_URL = NOWHERE;
    }
    process.env.JETLOOP_NAMESPACE = "a.b";
    try {
      expect((await cli(["consumers"])).stderr).toMatch(/^jetloop consumers: OPTIONS_INVALID: JETLOOP_NAMESPACE "a\.b" is not one subject token/);
    } finally {
      delete process.env.JETLOOP_NAMESPACE;
    }
  });

  it("no command, or an unknown one, exits 2 with the usage on stderr; help exits 0 on stdout", async () => {
    for (const argv of [[], ["frobnicate"], ["toString"]]) {
      const r = await cli(argv);
      expect([r.code, r.stdout], argv.join(" ")).toEqual([2, ""]);
      expect(r.stderr).toContain("Usage: jetloop <command>");
    }
    const help = await cli(["--help"]);
    expect([help.code, help.stdout.includes("dev ")]).toEqual([0, true]);
    for (const command of Object.keys(COMMANDS)) {
      const r = await cli([...command.split(" "), "--help"]);
      expect([r.code, r.stdout.includes(`jetloop ${command.split(" ")[0]}`)], command).toEqual([0, true]);
    }
  });
});

describe("counts are decimal or refused, never read another way", () => {
  // `--shards 0x3` must not provision 3 shards: each spelling Number() would take as n but is not n's decimal.
  const spellings = (n: number) => [`0x${n.toString(16)}`, `${n}.0`, `+${n}`, ` ${n}`, `${n} `, `0${n}`, `${n}e0`, `0b${n.toString(2)}`, `0o${n.toString(8)}`, ""];
  const flags: [string, string, string[]][] = [
    ["provision", "--shards", []],
    ["provision", "--partitions", []],
    ["provision", "--replicas", []],
    ["parked show", "--seq", ["--durable", "svc"]],
  ];
  const cases = flags.flatMap(([command, flag, ok]) => [2, 3, 10].flatMap((n) => spellings(n).map((v) => [`${command} ${flag} ${JSON.stringify(v)}`, command, [...ok, flag, v], flag] as const)));
  it.each(cases)("%s: exit 2 naming the flag", async (_, command, args, flag) => {
    const r = await cli([...command.split(" "), ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(new RegExp(`OPTIONS_INVALID: .*${flag.replace(/[-]/g, "\\-")}`));
  });
  it("more shards than a namespace may have is a usage error before connecting", async () => {
    const r = await cli(["provision", "--shards", "65"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/shards/);
  });
});

describe("servers and namespaces are refused, never rewritten", () => {
  const host = fc.oneof(fc.domain(), fc.ipV4());
  const port = fc.integer({ min: 1, max: 65535 });

  it("nats:// and tls:// URLs and bare HOST[:PORT] pass unchanged", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("nats://", "tls://", ""), host, fc.option(port)), { minLength: 1, maxLength: 3 }), (servers) => {
        const urls = servers.map(([s, h, p]) => `${s}${h}${p === null ? "" : `:${p}`}`);
        expect(serverUrls("--server", urls.join(","))).toEqual(urls);
      }),
    );
  });

  it("any other scheme is refused, naming it", () => {
    const scheme = fc.stringMatching(/^[a-z][a-z0-9+.-]{0,8}$/).filter((s) => s !== "nats" && s !== "tls");
    fc.assert(
      fc.property(scheme, host, (s, h) => {
        expect(() => serverUrls("--server", `${s}://${h}`)).toThrow(new UsageError(`--server ${JSON.stringify(`${s}://${h}`)} has scheme ${s}://: use nats:// or tls://`));
      }),
    );
  });

  it("a namespace that is not one token of [A-Za-z0-9-] is refused; a dotted one only beside --stream", () => {
    const token = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/);
    fc.assert(
      fc.property(token, (ns) => {
        expect(oneTokenNamespace("--namespace", ns, false)).toBe(ns);
      }),
    );
    fc.assert(
      fc.property(fc.array(token, { minLength: 2, maxLength: 4 }), (tokens) => {
        const ns = tokens.join(".");
        expect(() => oneTokenNamespace("--namespace", ns, false)).toThrow(/needs --stream NAME/);
        expect(oneTokenNamespace("--namespace", ns, true)).toBe(ns);
      }),
    );
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 12 }).filter((s) => /[^A-Za-z0-9.-]/.test(s) || s === ""), (ns) => {
        expect(() => oneTokenNamespace("--namespace", ns, true)).toThrow(UsageError);
      }),
    );
  });
});

describe("output for people and programs", () => {
  it("times have one width (UTC, milliseconds) whatever the offset and fraction digits", () => {
    const instant = fc.date({ min: new Date("0001-01-02T00:00:00Z"), max: new Date("9999-12-30T00:00:00Z"), noInvalidDate: true });
    const offset = fc.integer({ min: -14 * 60, max: 14 * 60 });
    fc.assert(
      fc.property(instant, offset, fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 999_999_999 }), (d, off, digits, nanos) => {
        const local = new Date(d.getTime() + off * 60_000).toISOString().slice(0, 19);
        const sign = off < 0 ? "-" : "+";
        const zone = off === 0 ? "Z" : `${sign}${String(Math.floor(Math.abs(off) / 60)).padStart(2, "0")}:${String(Math.abs(off) % 60).padStart(2, "0")}`;
        const fraction = digits === 0 ? "" : `.${String(nanos).padStart(9, "0").slice(0, digits)}`;
        const shown = fixedTime(`${local}${fraction}${zone}`);
        expect(shown).toHaveLength(24);
        const ms = digits === 0 ? 0 : Number(`${String(nanos).padStart(9, "0").slice(0, digits)}`.padEnd(3, "0").slice(0, 3));
        expect(shown).toBe(new Date(Math.floor(d.getTime() / 1000) * 1000 + ms).toISOString());
      }),
    );
    expect(fixedTime(undefined)).toBe("-".padEnd(24));
  });

  it("--json writes each Go-written event as Go's own bytes, beside its journal sequence", () => {
    for (const [i, w] of readJsonl<GoWritten>("go-written-events.jsonl").entries()) {
      const line = formatJson({ event: unmarshalEvent(w.json), journalSeq: i + 1, shard: 0, subject: "s" });
      expect(line).toBe(`{"journal_seq":${i + 1},"subject":"s","event":${w.json}}`);
    }
  });

  it("records of the CLI's own use Go-style keys and fixed-width times", () => {
    expect(jsonRecord({ journalSeq: 3, errorCode: "X", parkedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 60)) })).toBe(
      '{"journal_seq":3,"error_code":"X","parked_at":"2026-01-02T03:04:05.060Z"}',
    );
  });

  it("a failure prints its code, and the hint where the message has none", () => {
    expect(failureText("tail", new NotProvisionedError("x_journal"))).toBe("jetloop tail: NOT_PROVISIONED: stream x_journal does not exist; run `jetloop provision`");
    const unreachable = failureText("gateway", new ConnectionFailedError(["nats://127.0.0.1:4222"], "unreachable", "cannot connect"));
    expect(unreachable).toMatch(/^jetloop gateway: CONNECTION_FAILED: cannot connect\nhint: .*--server URL/);
    expect(failureText("tail", new Error("boom"))).toBe("jetloop tail: INTERNAL: boom");
  });
});
