// The nats CLI's conventions on every command that connects: `--context NAME`,
// `NATS_CONTEXT` and the selected context (context.txt) read from the context files the
// nats CLI writes, on a real nats-server that requires user/password or an nkey; and what
// jetloop cannot honour in a context refused before dialing.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createUser } from "@nats-io/nkeys";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { jetloopIn } from "../harness/cli.js";
import { uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";

const nkey = createUser();
const seed = new TextDecoder().decode(nkey.getSeed());
let server: NatsServer;
let config: string;
const dirs: string[] = [];

beforeAll(async () => {
  // JetStream for every user: the global account, with a user/password user and an nkey user.
  server = await startServer({
    configText: `authorization { users = [ { user: "ctx-user", password: "ctx-pass" }, { nkey: "${nkey.getPublicKey()}" } ] }\n`,
  });
}, 60_000);

// The worker's other files share this process: its environment goes back after each case.
afterEach(() => {
  vi.unstubAllEnvs();
});

afterAll(async () => {
  await server?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh $XDG_CONFIG_HOME with these contexts (and this selection), for this test only. */
function contexts(files: Record<string, unknown>, selected?: string): string {
  config = mkdtempSync(join(tmpdir(), "jetloop-ctx-"));
  dirs.push(config);
  mkdirSync(join(config, "nats", "context"), { recursive: true });
  for (const [name, body] of Object.entries(files)) writeFileSync(join(config, "nats", "context", `${name}.json`), typeof body === "string" ? body : JSON.stringify(body));
  if (selected !== undefined) writeFileSync(join(config, "nats", "context.txt"), `${selected}\n`);
  vi.stubEnv("XDG_CONFIG_HOME", config);
  vi.stubEnv("NATS_URL", "");
  vi.stubEnv("NATS_CONTEXT", "");
  return config;
}

/** A context as `nats context save` writes it: every field present, most empty. */
function natsCliContext(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    description: "made by the test",
    url: "",
    socks_proxy: "",
    token: "",
    user: "",
    password: "",
    creds: "",
    nkey: "",
    cert: "",
    key: "",
    ca: "",
    nsc: "",
    jetstream_domain: "",
    jetstream_api_prefix: "",
    jetstream_event_prefix: "",
    inbox_prefix: "",
    user_jwt: "",
    color_scheme: "",
    tls_first: false,
    windows_cert_store: "",
    windows_cert_match_by: "",
    windows_cert_match: "",
    windows_ca_certs_match: null,
    ...fields,
  };
}

const provision = (...args: string[]) => jetloopIn(["provision", "--namespace", uniqueNamespace(), ...args]);

describe("nats CLI contexts", () => {
  it("--context NAME connects with the context's url and user/password; without it, the server refuses", async () => {
    contexts({ local: natsCliContext({ url: server.url, user: "ctx-user", password: "ctx-pass" }) });
    const ok = await provision("--context", "local");
    expect([ok.code, ok.stderr]).toEqual([0, ""]);
    const anonymous = await provision("--server", server.url);
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toMatch(/Authorization|AUTH/i);
  }, 60_000);

  it("NATS_CONTEXT, then the selected context: the nkey file of the context signs the connection", async () => {
    const seedFile = join(mkdtempSync(join(tmpdir(), "jetloop-nk-")), "user.nk");
    dirs.push(seedFile.slice(0, -"/user.nk".length));
    writeFileSync(seedFile, `${seed}\n`);
    contexts({ signed: natsCliContext({ url: server.url, nkey: seedFile }), other: natsCliContext({ url: "nats://127.0.0.1:1" }) }, "signed");
    expect((await provision()).code).toBe(0); // the selected one
    vi.stubEnv("NATS_CONTEXT", "other");
    const other = await provision(); // NATS_CONTEXT wins over the selection
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("CONNECTION_FAILED");
    expect((await provision("--context", "signed")).code).toBe(0); // the flag over both
    // A flag wins over the context's field; so does NATS_URL for the servers.
    expect((await provision("--context", "signed", "--server", "nats://127.0.0.1:1")).stderr).toContain("CONNECTION_FAILED");
    vi.stubEnv("NATS_URL", "nats://127.0.0.1:1");
    expect((await provision("--context", "signed")).stderr).toContain("CONNECTION_FAILED");
  }, 60_000);

  it("--nkey takes a seed file as the nats CLI does, and the seed itself as before", async () => {
    contexts({});
    const seedFile = join(config, "user.nk");
    writeFileSync(seedFile, `${seed}\n`);
    expect((await provision("--server", server.url, "--nkey", seedFile)).code).toBe(0);
    expect((await provision("--server", server.url, "--nkey", seed)).code).toBe(0);
    const missing = await provision("--server", server.url, "--nkey", join(config, "none.nk"));
    expect([missing.code, missing.stderr.split("\n")[0]]).toEqual([2, expect.stringContaining("is neither a user seed (SU…) nor a readable file (ENOENT)")]);
  }, 60_000);

  it("refuses, before dialing, a context it cannot read exactly: a bad name, a missing file, not JSON, a field it cannot honour", async () => {
    const base = natsCliContext({ url: server.url, user: "ctx-user", password: "ctx-pass" });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{}, "gone", /--context gone: cannot read .*gone\.json \(ENOENT\); `nats context ls` lists the contexts/],
      [{ bad: "{not json" }, "bad", /--context bad: .*bad\.json is not JSON/],
      [{ arr: "[]" }, "arr", /is not a JSON object/],
      [{ dom: { ...base, jetstream_domain: "hub" } }, "dom", /"jetstream_domain" is set, and jetloop does not support it/],
      [{ pfx: { ...base, jetstream_api_prefix: "x.api" } }, "pfx", /"jetstream_api_prefix" is set/],
      [{ inbox: { ...base, inbox_prefix: "_I" } }, "inbox", /"inbox_prefix" is set/],
      [{ proxy: { ...base, socks_proxy: "127.0.0.1:1080" } }, "proxy", /"socks_proxy" is set/],
      [{ newer: { ...base, some_future_field: "on" } }, "newer", /"some_future_field" is set/],
      [{ op: { ...base, creds: "op://vault/item/field" } }, "op", /"creds" is a credential URI jetloop does not read \(op:\)/],
      [{ half: { ...base, password: "" } }, "half", /"user" and "password" go together/],
      [{ num: { ...base, url: 4222 } }, "num", /"url" must be a string/],
      [{ tls: { ...base, tls_first: "yes" } }, "tls", /"tls_first" must be true or false/],
      [{ scheme: { ...base, url: "http://127.0.0.1:4222" } }, "scheme", /context scheme url "http:\/\/127\.0\.0\.1:4222" has scheme http:\/\//],
    ];
    for (const [files, name, message] of cases) {
      contexts(files);
      const r = await provision("--context", name);
      expect({ name, code: r.code, matches: message.test(r.stderr.split("\n")[0] ?? "") }, r.stderr).toEqual({ name, code: 2, matches: true });
    }
  }, 60_000);

  it("a context name is never a path: any name outside [A-Za-z0-9_.-] or starting with . is refused", async () => {
    contexts({});
    // A file beside the context folder that a path-like name could reach.
    writeFileSync(join(config, "nats", "secret.json"), JSON.stringify({ url: server.url }));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ minLength: 1 }).filter((n) => !/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(n)), fc.constantFrom("../secret", "..", ".hidden", "a/b", "a\\b", "")),
        async (name) => {
          const r = await jetloopIn(["provision", "--context", name]);
          expect(r.code).toBe(2);
          expect(r.stderr.split("\n")[0]).toContain("is not a context name");
        },
      ),
      { seed: 4201, numRuns: 60 },
    );
  }, 60_000);
});
