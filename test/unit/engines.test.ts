// package.json promises Node 20.19: every runtime dependency in the lockfile must admit it,
// or `npm install` warns EBADENGINE (as @nats-io/nuid 3, which wants Node 22 and which the
// NATS client 3.4 pins, did; the client is held at 3.3, which pins nuid 2.0.3). The README
// test checks a package user's fresh install the same way.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { admits, oldestNode, refusedEngines } from "../harness/engines.js";

describe("engines", () => {
  it("reads the ranges it checks", () => {
    expect(admits(">= 22.x", [20, 19, 0])).toBe(false);
    expect(admits(">=20.19", [20, 19, 0])).toBe(true);
    expect(admits(">=20.20", [20, 19, 0])).toBe(false);
  });

  it("every runtime dependency admits the oldest Node the package supports", () => {
    expect(refusedEngines(fileURLToPath(new URL("../../package-lock.json", import.meta.url)), oldestNode())).toEqual([]);
  });
});
