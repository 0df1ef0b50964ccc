// What a user sees for each bad input: connect() fails with a typed error naming the
// servers; the CLI exits 2 for bad usage (with the command's usage) and 1 for a failure at
// run time, naming the flag or the URL and carrying the error code.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionFailedError, NotProvisionedError, OptionsError, connect, newId } from "../../src/index.js";
import { jetloopIn, jetloopUntil } from "../harness/cli.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";

const REFUSED = "nats://127.0.0.1:1";
const NIL = "00000000-0000-0000-0000-000000000000";
let noJetStream: NatsServer;

beforeAll(async () => {
  noJetStream = await startServer({ configFile: fileURLToPath(new URL("fixtures/no-jetstream.conf", import.meta.url)) });
});
afterAll(async () => {
  await noJetStream?.close();
});

describe("connect()", () => {
  it("names the URL when nothing listens", async () => {
    const e = await connect({ servers: REFUSED }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ConnectionFailedError);
    expect(e).toMatchObject({ code: "CONNECTION_FAILED", reason: "unreachable", servers: [REFUSED] });
    expect((e as Error).message).toContain(REFUSED);
  });

  it("refuses a URL it cannot parse as an option", async () => {
    const e = await connect({ servers: "nats://exa mple:4222" }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(OptionsError);
    expect(e).toMatchObject({ code: "OPTIONS_INVALID", option: "servers" });
  });

  it("refuses a server without JetStream, saying how to enable it", async () => {
    const e = await connect({ servers: noJetStream.url }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ConnectionFailedError);
    expect(e).toMatchObject({ code: "CONNECTION_FAILED", reason: "jetstream_disabled" });
    expect((e as Error).message).toContain("-js");
  });
});

describe("a namespace that is not provisioned", () => {
  it.each(["new", "all"] as const)("subscribeEvents (start %s) rejects with NOT_PROVISIONED and its hint", async (start) => {
    const bus = await connect({ servers: natsUrl(), namespace: uniqueNamespace() });
    try {
      const e = await bus.subscribeEvents({ enduring: "all" }, { start }).then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(NotProvisionedError);
      expect((e as Error).message).toBe(`stream ${bus.stream} does not exist; run \`jetloop provision\``);
    } finally {
      await bus.close();
    }
  });
});

describe("jetloop CLI, bad input", () => {
  const session = newId();
  const server = () => ["--server", natsUrl()];

  // [what, args, exit code, texts the message must contain]
  const cases: [string, () => string[], number, string[]][] = [
    ["an unknown flag", () => ["replay", "--sesion", session], 2, ["OPTIONS_INVALID", "--sesion", "jetloop replay --session ID"]],
    ["a missing --session", () => ["replay", ...server()], 2, ["OPTIONS_INVALID: --session is required", "jetloop replay --session ID"]],
    ["a malformed --session", () => ["replay", "--session", "abc", ...server()], 2, ['--session "abc" is not a canonical lowercase UUID']],
    ["the nil UUID", () => ["replay", "--session", NIL, ...server()], 2, [`--session "${NIL}" is the nil UUID`]],
    ["a malformed --loop", () => ["tail", "--loop", "L1", ...server()], 2, ['--loop "L1" is not a canonical lowercase UUID', "jetloop tail ["]],
    ["--replicas 0", () => ["provision", "--replicas", "0", "--server", REFUSED], 2, ["--replicas must be a positive integer", "jetloop provision ["]],
    ["a bad --max-age", () => ["provision", "--max-age", "soon", "--server", REFUSED], 2, ["--max-age"]],
    ["replay --type of a preview", () => ["replay", "--session", session, "--type", "StepDone,ToolCallStarted", "--server", REFUSED], 2, ["OPTIONS_INVALID: --type ToolCallStarted is a live preview: previews are never stored in the journal"]],
    ["--from-seq past --to-seq", () => ["replay", "--session", session, "--from-seq", "10", "--to-seq", "5", "--server", REFUSED], 2, ["--from-seq 10 is past --to-seq 5"]],
    ["a URL that is no URL", () => ["consumers", "--server", "nats://exa mple:4222"], 2, ['OPTIONS_INVALID: --server "nats://exa mple:4222"', "jetloop consumers"]],
    ["nothing listening", () => ["tail", "--server", REFUSED], 1, [`CONNECTION_FAILED: cannot connect to ${REFUSED}`]],
    ["a server without JetStream (provision)", () => ["provision", "--server", noJetStream.url], 1, ["CONNECTION_FAILED", "-js"]],
    ["a server without JetStream (replay)", () => ["replay", "--session", session, "--server", noJetStream.url], 1, ["CONNECTION_FAILED", "-js"]],
  ];

  it.each(cases)("%s", async (_what, args, code, texts) => {
    const r = await jetloopIn(args());
    expect(r.code).toBe(code);
    for (const t of texts) expect(r.stderr).toContain(t);
    expect(r.stderr.includes("jetloop — the event journal")).toBe(false); // the command's usage, not the top-level one
  });

  it("provision --verify of a missing stream says it is missing", async () => {
    const r = await jetloopIn(["provision", "--verify", "--stream", "other", "--namespace", uniqueNamespace(), ...server()]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("stream other: missing (--verify changes nothing; provision without --verify creates it)");
    expect(r.stdout).not.toContain("undefined");
  });


  it("tail --from-seq past the end says so", async () => {
    const ns = uniqueNamespace();
    expect((await jetloopIn(["provision", "--namespace", ns, ...server()])).code).toBe(0);
    const r = await jetloopUntil(["tail", "--from-seq", "50", "--namespace", ns, ...server()], "following");
    expect(r.stderr).toContain("--from-seq 50 is past the journal's end (last sequence 0)");
    expect(r.code).toBe(0);
  });
});
