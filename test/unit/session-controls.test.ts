// The session controls without a server: the input body as the Go handler decodes it
// (generated families of valid and refused bodies), the command id and failure mapping
// of the gateway, and the idempotency book (first outcome from acceptance, conflicts,
// forgetting what did not take effect).
import fc from "fast-check";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { fromWire, toWireJson } from "../../src/wire/wire.js";
import { ControlBook, CONTROL_MEMORY } from "../../src/commands/controls-book.js";
import { decodeInputCommand, encodeInputCommand, fingerprintOf } from "../../src/commands/controls-protocol.js";
import { type ContentBlock, contentBlockSchema, MAX_BLOCKS } from "../../src/events/content.js";
import { controlCommandId, controlFailure, decodeInputBody, idempotencyKey, MAX_IDEMPOTENCY_KEY_BYTES } from "../../src/gateway/controls.js";
import { CommandError, newId } from "../../src/index.js";
import { sessionCommandSubject } from "../../src/subjects/subjects.js";
import { compact } from "./arbitraries.js";

const blocksSchema = z.array(contentBlockSchema);
const wire = (blocks: ContentBlock[]) => toWireJson(blocksSchema, blocks);
const b64 = fc.uint8Array({ maxLength: 12 }).map((a) => Buffer.from(a).toString("base64"));
const short = fc.string({ maxLength: 12 });

/** Blocks of every kind the Go content codec has: the event arbitraries' message blocks, and media blocks beside them. */
const mediaBlockArb: fc.Arbitrary<ContentBlock> = fc.oneof(
  fc.record({ type: fc.constant("image" as const), mediaType: short, source: fc.oneof(fc.record({ url: short }), fc.record({ data: b64 })) }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("audio" as const), mediaType: short, data: b64 }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("document" as const), mediaType: short, name: short, data: b64, text: short }, { requiredKeys: ["type"] }),
);
const messageBlocksArb = compact
  .eventArb("TurnStarted")
  .map((e) => ((e.message as { blocks?: ContentBlock[] } | undefined)?.blocks ?? []))
  .filter((b) => b.length > 0);
const blocksArb: fc.Arbitrary<ContentBlock[]> = fc
  .tuple(messageBlocksArb, fc.array(mediaBlockArb, { maxLength: 3 }))
  // In the form a read gives back (Go writes an image's empty Source, so it reads as {}).
  .map(([m, media]) => blocksSchema.parse(fromWire(blocksSchema, JSON.parse(wire(blocksSchema.parse([...m, ...media]))))));

