// A TCP proxy in front of a nats-server, for faults a client cannot cause itself: `pause()`
// stops reading what the server sends (the server's outbound buffer for the client fills
// until it cuts the client off as a slow consumer), `cut()` drops every connection (the
// client reconnects through the proxy).
import { createServer, type Socket } from "node:net";

export interface TcpProxy {
  readonly url: string;
  /** Stop reading from the server on every current connection. */
  pause(): void;
  resume(): void;
  /** Drop every current connection. */
  cut(): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
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
      client.pipe(upstream);
      upstream.pipe(client);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
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
    cut: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
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
