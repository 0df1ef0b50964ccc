// A durable's `behind` counts what its filter would deliver and it has not acknowledged:
// journal events outside the filter are not its backlog. The server's num_pending is
// already filtered; `behind` is it plus the delivered, unacknowledged ones (ack pending),
// for every mix of events inside and outside the filter.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Jetloop } from "../../src/index.js";
import { jetloopIn } from "../harness/cli.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";

let bus: Jetloop;
const ns = uniqueNamespace();

beforeAll(async () => {
  bus = await connect({ servers: natsUrl(), namespace: ns });
  await bus.provision();
});

afterAll(async () => {
  await bus?.close();
});

const turn = (sessionId: string) => createEvent("TurnStarted", { sessionId, loopId: newId(), turnId: newId() });

describe("consumers: behind", () => {
  it("is the events the durable's filter would deliver and it has not acknowledged, not the journal's distance", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 4 }), fc.boolean(), async (inside, outside, insideFirst) => {
        const durable = `d${++run}`;
        const mine = newId();
        // The durable exists with its filter, then nobody consumes: all it matches stays pending.
        const sub = await bus.subscribeEvents({ sessions: [mine], enduring: "all" }, { durable });
        await sub.close();
        const ins = Array.from({ length: inside }, () => turn(mine));
        const outs = Array.from({ length: outside }, () => turn(newId()));
        for (const e of insideFirst ? [...ins, ...outs] : [...outs, ...ins]) await bus.publish(e);

        const figures = (await bus.consumers()).consumers.find((c) => c.durable === durable);
        expect({ durable, pending: figures?.pending, behind: figures?.behind }).toEqual({ durable, pending: inside, behind: inside });
        const line = (await jetloopIn(["consumers", "--server", natsUrl(), "--namespace", ns])).stdout.split("\n").find((l) => l.startsWith(`${durable} `));
        expect(line).toContain(` behind=${inside} `);
      }),
      { seed: 4204, numRuns: 8 },
    );
  }, 120_000);
});
