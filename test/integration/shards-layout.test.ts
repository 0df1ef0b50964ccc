// A namespace's shard layout read from the server when some of its shard streams are
// missing (a half-provisioned or half-deleted layout), on a real nats-server: the count is
// still the one the surviving shards name, so a connect or a provision assuming another
// count is refused and nothing of another layout is created beside it.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, fromConnection } from "../../src/index.js";
import { ShardLayoutError } from "../../src/errors.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { rejection } from "../harness/async.js";

let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc?.close();
});

/** Every stream whose name starts with `base`. */
async function streamsOf(base: string): Promise<string[]> {
  const out: string[] = [];
  for await (const name of jsm.streams.names()) if (name === base || name.startsWith(`${base}_`)) out.push(name);
  return out.sort();
}

describe("a shard layout with some shard streams missing", () => {
  it("is read as its count: another count (or none) is refused at connect and at provision, nothing created", async () => {
    // S = 2..5 and which shards are deleted (never all), generated.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((S) => fc.tuple(fc.constant(S), fc.subarray(Array.from({ length: S }, (_, k) => k), { minLength: 1, maxLength: S - 1 }), fc.integer({ min: 1, max: 5 }).filter((n) => n !== S))),
        async ([S, missing, other]) => {
          const namespace = uniqueNamespace();
          const bus = await connect({ servers: natsServers(), namespace, shards: S });
          try {
            await bus.provision();
            for (const k of missing) await jsm.streams.delete(`${bus.stream}_${k}_of_${S}`);
            const left = await streamsOf(bus.stream);
            // A connect without the count reads S from the shards left.
            const found = await connect({ servers: natsServers(), namespace });
            try {
              expect(found.shards).toBe(S);
            } finally {
              await found.close();
            }
            // Another count is refused at connect...
            expect(await rejection(connect({ servers: natsServers(), namespace, shards: other }))).toBeInstanceOf(ShardLayoutError);
            // ...and a provision assuming it (a bus over the caller's connection takes the count it is given) creates nothing.
            const wrong = fromConnection(nc, { namespace, shards: other });
            expect(await rejection(wrong.provision())).toBeInstanceOf(ShardLayoutError);
            await wrong.close();
            expect(await streamsOf(bus.stream)).toEqual(left);
          } finally {
            for (const name of await streamsOf(bus.stream)) await jsm.streams.delete(name).catch(() => undefined);
            await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
            await bus.close();
          }
        },
      ),
      { numRuns: 6 },
    );
  }, 120_000);

  it("a provision under another stream name on the same namespace is refused when the namespace has a layout of another count: nothing created", async () => {
    // The namespace's layout (S) and the other bus's count (another, 1..5), generated.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 5 }), async (S, other) => {
        fc.pre(S !== other);
        const namespace = uniqueNamespace();
        const bus = await connect({ servers: natsServers(), namespace, shards: S });
        const custom = `${bus.stream}_other`;
        try {
          await bus.provision();
          const wrong = fromConnection(nc, { namespace, stream: custom, shards: other });
          expect(await rejection(wrong.provision())).toBeInstanceOf(ShardLayoutError);
          await wrong.close();
          expect(await streamsOf(custom)).toEqual([]);
        } finally {
          for (const name of [...(await streamsOf(bus.stream)), ...(await streamsOf(custom))]) await jsm.streams.delete(name).catch(() => undefined);
          await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
          await bus.close();
        }
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});
