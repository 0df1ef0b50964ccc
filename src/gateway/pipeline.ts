/**
 * Requests of one connection answered one at a time, as Go's net/http serves a connection:
 * HTTP/1.1 lets a client write requests without reading answers (pipelining), and Node
 * parses each request that arrives and hands it to the handler at once. One socket
 * pipelining thousands of session lists had the gateway run them all together and hold
 * every answer the client was not reading: gigabytes. Here a connection's next request
 * starts only when the previous answer is finished (handed to the socket), and reading the
 * socket is paused while requests wait; at most `maxPipelined` requests of one connection
 * are held (the one being answered and those waiting), and one more closes the connection:
 * a client that sends far more than it reads is cut, not buffered for.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

type Handle = (req: IncomingMessage, res: ServerResponse) => void;

interface Lane {
  /** The answer being written, if any. */
  busy: boolean;
  readonly waiting: { readonly req: IncomingMessage; readonly res: ServerResponse }[];
}

/** Wraps `handle` so that each connection's requests run one after another, at most `maxPipelined` held. */
export function oneAtATime(handle: Handle, maxPipelined: number): Handle {
  const lanes = new WeakMap<Socket, Lane>();
  const start = (socket: Socket, lane: Lane, req: IncomingMessage, res: ServerResponse): void => {
    lane.busy = true;
    // 'close' follows 'finish', and comes alone when the client left mid-answer.
    res.once("close", () => {
      lane.busy = false;
      const next = lane.waiting.shift();
      if (lane.waiting.length === 0 && !socket.destroyed) socket.resume();
      if (next !== undefined && !socket.destroyed) start(socket, lane, next.req, next.res);
    });
    handle(req, res);
  };
  return (req, res) => {
    const socket = req.socket;
    let lane = lanes.get(socket);
    if (lane === undefined) {
      lane = { busy: false, waiting: [] };
      lanes.set(socket, lane);
    }
    if (socket.destroyed) return;
    if (!lane.busy) return start(socket, lane, req, res);
    if (1 + lane.waiting.length >= maxPipelined) {
      // Answers must go out in order, so no refusal can be written ahead of those held: cut.
      lane.waiting.length = 0;
      socket.destroy();
      return;
    }
    lane.waiting.push({ req, res });
    // Read no more of this connection until what it asked is answered. Node may resume the
    // socket itself (to drain a finished request's body): the cap above still holds.
    socket.pause();
  };
}