describe("the input body, as the Go handler decodes it", () => {
  it("reads every block of the content codec as written, the blocks key in any case, other keys ignored", () => {
    fc.assert(
      fc.property(blocksArb, fc.constantFrom("blocks", "Blocks", "BLOCKS"), fc.boolean(), (blocks, key, extra) => {
        const body = `{${extra ? '"session_id":"x","blocks_":1,' : ""}"${key}":${wire(blocks)}}`;
        expect(decodeInputBody(body)).toEqual(blocks);
      }),
    );
  });

  it("ignores unknown keys inside a block, as Go's struct decoding does", () => {
    expect(decodeInputBody('{"blocks":[{"type":"text","Text":"hi","cache_control":{"x":1}}]}')).toEqual([{ type: "text", text: "hi" }]);
  });

  it("refuses a body with no blocks: absent, empty, {} , null, [], a non-object", () => {
    for (const body of ["", "  \n", "{}", "null", '{"blocks":null}', '{"blocks":[]}', "[]", '"x"', "1", "true", '{"other":[{"type":"text","Text":"a"}]}']) {
      expect(decodeInputBody(body), body).toBeUndefined();
    }
  });

  it("refuses a block of an unknown type, or with its type missing, mistyped or in another case", () => {
    const known = new Set(["text", "refusal", "thinking", "tool_use", "tool_result", "image", "audio", "document"]);
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }).filter((t) => !known.has(t)), (t) => {
        expect(decodeInputBody(`{"blocks":[{"type":${JSON.stringify(t)},"Text":"a"}]}`)).toBeUndefined();
      }),
    );
    for (const b of ['{"Text":"a"}', '{"type":1}', '{"type":null}', '{"type":"TEXT","Text":"a"}', "null", "1", '"text"', "[]"]) {
      expect(decodeInputBody(`{"blocks":[${b}]}`), b).toBeUndefined();
    }
  });

  it("refuses a wrong JSON type at each field of a valid body", () => {
    // Every scalar or object position of a generated body, replaced by a value of another JSON type.
    const other = (v: unknown): unknown[] => {
      const all: unknown[] = [7, "s", true, [1], { k: 1 }];
      const kind = Array.isArray(v) ? "array" : typeof v;
      return all.filter((a) => (Array.isArray(a) ? "array" : typeof a) !== kind);
    };
    const paths = (v: unknown, at: (string | number)[] = []): (string | number)[][] => {
      if (Array.isArray(v)) return v.flatMap((x, i) => paths(x, [...at, i]));
      if (v !== null && typeof v === "object") {
        return Object.entries(v).flatMap(([k, x]) => {
          // Raw JSON (a tool's Input, a provider's state) takes any value; the type tag is tested above.
          if (k === "Input" || k === "ProviderState" || k === "type") return [];
          return [[...at, k], ...paths(x, [...at, k])];
        });
      }
      return [];
    };
    fc.assert(
      fc.property(blocksArb, fc.nat(), fc.nat(), (blocks, pick, alt) => {
        const body = { blocks: JSON.parse(wire(blocks)) as unknown[] };
        const all = paths(body.blocks, []);
        if (all.length === 0) return;
        const path = all[pick % all.length]!;
        let parent: Record<string | number, unknown> = body.blocks as unknown as Record<number, unknown>;
        for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, unknown>;
        const last = path[path.length - 1]!;
        const choices = other(parent[last]);
        parent[last] = choices[alt % choices.length];
        expect(decodeInputBody(JSON.stringify(body)), JSON.stringify(body)).toBeUndefined();
      }),
    );
  });

  it("refuses what Go reads but jetloop cannot read the same way: duplicate keys, other letter case in a block, null fields, bad base64", () => {
    for (const body of [
      '{"blocks":[{"type":"text","Text":"a"}],"blocks":[{"type":"text","Text":"b"}]}',
      '{"blocks":[{"type":"text","Text":"a"}],"Blocks":[{"type":"text","Text":"b"}]}',
      '{"blocks":[{"type":"text","Text":"a","Text":"b"}]}',
      '{"blocks":[{"type":"text","text":"a"}]}',
      '{"blocks":[{"type":"text","Text":null}]}',
      '{"blocks":[{"type":"audio","Data":"%%%"}]}',
      '{"blocks":[{"type":"text","Text":"a"}]} trailing',
    ]) {
      expect(decodeInputBody(body), body).toBeUndefined();
    }
  });

  it("refuses more blocks than the content codec's cap", () => {
    const block = '{"type":"text","Text":""}';
    expect(decodeInputBody(`{"blocks":[${Array(MAX_BLOCKS).fill(block).join(",")}]}`)).toHaveLength(MAX_BLOCKS);
    expect(decodeInputBody(`{"blocks":[${Array(MAX_BLOCKS + 1).fill(block).join(",")}]}`)).toBeUndefined();
  });
});

