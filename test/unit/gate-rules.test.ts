// The answer path's decisions with plain inputs, no server: what an answer command does to
// the open gates of a loop, what a resolution writes, and what the answerer is told.
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { requestFailure } from "../../src/commands/answer.js";
import {
  ANSWER_MEMORY,
  failureReply,
  GateBook,
  type GateState,
  inputPrompt,
  NO_ANSWER,
  openedGate,
  permissionPrompt,
  resolutionOf,
  type Verdict,
} from "../../src/commands/gate-rules.js";
import { type Answer, answerCommand, decodeAnswer, decodeReply, encodeAnswer, encodeReply, outcomeOf } from "../../src/commands/protocol.js";
import { CommandError, createEvent, newId } from "../../src/index.js";
import { ID, minimalRequest, STEP_COORDS, thrownBy } from "./fixtures.js";

const utf8 = new TextEncoder();

function permissionGate(over: Partial<GateState> = {}): GateState {
  return { gateId: newId(), kind: "permission", turnId: ID.turn, stepId: ID.step, toolExecutionId: newId(), requirementDescriptions: ["read /tmp"], ...over };
}
function inputGate(over: Partial<GateState> = {}): GateState {
  return { gateId: newId(), kind: "input", turnId: ID.turn, stepId: ID.step, toolExecutionId: newId(), ...over };
}
type Permission = Extract<Answer, { kind: "permission" }>;
type Input = Extract<Answer, { kind: "input" }>;
const approve = (g: GateState, over: Partial<Permission> = {}): Permission => ({
  kind: "permission",
  commandId: newId(),
  toolExecutionId: g.toolExecutionId,
  effect: "approve",
  ...over,
});
const say = (g: GateState, answer: string): Input => ({ kind: "input", commandId: newId(), gateId: g.gateId, answer });

function refusal(v: Verdict<GateState>): { code: string; message: string } {
  if (!("reply" in v) || v.reply.status !== "refused") expect.fail(`expected a refusal, got ${JSON.stringify(v)}`);
  return { code: v.reply.code, message: v.reply.message };
}
function claimed(v: Verdict<GateState>): GateState {
  if (!("resolve" in v)) expect.fail(`expected the gate to be claimed, got ${JSON.stringify(v)}`);
  return v.resolve;
}
/** A book with the gates open. */
function bookOf(...gates: GateState[]): GateBook<GateState> {
  const book = new GateBook<GateState>();
  for (const g of gates) book.open(g);
  return book;
}

