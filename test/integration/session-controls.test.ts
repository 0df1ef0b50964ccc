// The session controls through the SDK on a real nats-server: serveControls on one side,
// submitInput and interrupt on the other; each outcome a result value, each command id
// handled once (repeats get the first outcome, another request under it is a conflict),
// a malformed command refused by the actor, nobody listening said as such.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError, connect, type ContentBlock, type Jetloop, newId, OptionsError } from "../../src/index.js";
import { sessionCommandSubject } from "../../src/subjects/subjects.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

let bus: Jetloop;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("sc") });
});
afterAll(() => bus.close());

const hello: ContentBlock[] = [{ type: "text", text: "hello" }];
const codeOf = (r: { ok: boolean; error?: CommandError }) => (r.ok ? "ok" : r.error!.code);

describe("session controls over the SDK", () => {
  it("delivers input and interrupts to the session's actor, once per command id", async () => {
    const sid = newId();
    const inputs: { commandId: string; blocks: ContentBlock[] }[] = [];
    let interrupts = 0;
    const server = await bus.session(sid).serveControls({
      input: (c) => {
        inputs.push(c);
        return c.blocks.some((b) => b.type === "text" && b.text === "no") ? { ok: false, reason: "not now" } : { ok: true };
      },
      interrupt: () => ({ interrupted: ++interrupts === 1 }),
    });
    const s = bus.session(sid);
    const first = await s.submitInput(hello);
    expect(first).toMatchObject({ ok: true, duplicate: false });
    expect(inputs).toEqual([{ commandId: first.ok && first.commandId, blocks: hello }]);

    const commandId = newId();
    const again = await Promise.all([s.submitInput(hello, { commandId }), s.submitInput(hello, { commandId })]);
    expect(again.map((r) => r.ok && r.commandId)).toEqual([commandId, commandId]);
    expect(again.map((r) => r.ok && r.duplicate).sort()).toEqual([false, true]);
    expect(inputs).toHaveLength(2);
    const conflict = await s.submitInput([{ type: "text", text: "other" }], { commandId });
    expect(codeOf(conflict)).toBe("IDEMPOTENCY_CONFLICT");

    const refused = await s.submitInput([{ type: "text", text: "no" }]);
    expect(refused.ok ? undefined : [refused.error.code, refused.error.message]).toEqual(["INPUT_REFUSED", "not now"]);

    const i = newId();
    expect(await s.interrupt({ commandId: i })).toMatchObject({ ok: true, interrupted: true, duplicate: false });
    expect(await s.interrupt({ commandId: i })).toMatchObject({ ok: true, interrupted: true, duplicate: true });
    expect(await s.interrupt()).toMatchObject({ ok: true, interrupted: false });
    expect(interrupts).toBe(2);
    await server.close();
    expect(codeOf(await s.interrupt())).toBe("COMMAND_NO_LISTENER");
  });

  it("says when nobody listens, refuses what it cannot send, and the actor refuses a malformed command", async () => {
    const s = bus.session(newId());
    expect(codeOf(await s.submitInput(hello))).toBe("COMMAND_NO_LISTENER");
    expect(codeOf(await s.submitInput([]))).toBe("COMMAND_INVALID");
    expect(codeOf(await s.submitInput(hello, { commandId: "nope" }))).toBe("COMMAND_INVALID");
    expect(codeOf(await s.submitInput([{ type: "nope" } as unknown as ContentBlock]))).toBe("COMMAND_INVALID");

    let called = 0;
    const server = await s.serveControls({ input: () => (called++, { ok: true }), interrupt: () => ({ interrupted: false }) });
    const raw = (data: Uint8Array) => bus.nc.request(sessionCommandSubject(bus.namespace, s.sessionId, "input"), data, { timeout: 2000 });
    const reply = (await raw(new TextEncoder().encode('{"command_id":"x","blocks":[]}'))).string();
    expect(JSON.parse(reply)).toMatchObject({ status: "refused", code: "COMMAND_INVALID" });
    expect(JSON.parse((await raw(new TextEncoder().encode("not json"))).string())).toMatchObject({ status: "refused", code: "COMMAND_INVALID" });
    expect(called).toBe(0);
    await server.close();
  });

  it("a handler that fails or answers nonsense is COMMAND_FAILED, and its retry runs again", async () => {
    const s = bus.session(newId());
    let n = 0;
    const server = await s.serveControls({
      input: () => {
        if (++n === 1) throw new Error("secret input text");
        return { ok: true };
      },
      interrupt: () => ({ nope: true }) as unknown as { interrupted: boolean },
    });
    const commandId = newId();
    expect(codeOf(await s.submitInput(hello, { commandId }))).toBe("COMMAND_FAILED");
    expect(await s.submitInput(hello, { commandId })).toMatchObject({ ok: true, duplicate: false });
    expect(codeOf(await s.interrupt())).toBe("COMMAND_FAILED");
    await server.close();
  });

  it("checks its handlers when it starts", () => {
    const s = bus.session(newId());
    expect(() => s.serveControls({ input: () => ({ ok: true }) } as never)).toThrow(OptionsError);
    expect(() => s.serveControls(undefined as never)).toThrow(OptionsError);
  });

  it("a slow actor: COMMAND_TIMEOUT, and a retry under the same id gets the outcome once it is known", async () => {
    const s = bus.session(newId());
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    const server = await s.serveControls({
      input: async () => {
        calls++;
        await held;
        return { ok: true };
      },
      interrupt: () => ({ interrupted: false }),
    });
    const commandId = newId();
    const late = await s.submitInput(hello, { commandId, timeoutMs: 200 });
    expect(late.ok ? undefined : late.error).toBeInstanceOf(CommandError);
    expect(codeOf(late)).toBe("COMMAND_TIMEOUT");
    release();
    expect(await s.submitInput(hello, { commandId })).toMatchObject({ ok: true, commandId, duplicate: true });
    expect(calls).toBe(1);
    await server.close();
  });
});