describe("the gateway's side of a control", () => {
  it("derives the command id from the session, the route and the Idempotency-Key, else mints one", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (sid, k1, k2) => {
        const id = controlCommandId(sid, "input", k1);
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        expect(controlCommandId(sid, "input", k1)).toBe(id);
        expect(controlCommandId(sid, "interrupt", k1)).not.toBe(id);
        if (k1 !== k2) expect(controlCommandId(sid, "input", k2)).not.toBe(id);
      }),
    );
    expect(controlCommandId(newId(), "input", undefined)).not.toBe(controlCommandId(newId(), "input", undefined));
  });

  it("takes an Idempotency-Key of up to 255 bytes, UTF-8 counted", () => {
    expect(idempotencyKey(undefined)).toEqual({ key: undefined });
    expect(idempotencyKey("")).toEqual({ key: undefined });
    expect(idempotencyKey("k".repeat(MAX_IDEMPOTENCY_KEY_BYTES))).toEqual({ key: "k".repeat(255) });
    expect(idempotencyKey("k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1))).toBe("too_long");
    expect(idempotencyKey("é".repeat(128))).toBe("too_long"); // 256 bytes
  });

  it("maps each refusal to the runtime's error, a timeout to a retry that is safe only under a key", () => {
    const fail = (code: ConstructorParameters<typeof CommandError>[0]) => ({ ok: false as const, error: new CommandError(code, "x") });
    expect(controlFailure(fail("COMMAND_NO_LISTENER"), "input", false)).toBe("session_not_found");
    expect(controlFailure(fail("IDEMPOTENCY_CONFLICT"), "input", true)).toBe("idempotency_conflict");
    expect(controlFailure(fail("COMMAND_TIMEOUT"), "interrupt", true)).toBe("control_timeout");
    expect(controlFailure(fail("COMMAND_TIMEOUT"), "interrupt", false)).toBe("control_timeout_unkeyed");
    for (const code of ["INPUT_REFUSED", "COMMAND_FAILED", "COMMAND_INVALID"] as const) {
      expect(controlFailure(fail(code), "input", true)).toBe("submit_failed");
      expect(controlFailure(fail(code), "interrupt", true)).toBe("interrupt_failed");
    }
  });

  it("puts the controls on the session's no-loop command subjects", () => {
    const sid = newId();
    expect(sessionCommandSubject("app", sid, "input")).toBe(`app.cmd.${sid}._.input`);
    expect(() => sessionCommandSubject("app", "x.>", "input")).toThrow(/session id/);
  });

  it("carries the blocks in the Go content codec and reads them back; a malformed command is COMMAND_INVALID", () => {
    fc.assert(
      fc.property(blocksArb, (blocks) => {
        const c = { commandId: newId(), fingerprint: fingerprintOf("x"), blocks };
        expect(decodeInputCommand(encodeInputCommand(c))).toEqual(c);
      }),
      { numRuns: 50 },
    );
    const bad = new TextEncoder().encode(`{"command_id":"${newId()}","fingerprint":"${fingerprintOf("x")}","blocks":[],"extra":1}`);
    expect(() => decodeInputCommand(bad)).toThrow(expect.objectContaining({ code: "COMMAND_INVALID" }) as Error);
  });
});

describe("the idempotency book", () => {
  const settled = (reply: string, effect = true) => Promise.resolve({ effect, reply });

  it("runs a command id once; every repeat, concurrent or later, gets the first outcome", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), async (repeats) => {
        const book = new ControlBook<string>();
        let runs = 0;
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const run = async () => {
          runs++;
          await gate;
          return { effect: true, reply: "first" };
        };
        const admitted = Array.from({ length: repeats }, () => book.admit("c", "f", run));
        expect(admitted.map((a) => a.kind)).toEqual(["first", ...Array<string>(repeats - 1).fill("repeat")]);
        release();
        for (const a of admitted) expect(a.kind !== "conflict" && (await a.outcome).reply).toBe("first");
        expect(book.admit("c", "f", run).kind).toBe("repeat");
        expect(runs).toBe(1);
      }),
    );
  });

  it("refuses the same id for another request, in flight or done", async () => {
    const book = new ControlBook<string>();
    const first = book.admit("c", "f1", () => settled("one"));
    expect(book.admit("c", "f2", () => settled("two")).kind).toBe("conflict");
    await (first.kind === "first" && first.outcome);
    expect(book.admit("c", "f2", () => settled("two")).kind).toBe("conflict");
  });

  it("forgets an outcome that did not take effect, so that a retry runs again", async () => {
    const book = new ControlBook<string>();
    const a = book.admit("c", "f", () => settled("refused", false));
    await (a.kind === "first" && a.outcome);
    await Promise.resolve();
    expect(book.admit("c", "f", () => settled("ok")).kind).toBe("first");
    const thrown = book.admit("d", "f", () => Promise.reject(new Error("x")));
    await (thrown.kind === "first" && thrown.outcome.catch(() => undefined));
    await Promise.resolve();
    expect(book.admit("d", "f", () => settled("ok")).kind).toBe("first");
  });

  it("remembers at most CONTROL_MEMORY ids, the oldest forgotten first", async () => {
    const book = new ControlBook<string>();
    for (let i = 0; i <= CONTROL_MEMORY; i++) book.admit(`c${i}`, "f", () => settled("ok"));
    expect(book.size).toBe(CONTROL_MEMORY);
    await Promise.resolve();
    expect(book.admit("c0", "f", () => settled("ok")).kind).toBe("first");
    expect(book.admit(`c${CONTROL_MEMORY}`, "f", () => settled("ok")).kind).toBe("repeat");
  });
});
