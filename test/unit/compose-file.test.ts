// docker-compose.yml publishes its unauthenticated services on loopback only, on host ports
// that leave a local nats-server's (4222, 8222) free; every node publishes a client and a
// monitoring port (scripts/compose.sh waits on the latter); its image is the newest server
// the suite runs, 2.12 or later (fencing, atomic batches); and its gateway service provisions
// the stream and serves it over all three nodes, as the README says to start it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OFFICIAL_IMAGES } from "../harness/containers.js";
import { docWith } from "../harness/user-docs.js";

const root = join(import.meta.dirname, "../..");
const file = readFileSync(join(root, "docker-compose.yml"), "utf8");
/** The entries of every `ports:` list, as written. */
const published = [...file.matchAll(/^ +ports:\n((?: +- .*\n)+)/gm)].flatMap((m) => m[1]!.trim().split("\n").map((l) => l.trim().replace(/^- /, "").replace(/"/g, "")));
const hostPorts = published.map((p) => Number(p.split(":")[1]));

describe("docker-compose.yml", () => {
  it("binds every published port to 127.0.0.1, none a local nats-server's or the gateway's default", () => {
    expect(published).toHaveLength(7);
    for (const p of published) expect(p).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    for (const taken of [4222, 6222, 8222, 8080]) expect(hostPorts).not.toContain(taken);
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
  });

  it("publishes the monitoring ports scripts/compose.sh waits on, and the client ports it prints", () => {
    const script = readFileSync(join(root, "scripts/compose.sh"), "utf8");
    const waited = /for port in ([\d ]+); do/.exec(script)![1]!.trim().split(" ");
    expect(published.filter((p) => p.endsWith(":8222")).map((p) => p.split(":")[1])).toEqual(waited);
    const clients = published.filter((p) => p.endsWith(":4222")).map((p) => `nats://127.0.0.1:${p.split(":")[1]}`);
    expect(script).toContain(`three nodes up: ${clients.join(",")}`);
  });

  it("pins the newest official image the suite runs, 2.12 or later", () => {
    const image = /image: \$\{NATS_IMAGE:-([^}]+)\}/.exec(file)?.[1];
    expect(image).toBe(OFFICIAL_IMAGES.newest);
    const [major, minor] = /^nats:(\d+)\.(\d+)\./.exec(image!)!.slice(1).map(Number) as [number, number];
    expect(major > 2 || (major === 2 && minor >= 12)).toBe(true);
  });

  it("builds the gateway's image with every script `npm run build` runs", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    const build = `${pkg.scripts.build} ${pkg.scripts["build:web"]}`;
    const dockerfile = readFileSync(join(root, "deploy/gateway/Dockerfile"), "utf8");
    // The scripts the build names, and those they run in turn (build-package.ts runs the others).
    const named = [...build.matchAll(/scripts\/[\w-]+\.ts/g)].map((m) => m[0]);
    const scripts = [...new Set(named.flatMap((f) => [f, ...[...readFileSync(join(root, f), "utf8").matchAll(/"(scripts\/[\w-]+\.ts)"/g)].map((m) => m[1]!)]))];
    expect(scripts.length).toBeGreaterThan(0);
    const copied = /^COPY (scripts\/\S+(?: scripts\/\S+)*) scripts\/$/m.exec(dockerfile)?.[1]?.split(" ") ?? [];
    expect(scripts.filter((f) => !copied.includes(f))).toEqual([]);
    expect(dockerfile).toMatch(/^RUN npm run build$/m);
  });

  it("has a gateway service that provisions, then serves over all three nodes, and the docs start it", () => {
    const gateway = /^ {2}gateway:\n((?: {4}.*\n|\n)+)/m.exec(file)?.[1] ?? "";
    expect(gateway).toContain('profiles: ["gateway"]');
    expect(gateway).toContain("dockerfile: deploy/gateway/Dockerfile");
    expect(gateway).toContain("NATS_URL: nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222");
    expect(gateway).toMatch(/node dist\/cli\/main\.js provision && exec node dist\/cli\/main\.js gateway --listen 0\.0\.0\.0:8080/);
    for (const n of [1, 2, 3]) expect(gateway).toContain(`nats-${n}: { condition: service_healthy }`);
    const readme = docWith("## Containers").text;
    expect(readme).toContain("docker compose --profile gateway up -d --build");
    expect(readme).toContain(`demo --server ${published.filter((p) => p.endsWith(":4222")).map((p) => `nats://127.0.0.1:${p.split(":")[1]}`).join(",")}`);
  });
});
