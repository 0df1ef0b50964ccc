// A TCP proxy in front of a nats-server, for faults a client cannot cause itself: `pause()`
// stops reading what the server sends (the server's outbound buffer for the client fills
// until it cuts the client off as a slow consumer), `cut()` drops every connection (the
// client reconnects through the proxy). `upstreamDelayMs` holds what each client sends for that
// long before the server reads it (a slow link one way: a subscription reaches the server late).
// `cutEvery(k)` (with `countPublishes`) cuts the link each time the server has been handed k
// more publishes (PUB/HPUB) from the clients: a cut at an exact message, the next one lost.
import { createServer, type Socket } from "node:net";

export interface TcpProxy {
  readonly url: string;
  /** Stop reading from the server on every current connection. */
  pause(): void;
  resume(): void;
  /** Drop every current connection. */
  cut(): void;
  /** Drop every current connection and refuse new ones until up(): the link is down. */
  down(): void;
  up(): void;
  /**
   * Cut every connection each time `k` more publishes have been handed to the server
   * (counted over all connections; needs `countPublishes`). `partial`: half of the next
   * message is handed over before the cut. `cuts` says how many so far; `k` 0 stops it.
   */
  cutEvery(k: number, options?: { partial?: boolean; times?: number }): void;
  readonly cuts: number;
  /** Publishes handed to the server so far (needs `countPublishes`). */
  readonly publishes: number;
  close(): Promise<void>;
}

/**
 * The length of the first complete client command in `buf` from `at`, and whether it is a
 * publish (PUB/HPUB: a line with the payload size, then the payload and CRLF); undefined
 * while incomplete. Every other client command is one line.
 */
export function clientCommand(buf: Buffer, at: number): { length: number; publish: boolean } | undefined {
  const eol = buf.indexOf("\r\n", at);
  if (eol < 0) return undefined;
  const line = buf.toString("latin1", at, eol);
  const verb = line.slice(0, 4).toUpperCase();
  if (verb !== "PUB " && verb !== "HPUB") return { length: eol + 2 - at, publish: false };
  const size = Number(line.trim().split(/\s+/).at(-1));
  const length = eol + 2 - at + size + 2;
  return at + length <= buf.length ? { length, publish: true } : undefined;
}

export async function startProxy(
  targetPort: number,
  targetHost = "127.0.0.1",
  { upstreamDelayMs = 0, countPublishes = false }: { upstreamDelayMs?: number; countPublishes?: boolean } = {},
): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let isDown = false;
  let publishes = 0;
  let every = 0;
  let partial = false;
  let cutsLeft = Infinity;
  let untilCut = 0;
  let cuts = 0;
  /** Hands the client's complete commands to the server, counting publishes, cutting at the armed one. */
  const relayCounted = (client: Socket, upstream: Socket) => {
    let pending: Buffer = Buffer.alloc(0);
    client.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let at = 0;
      for (;;) {
        const c = clientCommand(pending, at);
        if (c === undefined) break;
        if (c.publish && every > 0 && untilCut === 0) {
          if (partial) upstream.write(pending.subarray(at, at + Math.floor(c.length / 2)));
          cuts++;
          if (--cutsLeft <= 0) every = 0;
          untilCut = every;
          pending = Buffer.alloc(0);
          cut();
          return;
        }
        upstream.write(pending.subarray(at, at + c.length));
        at += c.length;
        if (c.publish) {
          publishes++;
          if (every > 0) untilCut--;
        }
      }
      pending = pending.subarray(at);
    });
  };
  const server = createServer((client) => {
    if (isDown) {
      client.destroy();
      return;
    }
    const upstream = new (client.constructor as typeof Socket)();
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.connect(targetPort, targetHost, () => {
      // One delay for every chunk: timers of one delay fire in the order set, so bytes stay in order.
      if (countPublishes) relayCounted(client, upstream);
      else if (upstreamDelayMs === 0) client.pipe(upstream);
      else client.on("data", (chunk) => setTimeout(() => upstream.destroyed || upstream.write(chunk), upstreamDelayMs));
      upstream.pipe(client);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const cut = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    pause: () => {
      for (const [client, upstream] of pairs) {
        upstream.unpipe(client);
        upstream.pause();
      }
    },
    resume: () => {
      for (const [client, upstream] of pairs) {
        upstream.pipe(client);
        upstream.resume();
      }
    },
    cut,
    down: () => {
      isDown = true;
      cut();
    },
    up: () => {
      isDown = false;
    },
    cutEvery: (k, options = {}) => {
      if (!countPublishes && k > 0) throw new Error("cutEvery needs startProxy(..., { countPublishes: true })");
      every = k;
      untilCut = k;
      partial = options.partial ?? false;
      cutsLeft = options.times ?? Infinity;
    },
    get cuts() {
      return cuts;
    },
    get publishes() {
      return publishes;
    },
    close: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
