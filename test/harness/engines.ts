// Whether installed packages admit the oldest Node the package supports (package.json
// `engines`): the lockfile check of the unit tests and the README test's fresh project.
import { readFileSync } from "node:fs";

type Version = [number, number, number];
const compare = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether `v` satisfies a range made of `>=`/`>`/`^` comparators (`>= 18.x`, `>=20.19`). */
export function admits(range: string, v: Version): boolean {
  return range.split("||").some((alt) =>
    [...alt.matchAll(/(>=|>|\^)?\s*v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?/g)].every((m) => {
      const bound: Version = [Number(m[2]), Number(m[3] === "x" ? 0 : (m[3] ?? 0)), Number(m[4] === "x" ? 0 : (m[4] ?? 0))];
      if (m[1] === ">") return compare(v, bound) > 0;
      if (m[1] === "^") return v[0] === bound[0] && compare(v, bound) >= 0;
      return compare(v, bound) >= 0;
    }),
  );
}

/** The oldest Node jetloop's package.json admits, e.g. [20, 19, 0]. */
export function oldestNode(): Version {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { engines: { node: string } };
  const oldest = /(\d+)\.(\d+)/.exec(pkg.engines.node)!;
  return [Number(oldest[1]), Number(oldest[2]), 0];
}

/** The runtime (non-dev) packages of a package-lock.json whose `engines.node` refuses `v`, as `path range`. */
export function refusedEngines(lockFile: string, v: Version): string[] {
  const lock = JSON.parse(readFileSync(lockFile, "utf8")) as { packages: Record<string, { dev?: boolean; engines?: { node?: string } }> };
  return Object.entries(lock.packages)
    .filter(([, p]) => !p.dev && p.engines?.node !== undefined && !admits(p.engines.node, v))
    .map(([name, p]) => `${name} ${p.engines?.node}`);
}
