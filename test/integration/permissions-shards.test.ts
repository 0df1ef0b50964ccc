// deploy/nats/permissions-shards.example.conf, verbatim: the per-session grants of
// permissions.example.conf for a namespace split in three shards. The runtime appends to
// every shard; a follower, granted only her session's shard (its stream and
// acme.journal-<k>-of-3.<session>.>), follows and replays her session and is refused
// another session's (in another shard) and the shards' subjects, typed and promptly.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, PermissionDeniedError, type Jetloop } from "../../src/index.js";
import { shardOfSession } from "../../src/streams/shards.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";
import { EXAMPLE } from "../harness/reliability/scenarios/security.js";
import { collect, enduring, eventIdOf, newCoords } from "../harness/reliability/workload.js";

const SHARDS = 3;
const CONFIG = join(REPO_ROOT, "deploy/nats/permissions-shards.example.conf");
const { namespace, alice: A, bob: B, runtime: R, ops: O } = EXAMPLE;

describe("example permissions of a namespace split in three shards", () => {
  let server: NatsServer;
  let runtime: Jetloop;
  const buses: Jetloop[] = [];
  const user = async (u: { user: string; pass: string; inbox?: string }, extra: Record<string, unknown> = {}) => {
    const bus = await connect({ servers: server.url, namespace, shards: SHARDS, user: u.user, pass: u.pass, ...(u.inbox ? { natsOptions: { inboxPrefix: u.inbox } } : {}), ...extra });
    buses.push(bus);
    return bus;
  };
  /** The ids of `n` enduring events appended to `session` by the runtime. */
  const append = async (session: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = enduring(newCoords(session));
      await runtime.publish(e);
      ids.push(eventIdOf(e));
    }
    return ids;
  };

  beforeAll(async () => {
    server = await startServer({ configText: readFileSync(CONFIG, "utf8") });
    await (await user(O)).provision();
    runtime = await user(R);
  }, 60_000);
  afterAll(async () => {
    for (const b of buses) await b.close().catch(() => undefined);
    await server?.close();
  });

  it("places the example's two sessions in different shards, as its comments say", () => {
    expect(shardOfSession(A.session, SHARDS).index).toBe(2);
    expect(shardOfSession(B.session, SHARDS).index).toBe(0);
    expect(runtime.journalOf(A.session).stream).toBe("acme_journal_2_of_3");
    expect(runtime.journalOf(B.session).stream).toBe("acme_journal_0_of_3");
  });

  it("the runtime appends to every shard; each follower follows and replays her own session", async () => {
    // Sessions of every shard (the runtime's grant covers all three).
    const others = Array.from({ length: 40 }, () => newCoords().sessionId);
    const covered = new Set(others.map((s) => shardOfSession(s, SHARDS).index));
    expect(covered.size).toBe(SHARDS);
    for (const s of others) await append(s, 1);

    const alice = await user(A, { readConsumers: A.readConsumers });
    const bob = await user(B, { readConsumers: B.readConsumers });
    const before = { alice: await append(A.session, 3), bob: await append(B.session, 3) };
    const aGot = collect(await alice.session(A.session).subscribeEvents({ enduring: "all" }, { start: "all" }));
    const bGot = collect(await bob.session(B.session).subscribeEvents({ enduring: "all" }, { start: "all" }));
    const after = { alice: await append(A.session, 3), bob: await append(B.session, 3) };
    await aGot.waitForAll([...before.alice, ...after.alice], 10_000);
    await bGot.waitForAll([...before.bob, ...after.bob], 10_000);
    const replayed: string[] = [];
    for await (const d of alice.session(A.session).replay({ enduring: "all" })) replayed.push(eventIdOf(d.event));
    expect(replayed).toEqual([...before.alice, ...after.alice]);
    // Only her session's events, each once.
    expect(aGot.ids).toEqual([...before.alice, ...after.alice]);
    expect(bGot.ids).toEqual([...before.bob, ...after.bob]);
  });

  it("refuses a follower another session (another shard's), the whole namespace and appends, typed and promptly", async () => {
    const alice = await user(A, { readConsumers: A.readConsumers });
    const refused = async (what: string, f: () => Promise<unknown>) => {
      const t0 = Date.now();
      const e = await f().then(
        async (v) => {
          if (v && typeof v === "object" && "close" in v) await (v as { close(): Promise<void> }).close();
          return undefined;
        },
        (err: unknown) => err,
      );
      expect(e, what).toBeInstanceOf(PermissionDeniedError);
      expect(Date.now() - t0, what).toBeLessThan(2000);
    };
    await refused("alice replays bob's session", async () => {
      for await (const _ of alice.session(B.session).replay({ enduring: "all" })) break;
    });
    await refused("alice follows bob's session", () => alice.session(B.session).subscribeEvents({ enduring: "all" }, { start: "all" }));
    await refused("alice follows every session", () => alice.subscribeEvents({ enduring: "all" }));
    await refused("alice appends to her own session", () => alice.publish(enduring(newCoords(A.session))));
  });
});
