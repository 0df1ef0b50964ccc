// Logs for people and machines: `gateway` and `dev` log pretty lines when stderr is a
// terminal, JSON otherwise, `--log-format` to choose; and a Ctrl-C of `dev` in a real
// terminal (a pseudo-terminal from util-linux's `script`) stops the loop, its gates, the
// gateway and only then the throwaway server, saying nothing but that it stopped.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { jetloopIn, jetloopUntil } from "../harness/cli.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";
import { findServerBinary } from "../harness/server.js";

/** A pino JSON line, or undefined for anything else. */
function jsonLine(line: string): { level?: number; msg?: string } | undefined {
  try {
    const v = JSON.parse(line) as { level?: number; msg?: string } | null;
    return typeof v === "object" && v !== null ? v : undefined;
  } catch {
    return undefined;
  }
}

const lines = (s: string) => s.split("\n").filter((l) => l.trim() !== "");

describe("--log-format", () => {
  const gateway = (format: string[]) => jetloopUntil(["gateway", "--listen", "127.0.0.1:0", "--server", natsUrl(), "--namespace", uniqueNamespace(), ...format], "gateway listening");

  it("json, and the default when stderr is not a terminal: every stderr line of the gateway is a pino object", async () => {
    for (const format of [["--log-format", "json"], []]) {
      const r = await gateway(format);
      const logs = lines(r.stderr).filter((l) => !l.startsWith("warning:") && !l.startsWith("jetloop gateway:"));
      expect({ format, listening: logs.map((l) => jsonLine(l)?.msg ?? `not JSON: ${l}`).includes("gateway listening") }).toEqual({ format, listening: true });
      expect(logs.every((l) => jsonLine(l) !== undefined)).toBe(true);
    }
  }, 60_000);

  it("pretty: lines for a person, no JSON", async () => {
    const r = await gateway(["--log-format", "pretty"]);
    const listening = lines(r.stderr).find((l) => l.includes("gateway listening"));
    expect(listening).toMatch(/^\[\d\d:\d\d:\d\d\] INFO \(jetloop-gateway\): gateway listening \{"url":"http:\/\/127\.0\.0\.1:\d+","namespace":"[^"]+","nats_server":"[^"]+"\}$/);
    expect(lines(r.stderr).filter((l) => jsonLine(l) !== undefined)).toEqual([]);
  }, 60_000);

  it("anything else is refused before connecting, with the usage", async () => {
    for (const command of ["gateway", "dev"]) {
      for (const value of ["text", "JSON", "", "pretty,json"]) {
        const r = await jetloopIn([command, "--log-format", value, "--server", "nats://127.0.0.1:1"]);
        expect({ command, value, code: r.code, first: r.stderr.split("\n")[0] }).toEqual({ command, value, code: 2, first: `jetloop ${command}: OPTIONS_INVALID: --log-format ${JSON.stringify(value)} is not pretty or json` });
      }
    }
  });
});

describe("jetloop dev in a terminal", () => {
  it("logs pretty lines, and Ctrl-C with gates open stops everything in order: no warning, no JSON, no stack", async () => {
    // script runs the command on a pseudo-terminal; a ^C written to it is the terminal's
    // Ctrl-C (SIGINT to the foreground process group), as a person's would be. The command
    // is exec'd: dash (script's shell when SHELL is unset or /bin/sh) would otherwise stay
    // in the group, take the ^C itself and exit 130 whatever dev did.
    const command = `exec ${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts dev --listen 127.0.0.1:0 --every 1 --max-open 1`;
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...process.env, NATS_URL: "", NATS_SERVER_BIN: findServerBinary() },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
      await new Promise<void>((done, fail) => {
        child.stdout.on("data", (b: Buffer) => {
          output += b.toString();
          // Gates are open once a session waits for approval: the case the order matters for.
          // And with one open at most, dev says it starts no other until it is answered.
          if (output.includes("waiting for approval") && output.includes("1 session waits for an answer: the next starts once one is answered")) done();
        });
        void exited.then((code) => fail(new Error(`dev exited ${code} before a gate opened: ${output}`)));
      });
      // The Ctrl-C; the input is closed (script ends when its command has and its input is
      // closed) only once dev says it stopped, so the stop in order is all the test sees.
      child.stdin.write("\x03");
      await new Promise<void>((done) => {
        const said = () => output.includes("stopped: simulated loop");
        if (said()) done();
        else child.stdout.on("data", () => said() && done());
        void exited.then(() => done());
      });
      child.stdin.end();
      expect(await exited, output).toBe(0);
    } finally {
      // On a failure: the terminal closed is a SIGHUP to dev, which stops it all in order.
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    const shown = lines(output.replace(/\r/g, ""));
    expect(shown.at(-1)).toMatch(/stopped: simulated loop, gateway, nats-server$/);
    expect(output).toContain("sessions asking for approval start there every 1 s (while fewer than 1 wait for an answer)");
    expect(shown.find((l) => l.includes("connected to NATS"))).toMatch(/INFO.*\(jetloop-dev\).*connected to NATS/);
    expect(shown.filter((l) => jsonLine(l) !== undefined || /WARN|ERROR|could not|^\s+at /.test(l))).toEqual([]);
  }, 90_000);
});
