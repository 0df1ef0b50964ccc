// package.json promises Node 20.19: every runtime dependency in the lockfile must admit it,
// or `npm install` warns EBADENGINE (as @nats-io/nuid 3, which wants Node 22, did; the
// override pins 2.0.3, the version the NATS client used before, with the same API).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8")) as {
  packages: Record<string, { dev?: boolean; engines?: { node?: string } }>;
};
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { engines: { node: string } };

type Version = [number, number, number];
const compare = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether `v` satisfies a range made of `>=`/`>`/`^` comparators (`>= 18.x`, `>=20.19`). */
function admits(range: string, v: Version): boolean {
  return range.split("||").some((alt) =>
    [...alt.matchAll(/(>=|>|\^)?\s*v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?/g)].every((m) => {
      const bound: Version = [Number(m[2]), Number(m[3] === "x" ? 0 : (m[3] ?? 0)), Number(m[4] === "x" ? 0 : (m[4] ?? 0))];
      if (m[1] === ">") return compare(v, bound) > 0;
      if (m[1] === "^") return v[0] === bound[0] && compare(v, bound) >= 0;
      return compare(v, bound) >= 0;
    }),
  );
}

describe("engines", () => {
  it("reads the ranges it checks", () => {
    expect(admits(">= 22.x", [20, 19, 0])).toBe(false);
    expect(admits(">=20.19", [20, 19, 0])).toBe(true);
    expect(admits(">=20.20", [20, 19, 0])).toBe(false);
  });

  it("every runtime dependency admits the oldest Node the package supports", () => {
    const oldest = /(\d+)\.(\d+)/.exec(pkg.engines.node)!;
    const v: Version = [Number(oldest[1]), Number(oldest[2]), 0];
    const refused = Object.entries(lock.packages)
      .filter(([, p]) => !p.dev && p.engines?.node !== undefined && !admits(p.engines.node, v))
      .map(([name, p]) => `${name} ${p.engines?.node}`);
    expect(refused).toEqual([]);
  });
});
