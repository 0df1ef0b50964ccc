// docker-compose.yml publishes its unauthenticated nodes on loopback only, and every node
// publishes a client and a monitoring port (scripts/compose.sh waits on the latter).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const file = readFileSync(join(import.meta.dirname, "../../docker-compose.yml"), "utf8");
/** The entries of every `ports:` list, as written. */
const published = [...file.matchAll(/^ +ports:\n((?: +- .*\n)+)/gm)].flatMap((m) => m[1]!.trim().split("\n").map((l) => l.trim().replace(/^- /, "").replace(/"/g, "")));

describe("docker-compose.yml", () => {
  it("binds every published port to 127.0.0.1", () => {
    expect(published).toHaveLength(6);
    for (const p of published) expect(p).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });

  it("publishes the monitoring ports scripts/compose.sh waits on", () => {
    const script = readFileSync(join(import.meta.dirname, "../../scripts/compose.sh"), "utf8");
    const waited = /for port in ([\d ]+); do/.exec(script)![1]!.trim().split(" ");
    expect(published.filter((p) => p.endsWith(":8222")).map((p) => p.split(":")[1])).toEqual(waited);
  });
});
