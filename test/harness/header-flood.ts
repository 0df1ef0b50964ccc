// A stranger's header flood against a gateway: from several loopback source addresses
// (127.0.0.2, 127.0.0.3, … are all loopback on Linux), as many connections per address as
// asked, each sending a request line and then headers that never end (large and fast, or a
// trickle), opening a new connection whenever the gateway closes one. Nothing of it is
// authenticated: the gateway must bound it before it knows who is calling.
import { connect as netConnect, type Socket } from "node:net";

export interface FloodOptions {
  /** The gateway's `http://host:port`. */
  readonly url: string;
  /** Source addresses, e.g. 127.0.0.2 … 127.0.0.5. */
  readonly sources: readonly string[];
  /** Connections kept open per source address. */
  readonly perSource: number;
  /** Header bytes each connection tries to send (it never ends its headers). */
  readonly headerBytes: number;
  /** Pause before a closed connection is opened again. Default 10 ms. */
  readonly reconnectMs?: number;
}

export interface Flood {
  /** Connections the gateway accepted and later closed (a 431, a 503, a timeout). */
  readonly cut: () => number;
  /** Connections opened in all. */
  readonly opened: () => number;
  stop(): void;
}

export function startHeaderFlood(options: FloodOptions): Flood {
  const u = new URL(options.url);
  const port = Number(u.port);
  const sockets = new Set<Socket>();
  let stopped = false;
  let cut = 0;
  let opened = 0;
  // One header line of 1 KiB, repeated: a real client's header, just too many of them.
  const line = `X-Flood: ${"a".repeat(1013)}\r\n`;
  const open = (source: string): void => {
    if (stopped) return;
    opened++;
    const s = netConnect({ port, host: u.hostname, localAddress: source });
    sockets.add(s);
    s.on("error", () => undefined);
    s.on("data", () => undefined);
    s.once("connect", () => {
      s.write(`GET /v1/sessions HTTP/1.1\r\nHost: ${u.host}\r\n`);
      let sent = 0;
      // Written while the socket takes it: the gateway decides how much it reads.
      const pump = (): void => {
        while (!stopped && sent < options.headerBytes && !s.destroyed) {
          sent += line.length;
          if (!s.write(line)) return void s.once("drain", pump);
        }
      };
      pump();
    });
    s.once("close", () => {
      sockets.delete(s);
      cut++;
      // Reconnect: the flood keeps the pressure up for as long as it runs. The pause leaves
      // the test's own process (which also runs the viewers) room to breathe on a small
      // machine: what is measured is what the gateway holds, not who wins a CPU race.
      if (!stopped) setTimeout(() => open(source), options.reconnectMs ?? 10);
    });
  };
  for (const source of options.sources) for (let i = 0; i < options.perSource; i++) open(source);
  return {
    cut: () => cut,
    opened: () => opened,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/** A process's resident memory in MiB (Linux `/proc`). */
export async function rssMiB(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb[1]) / 1024;
}
