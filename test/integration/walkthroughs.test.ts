// Every multi-process walkthrough of README.md run exactly as written: each block marked
// `<!-- walkthrough: NAME -->` is split at its `# terminal N` comments; every terminal but
// the last is started and waited for ("Server is ready", "listening on", "open http…"), the last
// runs (to its end when others run beside it, else it is the long-running one), the test's
// check for that walkthrough runs, then Ctrl-C (SIGINT to each terminal's process group)
// must stop every process. The commands use the README's fixed ports (4222, 8080), so
// all of it runs in a private network namespace (`unshare --net`, root): nothing else on
// the machine is reached or in the way.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { userDocs } from "../harness/user-docs.js";

const repo = resolve(import.meta.dirname, "../..");

interface Walkthrough {
  readonly name: string;
  readonly terminals: readonly string[];
}

/** The marked blocks of README.md: each terminal's commands joined with `&&`, as typed one after the other. */
function walkthroughs(markdown: string): Walkthrough[] {
  return [...markdown.matchAll(/^<!-- walkthrough: (\S+)[^\n]*-->\n```sh\n([\s\S]*?)^```$/gm)].map((m) => {
    const terminals: string[][] = [];
    for (const line of m[2]!.split("\n")) {
      if (/^# terminal \d+/.test(line)) terminals.push([]);
      else if (line.trim() !== "" && !line.startsWith("#")) terminals.at(-1)!.push(line);
    }
    return { name: m[1]!, terminals: terminals.map((t) => t.join(" && ")) };
  });
}

/** What each walkthrough must show once its terminals run (bash, in the same namespace). */
const CHECKS: Record<string, string> = {
  // The demo's session is what the gateway lists, and the page is served.
  "gateway-demo": `
    session=$(sed -n 's/^session *\\([0-9a-f-]*\\)$/\\1/p' "$work/t2.log")
    [ -n "$session" ] || { echo "no session in the demo's output"; exit 1; }
    curl -sf http://127.0.0.1:8080/v1/sessions | grep -q "\\"$session\\"" || { echo "the gateway does not list $session"; exit 1; }
    curl -sf http://127.0.0.1:8080/ | grep -qi "<html" || { echo "no page"; exit 1; }`,
  // The printed URL serves the page, and the simulated loop has a session waiting on a gate.
  dev: `
    url=$(grep -o 'open http://[0-9.:]*' "$work/t0.log" | head -1 | cut -c6-)
    [ "$url" = "http://127.0.0.1:8080" ] || { echo "printed URL: '$url'"; exit 1; }
    curl -sf "$url/" | grep -qi "<html" || { echo "no page"; exit 1; }
    for i in $(seq 120); do curl -sf "$url/v1/sessions" | grep -q '"waiting_on_gate"' && exit 0; sleep 0.5; done
    echo "no session waiting on a gate"; exit 1`,
};

/** The bash script that plays a walkthrough in the namespace; results land in $work. */
function script(w: Walkthrough): string {
  const last = w.terminals.length - 1;
  const background = w.terminals.length === 1 ? w.terminals : w.terminals.slice(0, last);
  return `set -u
work="$1"
ip link set lo up
cd ${JSON.stringify(repo)}
pids=()
stop_all() {
  for p in "\${pids[@]}"; do kill -INT -- "-$p" 2>/dev/null; done
  for p in "\${pids[@]}"; do
    for i in $(seq 150); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 -- "-$p" 2>/dev/null; then echo "terminal group $p still running after Ctrl-C" >> "$work/left"; kill -KILL -- "-$p"; fi
  done
}
trap stop_all EXIT
${background
  .map(
    (cmd, i) => `setsid bash -c ${shellQuote(cmd)} > "$work/t${i}.log" 2>&1 < /dev/null &
pids+=($!)
for i in $(seq 1200); do grep -qE 'Server is ready|listening on|^open http' "$work/t${i}.log" && break; kill -0 $! 2>/dev/null || { echo "terminal ${i + 1} exited" > "$work/failed"; exit 1; }; sleep 0.1; done
grep -qE 'Server is ready|listening on|^open http' "$work/t${i}.log" || { echo "terminal ${i + 1} never became ready" > "$work/failed"; exit 1; }`,
  )
  .join("\n")}
${w.terminals.length > 1 ? `bash -c ${shellQuote(w.terminals[last]!)} > "$work/t${last}.log" 2>&1 < /dev/null; echo $? > "$work/t${last}.rc"` : ""}
( ${CHECKS[w.name] ?? 'echo "no check for this walkthrough"; exit 1'}
) > "$work/check.log" 2>&1; echo $? > "$work/check.rc"
`;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

const isolated = spawnSync("unshare", ["--net", "true"]).status === 0;
const found = userDocs().flatMap((d) => walkthroughs(d.text));
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

// Only where a private network namespace cannot be made (not root): CI runs as root.
describe.skipIf(!isolated && process.env.CI !== "true")(`README walkthroughs as written${isolated ? "" : " (SKIPPED: unshare --net needs root)"}`, () => {
  it("the docs have the walkthroughs this file checks", () => {
    expect(found.map((w) => w.name).sort()).toEqual(Object.keys(CHECKS).sort());
  });

  it.each(found.map((w) => [w.name, w] as const))("%s", (_, w) => {
    const work = mkdtempSync(join(tmpdir(), "jetloop-walkthrough-"));
    dirs.push(work);
    writeFileSync(join(work, "run.sh"), script(w));
    // A private TMPDIR: the servers' stores and tsx's cache go there, and go with it.
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: work, CI: "" };
    for (const k of ["NATS_URL", "JETLOOP_NAMESPACE", "NATS_SERVER_BIN", "JETLOOP_NATS_SERVER", "JETLOOP_NATS_BACKEND"]) delete env[k];
    const run = spawnSync("unshare", ["--net", "bash", join(work, "run.sh"), work], { env, encoding: "utf8", timeout: 240_000 });
    const read = (f: string) => {
      try {
        return readFileSync(join(work, f), "utf8");
      } catch {
        return "";
      }
    };
    const logs = w.terminals.map((_t, i) => `--- terminal ${i + 1}\n${read(`t${i}.log`).slice(-2000)}`).join("\n");
    expect(read("failed"), logs).toBe("");
    if (w.terminals.length > 1) expect(read(`t${w.terminals.length - 1}.rc`).trim(), logs).toBe("0");
    expect(read("check.rc").trim(), `${read("check.log")}\n${logs}\n${run.stderr}`).toBe("0");
    expect(read("left"), logs).toBe("");
  }, 300_000);
});
