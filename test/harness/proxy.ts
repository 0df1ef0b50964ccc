// A TCP proxy in front of a nats-server, for faults a client cannot cause itself: `pause()`
// stops reading what the server sends (the server's outbound buffer for the client fills
// until it cuts the client off as a slow consumer), `cut()` drops every connection (the
// client reconnects through the proxy). `upstreamDelayMs` holds what each client sends for that
// long before the server reads it (a slow link one way: a subscription reaches the server late).
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
  close(): Promise<void>;
}

export async function startProxy(targetPort: number, targetHost = "127.0.0.1", { upstreamDelayMs = 0 }: { upstreamDelayMs?: number } = {}): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let isDown = false;
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
      if (upstreamDelayMs === 0) client.pipe(upstream);
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
    close: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