describe("GateBook.judge", () => {
  it.each([
    ["not JSON", "{", /malformed message/],
    ["not UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), /malformed message/],
    ["an unknown field", `{"kind":"permission","command_id":"${ID.command}","tool_execution_id":"${ID.tool}","effect":"approve","grant_token":"x"}`, /grant_token/],
    ["a duplicate key", `{"kind":"permission","command_id":"${ID.command}","command_id":"${ID.command}","tool_execution_id":"${ID.tool}","effect":"approve"}`, /duplicate/i],
    ["no gate named", `{"kind":"permission","command_id":"${ID.command}","effect":"approve"}`, /gateId or toolExecutionId/],
    ["an unknown effect", `{"kind":"permission","command_id":"${ID.command}","tool_execution_id":"${ID.tool}","effect":"maybe"}`, /effect/],
    ["an empty answer", `{"kind":"input","command_id":"${ID.command}","gate_id":"${ID.gate}","answer":""}`, /answer/],
    ["no command id", `{"kind":"input","gate_id":"${ID.gate}","answer":"yes"}`, /commandId/],
  ])("refuses a command with %s: COMMAND_INVALID", (_, wire, message) => {
    const g = permissionGate({ gateId: ID.gate, toolExecutionId: ID.tool });
    const book = bookOf(g);
    const r = refusal(book.judge(typeof wire === "string" ? utf8.encode(wire) : wire));
    expect(r.code).toBe("COMMAND_INVALID");
    expect(r.message).toMatch(message);
    // the gate is still open
    expect(claimed(book.judge(encodeAnswer(approve(g))))).toBe(g);
  });

  it("finds the gate by its id, or by the tool execution it guards", () => {
    const a = permissionGate();
    const b = permissionGate();
    const book = bookOf(a, b);
    expect(claimed(book.judge(encodeAnswer(approve(b, { toolExecutionId: undefined, gateId: b.gateId }))))).toBe(b);
    expect(claimed(book.judge(encodeAnswer(approve(a))))).toBe(a);
  });

  it("takes the gate id over the tool execution id", () => {
    const a = permissionGate();
    const book = bookOf(a);
    const r = refusal(book.judge(encodeAnswer(approve(a, { gateId: ID.gate }))));
    expect(r).toEqual({ code: "GATE_UNKNOWN", message: `no open gate ${ID.gate} on this loop` });
  });

  it("refuses an answer to no open gate: GATE_UNKNOWN, naming the key", () => {
    const book = bookOf(permissionGate());
    expect(refusal(book.judge(encodeAnswer(approve(permissionGate({ toolExecutionId: ID.tool })))))).toEqual({
      code: "GATE_UNKNOWN",
      message: `no open gate ${ID.tool} on this loop`,
    });
  });

  it("refuses the wrong kind of answer: COMMAND_INVALID, and the gate stays open", () => {
    const p = permissionGate();
    const i = inputGate();
    const book = bookOf(p, i);
    expect(refusal(book.judge(encodeAnswer(say(p, "yes"))))).toEqual({ code: "COMMAND_INVALID", message: `gate ${p.gateId} asks for permission, not input` });
    expect(refusal(book.judge(encodeAnswer(approve(i))))).toEqual({ code: "COMMAND_INVALID", message: `gate ${i.gateId} asks for input, not permission` });
    expect(claimed(book.judge(encodeAnswer(approve(p))))).toBe(p);
    expect(claimed(book.judge(encodeAnswer(say(i, "anything"))))).toBe(i);
  });

  it("holds an input gate with choices to them", () => {
    const g = inputGate({ choices: ["red", "blue"] });
    const book = bookOf(g);
    expect(refusal(book.judge(encodeAnswer(say(g, "green"))))).toEqual({ code: "COMMAND_INVALID", message: "the answer is not one of the choices" });
    expect(claimed(book.judge(encodeAnswer(say(g, "blue"))))).toBe(g);
  });

  it("claims the gate: a second answer before the resolution is refused; reopen makes it answerable", () => {
    const g = permissionGate();
    const book = bookOf(g);
    claimed(book.judge(encodeAnswer(approve(g))));
    expect(refusal(book.judge(encodeAnswer(approve(g)))).code).toBe("GATE_UNKNOWN");
    book.reopen(g);
    expect(claimed(book.judge(encodeAnswer(approve(g))))).toBe(g);
  });

  it("answers a repeated command id with its first outcome, marked duplicate; any other answer is GATE_RESOLVED", () => {
    const g = permissionGate();
    const book = bookOf(g);
    const first = approve(g, { effect: "deny" });
    claimed(book.judge(encodeAnswer(first)));
    const outcome = book.settle(g, first, 7);
    expect(outcome).toEqual({ status: "ok", gateId: g.gateId, toolExecutionId: g.toolExecutionId, action: "deny", journalSeq: 7, duplicate: false });
    // the repeat carries another effect: the first outcome still stands
    expect(book.judge(encodeAnswer({ ...first, effect: "approve" }))).toEqual({ reply: { ...outcome, duplicate: true } });
    expect(refusal(book.judge(encodeAnswer(approve(g))))).toEqual({ code: "GATE_RESOLVED", message: `gate ${g.toolExecutionId} is already resolved` });
    expect(refusal(book.judge(encodeAnswer(approve(g, { gateId: g.gateId }))))).toEqual({ code: "GATE_RESOLVED", message: `gate ${g.gateId} is already resolved` });
  });

  it("does not remember a refused command: the same id may answer once the mistake is fixed", () => {
    const g = inputGate({ choices: ["yes"] });
    const book = bookOf(g);
    const wrong = say(g, "no");
    expect(refusal(book.judge(encodeAnswer(wrong))).code).toBe("COMMAND_INVALID");
    expect(claimed(book.judge(encodeAnswer({ ...wrong, answer: "yes" })))).toBe(g);
  });

  it("settles an input answer with the action `answered`", () => {
    const g = inputGate();
    const a = say(g, "free text");
    expect(bookOf(g).settle(g, a, 3)).toMatchObject({ action: "answered", journalSeq: 3, duplicate: false });
  });

  it(`forgets the oldest commands and gates past ${ANSWER_MEMORY}`, () => {
    const book = new GateBook<GateState>();
    const first = permissionGate();
    const firstAnswer = approve(first);
    book.settle(first, firstAnswer, 1);
    // each settle remembers the gate twice (by id and by tool execution): half the memory of gates
    for (let i = 0; i < ANSWER_MEMORY / 2; i++) {
      const g = permissionGate();
      book.settle(g, approve(g), i + 2);
    }
    expect(refusal(book.judge(encodeAnswer(approve(first)))).code).toBe("GATE_UNKNOWN");
    expect(book.judge(encodeAnswer(firstAnswer))).toMatchObject({ reply: { duplicate: true } });
    for (let i = 0; i < ANSWER_MEMORY / 2; i++) {
      const g = permissionGate();
      book.settle(g, approve(g), i + 2);
    }
    expect(refusal(book.judge(encodeAnswer(firstAnswer))).code).toBe("GATE_UNKNOWN");
  });
});

describe("GateBook.expire and closeAll", () => {
  it("expires an open gate once; a late answer finds no gate", () => {
    const g = permissionGate();
    const book = bookOf(g);
    expect(book.expire(g)).toBe(true);
    expect(book.expire(g)).toBe(false);
    expect(refusal(book.judge(encodeAnswer(approve(g)))).code).toBe("GATE_UNKNOWN");
  });

  it("does not expire a claimed gate, nor another gate under the same id", () => {
    const g = permissionGate();
    const book = bookOf(g);
    claimed(book.judge(encodeAnswer(approve(g))));
    expect(book.expire(g)).toBe(false);
    book.open({ ...g });
    expect(book.expire(g)).toBe(false);
  });

  it("closes every gate and hands them back", () => {
    const a = permissionGate();
    const b = inputGate();
    const book = bookOf(a, b);
    expect(book.closeAll()).toEqual([a, b]);
    expect(book.closeAll()).toEqual([]);
    expect(refusal(book.judge(encodeAnswer(say(b, "x")))).code).toBe("GATE_UNKNOWN");
  });
});

describe("resolutionOf: what the journal records", () => {
  const coords = STEP_COORDS;
  /** The records are valid events once the step's coordinates are added. */
  function written(g: GateState, a: Answer | undefined) {
    const { resolved, decided } = resolutionOf(g, a);
    createEvent("GateResolved", { ...coords, ...resolved });
    if (decided) createEvent("PermissionDecided", { ...coords, ...decided });
    return { resolved, decided };
  }

  it.each([
    ["approve", "Approve"],
    ["deny", "Deny"],
  ] as const)("an answered permission (%s): GateResolved %s by the user, and PermissionDecided", (effect, action) => {
    const g = permissionGate();
    const a = approve(g, { effect, reason: "looks fine" });
    const cause = { commandId: a.commandId, toolExecutionId: g.toolExecutionId, agency: 1 };
    expect(written(g, a)).toEqual({
      resolved: {
        cause,
        gateId: g.gateId,
        resolver: "loop",
        reason: "answered",
        action,
        source: { kind: "user" },
        audit: { kind: "permission", data: { requirementDescriptions: ["read /tmp"] } },
      },
      decided: { cause, toolExecutionId: g.toolExecutionId, effect, reason: "looks fine" },
    });
  });

  it("a permission nobody answered: denied by policy, with no command and no agency", () => {
    const g = permissionGate();
    const cause = { toolExecutionId: g.toolExecutionId };
    const { resolved, decided } = written(g, undefined);
    expect(resolved).toMatchObject({ reason: "policy_response", action: "Deny", source: { kind: "policy", reason: NO_ANSWER } });
    expect(resolved.cause).toEqual(cause);
    expect(decided).toEqual({ cause, toolExecutionId: g.toolExecutionId, effect: "deny", reason: NO_ANSWER });
  });

  it("an input gate writes no decision; a chosen choice is the action, free text is not journaled", () => {
    const chosen = inputGate({ choices: ["red", "blue"] });
    const picked = written(chosen, say(chosen, "blue"));
    expect(picked.decided).toBeUndefined();
    expect(picked.resolved).toMatchObject({ action: "blue", reason: "answered", audit: { kind: "ask_user", data: {} } });
    const free = inputGate();
    const { resolved } = written(free, say(free, "my secret plan"));
    expect(resolved.action).toBe("answered");
    expect(JSON.stringify(resolved)).not.toContain("my secret plan");
    expect(written(free, undefined).resolved).toMatchObject({ action: undefined, reason: "policy_response" });
  });
});

describe("the opened gate and its prompt", () => {
  it("a permission gate blocks the tool call, is resolved by the loop and offers Approve and Deny", () => {
    const g = permissionGate({ toolUseId: "toolu_01" });
    const prompt = permissionPrompt(minimalRequest(), "Run it?");
    const gate = openedGate(g.gateId, "permission", g, prompt);
    expect(gate).toEqual({
      id: g.gateId,
      kind: "harness.permission",
      resolver: "loop",
      blocks: "tool_call",
      effect: "resume",
      subject: { toolExecutionId: g.toolExecutionId, toolUseId: "toolu_01", turnId: ID.turn, stepId: ID.step },
      prompt: { title: "Run it?", controls: [{ action: "Approve", label: "Approve" }, { action: "Deny", label: "Deny" }] },
    });
    createEvent("GateOpened", { ...STEP_COORDS, gate });
  });

  it("titles a permission by its title, else the request's summary, else the tool", () => {
    expect(permissionPrompt({ ...minimalRequest(), summary: "list files" }, undefined).title).toBe("list files");
    expect(permissionPrompt({ ...minimalRequest(), summary: undefined }, undefined).title).toBe(minimalRequest().toolName);
  });

  it("an input gate asks its question with a control per choice", () => {
    const g = inputGate();
    expect(openedGate(g.gateId, "input", g, inputPrompt("Colour?", ["red"]))).toMatchObject({
      kind: "harness.ask_user",
      prompt: { body: "Colour?", controls: [{ action: "red", label: "red" }] },
    });
    expect(inputPrompt("Why?", undefined)).toEqual({ body: "Why?", controls: undefined });
  });
});

describe("replies and the answerer's errors", () => {
  it("a failed resolution is COMMAND_FAILED with the error's message, capped, and always a valid reply", () => {
    const long = new Error("x".repeat(5000));
    for (const e of [new Error("journal down"), long, new Error(""), "not an error"]) {
      const reply = failureReply(e);
      expect(decodeReply(encodeReply(reply))).toEqual(reply);
      expect(reply).toMatchObject({ status: "refused", code: "COMMAND_FAILED" });
    }
    expect(failureReply(new Error("journal down"))).toMatchObject({ message: "journal down" });
    expect((failureReply(long) as { message: string }).message).toHaveLength(1000);
    expect(failureReply("not an error")).toMatchObject({ message: "failed" });
  });

  it("answerCommand adds a command id, keeps a given one, and refuses a bad answer with COMMAND_INVALID", () => {
    const a = answerCommand({ kind: "permission", toolExecutionId: ID.tool, effect: "approve" });
    expect(a.commandId).toMatch(/^[0-9a-f-]{36}$/);
    expect(answerCommand({ kind: "input", gateId: ID.gate, answer: "yes", commandId: ID.command }).commandId).toBe(ID.command);
    for (const bad of [
      { kind: "permission", effect: "approve" },
      { kind: "permission", toolExecutionId: "nope", effect: "approve" },
      { kind: "input", gateId: ID.gate, answer: "" },
    ]) {
      const e = thrownBy(() => answerCommand(bad as never));
      expect(e).toBeInstanceOf(CommandError);
      expect(e).toMatchObject({ name: "CommandError", code: "COMMAND_INVALID" });
    }
  });

  it("decodeAnswer and decodeReply throw CommandError with their own code, the parse error as cause", () => {
    const e = thrownBy(() => decodeAnswer(utf8.encode("[")));
    expect(e).toMatchObject({ name: "CommandError", code: "COMMAND_INVALID" });
    expect((e as Error).cause).toBeInstanceOf(Error);
    expect(thrownBy(() => decodeReply(utf8.encode('{"status":"maybe"}')))).toMatchObject({ name: "CommandError", code: "COMMAND_FAILED" });
  });

  it("outcomeOf returns an outcome and throws a refusal as CommandError with its code", () => {
    const ok = { status: "ok", gateId: ID.gate, toolExecutionId: ID.tool, action: "approve", journalSeq: 4, duplicate: false } as const;
    expect(outcomeOf(encodeReply(ok))).toEqual(ok);
    for (const code of ["COMMAND_INVALID", "GATE_UNKNOWN", "GATE_RESOLVED", "COMMAND_FAILED"] as const) {
      expect(thrownBy(() => outcomeOf(encodeReply({ status: "refused", code, message: "why" })))).toMatchObject({ name: "CommandError", code, message: "why" });
    }
  });

  it("requestFailure tells no listener from no reply from any other failure, keeping the cause", () => {
    const none = new RequestError("no responders", { cause: new NoRespondersError("ns.cmd.x") });
    expect(requestFailure(none, ID.session, ID.loop, 5000)).toMatchObject({
      code: "COMMAND_NO_LISTENER",
      message: `no loop actor is listening for session ${ID.session} loop ${ID.loop}`,
      cause: none,
    });
    const late = new TimeoutError();
    expect(requestFailure(late, ID.session, ID.loop, 250)).toMatchObject({ code: "COMMAND_FAILED", message: "the loop actor did not reply within 250 ms", cause: late });
    const other = new Error("connection closed");
    expect(requestFailure(other, ID.session, ID.loop, 5000)).toMatchObject({ code: "COMMAND_FAILED", message: "answer failed: connection closed", cause: other });
  });
});
