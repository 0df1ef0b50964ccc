/**
 * The lean raw append loop: what a client that does nothing but publish and match acks
 * can get from the server. Every message is published with a reply subject under one
 * wildcard inbox subscription; acks are demultiplexed by the last token. No validation,
 * no encoding (the payload is pre-encoded), one header (Nats-Msg-Id), the ack parsed for
 * its sequence. It approximates what the server can acknowledge.
 */
import { createInbox, headers, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";

interface Waiter {
  resolve(seq: number): void;
  reject(e: Error): void;
}

export class LeanAppender {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #sub: Subscription;
  readonly #pending = new Map<string, Waiter>();
  #next = 0;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
    this.#prefix = createInbox();
    const cut = this.#prefix.length + 1;
    this.#sub = nc.subscribe(`${this.#prefix}.*`, {
      callback: (err, msg: Msg) => {
        if (err) return;
        const token = msg.subject.slice(cut);
        const w = this.#pending.get(token);
        if (!w) return;
        this.#pending.delete(token);
        const ack = msg.json<{ seq?: number; error?: { description?: string } }>();
        if (ack.error || typeof ack.seq !== "number") w.reject(new Error(`append refused: ${ack.error?.description ?? "no seq"}`));
        else w.resolve(ack.seq);
      },
    });
  }

  /** Publishes with a message id; resolves with the stream sequence from the ack. */
  append(subject: string, data: Uint8Array, msgId: string): Promise<number> {
    const token = (this.#next++).toString(36);
    const h = headers();
    h.set("Nats-Msg-Id", msgId);
    return new Promise<number>((resolve, reject) => {
      this.#pending.set(token, { resolve, reject });
      this.#nc.publish(subject, data, { reply: `${this.#prefix}.${token}`, headers: h });
    });
  }

  close(): void {
    this.#sub.unsubscribe();
  }
}
