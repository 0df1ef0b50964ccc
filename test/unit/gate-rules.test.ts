// The answer path's decisions with plain inputs, no server: what an answer command does to
// the open gates of a loop, what a resolution writes, and what the answerer is told.
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { requestFailure } from "../../src/commands/answer.js";
import {
  ANSWER_MEMORY,
  failureReply,
  GateBook,
  gateOptionsProblem,
  PERMISSION_ACTIONS,
  type GateState,
  inputPrompt,
  NO_ANSWER,
  openedGate,
  permissionPrompt,
  type PermissionAction,
  type Resolution,
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
    expect(r).toEqual({ code: "GATE_UNKNOWN", message: `no gate ${ID.gate} was opened on this loop` });
  });

  it("refuses an answer to a gate never opened here: GATE_UNKNOWN, naming the key", () => {
    const book = bookOf(permissionGate());
    expect(refusal(book.judge(encodeAnswer(approve(permissionGate({ toolExecutionId: ID.tool })))))).toEqual({
      code: "GATE_UNKNOWN",
      message: `no gate ${ID.tool} was opened on this loop`,
    });
  });

  it("takes a control the gate offers: by its action, or the first with the effect named; refuses any other", () => {
    const three = permissionGate({ controls: ["Approve", "Approve always for this workspace", "Deny"] });
    for (const action of three.controls!) {
      const v = bookOf(three).judge(encodeAnswer(approve(three, { effect: undefined, action })));
      expect("resolve" in v && v.resolution.action).toBe(action);
    }
    const byEffect = bookOf(three).judge(encodeAnswer(approve(three)));
    expect("resolve" in byEffect && byEffect.resolution.action).toBe("Approve");
    const onlyAlways = permissionGate({ controls: ["Approve always for this workspace", "Deny"] });
    const v = bookOf(onlyAlways).judge(encodeAnswer(approve(onlyAlways)));
    expect("resolve" in v && v.resolution.action).toBe("Approve always for this workspace");
    // A gate listing two controls (a loop may narrow them) takes neither the third nor a control that does not do the effect named.
    const two = permissionGate({ controls: ["Approve", "Deny"] });
    expect(refusal(bookOf(two).judge(encodeAnswer(approve(two, { effect: undefined, action: "Approve always for this workspace" }))))).toEqual({
      code: "COMMAND_INVALID",
      message: '"Approve always for this workspace" is not one of the gate\'s controls',
    });
    expect(refusal(bookOf(two).judge(encodeAnswer(approve(two, { effect: "approve", action: "Deny" }))))).toEqual({
      code: "COMMAND_INVALID",
      message: 'the control "Deny" does not approve',
    });
    const denyOnly = permissionGate({ controls: ["Deny"] });
    expect(refusal(bookOf(denyOnly).judge(encodeAnswer(approve(denyOnly))))).toEqual({ code: "COMMAND_INVALID", message: "the gate offers no control that does approve" });
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

  it("claims the gate: a second answer before the resolution is GATE_RESOLVED with no outcome yet; a repeat of the command waits; reopen makes it answerable", () => {
    const g = permissionGate();
    const book = bookOf(g);
    const first = approve(g);
    claimed(book.judge(encodeAnswer(first)));
    expect(book.judge(encodeAnswer(approve(g)))).toEqual({ reply: { status: "refused", code: "GATE_RESOLVED", message: `gate ${g.gateId} is being resolved` } });
    expect(book.judge(encodeAnswer(first))).toEqual({ wait: first.commandId });
    book.reopen(g, first.commandId);
    expect(claimed(book.judge(encodeAnswer(first)))).toBe(g);
  });

  it("answers a repeated command id with its first outcome, marked duplicate; any other answer is GATE_RESOLVED", () => {
    const g = permissionGate();
    const book = bookOf(g);
    const first = approve(g, { effect: "deny" });
    const v = book.judge(encodeAnswer(first));
    if (!("resolve" in v)) expect.fail("not claimed");
    const outcome = book.settle(g, v.resolution, 7);
    expect(outcome).toEqual({ status: "ok", gateId: g.gateId, toolExecutionId: g.toolExecutionId, action: "deny", control: "Deny", journalSeq: 7, duplicate: false });
    // the same id named by the gate's tool execution: a repeat
    const { gateId: _g, ...byExecution } = first;
    expect(book.judge(encodeAnswer({ ...byExecution, toolExecutionId: g.toolExecutionId }))).toEqual({ reply: { ...outcome, duplicate: true } });
    // the same id with another effect is no repeat (Go's idempotency_conflict): refused, not told the first outcome as its own
    expect(refusal(book.judge(encodeAnswer({ ...first, effect: "approve" }))).code).toBe("COMMAND_INVALID");
    for (const other of [approve(g), approve(g, { gateId: g.gateId })]) {
      expect(book.judge(encodeAnswer(other))).toEqual({ reply: { status: "refused", code: "GATE_RESOLVED", message: `gate ${g.gateId} is already resolved`, outcome } });
    }
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
    const book = bookOf(g);
    const v = book.judge(encodeAnswer(say(g, "free text")));
    if (!("resolve" in v)) expect.fail("not claimed");
    expect(book.settle(g, v.resolution, 3)).toMatchObject({ action: "answered", journalSeq: 3, duplicate: false });
  });

  it("settles a resolution whose decision was not written as failed closed: the command's reply is the failure, the gate resolved as denied", () => {
    const g = permissionGate();
    const book = bookOf(g);
    const a = approve(g);
    const v = book.judge(encodeAnswer(a));
    if (!("resolve" in v)) expect.fail("not claimed");
    const reply = book.settle(g, v.resolution, 9, "decision not journaled");
    expect(reply).toEqual({ status: "refused", code: "COMMAND_FAILED", message: "decision not journaled" });
    expect(book.judge(encodeAnswer(a))).toEqual({ reply });
    expect(book.judge(encodeAnswer(approve(g)))).toMatchObject({ reply: { code: "GATE_RESOLVED", outcome: { action: "deny", journalSeq: 9 } } });
  });

  it(`forgets the oldest resolved gates and commands past ${ANSWER_MEMORY}, never an open one`, () => {
    const book = new GateBook<GateState>();
    const answerAndSettle = (g: GateState, seq: number) => {
      book.open(g);
      const a = approve(g);
      const v = book.judge(encodeAnswer(a));
      if (!("resolve" in v)) expect.fail("not claimed");
      book.settle(g, v.resolution, seq);
      return a;
    };
    const stillOpen = permissionGate();
    book.open(stillOpen);
    const first = permissionGate();
    const firstAnswer = answerAndSettle(first, 1);
    for (let i = 0; i < ANSWER_MEMORY - 2; i++) answerAndSettle(permissionGate(), i + 2);
    expect(refusal(book.judge(encodeAnswer(approve(first)))).code).toBe("GATE_RESOLVED");
    expect(book.judge(encodeAnswer(firstAnswer))).toMatchObject({ reply: { duplicate: true } });
    for (let i = 0; i < 2; i++) answerAndSettle(permissionGate(), i + 2);
    expect(refusal(book.judge(encodeAnswer(approve(first)))).code).toBe("GATE_UNKNOWN");
    expect(claimed(book.judge(encodeAnswer(approve(stillOpen))))).toBe(stillOpen);
  });
});

describe("GateBook.expire and closeAll", () => {
  it("expires an open gate once; a late answer is GATE_RESOLVED, with the timeout's outcome once settled", () => {
    const g = permissionGate();
    const book = bookOf(g);
    expect(book.expire(g)).toBe(true);
    expect(book.expire(g)).toBe(false);
    expect(refusal(book.judge(encodeAnswer(approve(g)))).code).toBe("GATE_RESOLVED");
    book.settle(g, { reason: "policy_response" }, 5);
    expect(book.judge(encodeAnswer(approve(g)))).toMatchObject({ reply: { code: "GATE_RESOLVED", outcome: { action: "deny", journalSeq: 5 } } });
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
    expect(refusal(book.judge(encodeAnswer(say(b, "x")))).code).toBe("GATE_RESOLVED");
    book.settle(b, { reason: "owner_closed" }, 8);
    expect(book.judge(encodeAnswer(say(b, "x")))).toMatchObject({ reply: { code: "GATE_RESOLVED", outcome: { action: "owner_closed", journalSeq: 8 } } });
  });
});

describe("resolutionOf: what the journal records", () => {
  const coords = STEP_COORDS;
  /** The records are valid events once the step's coordinates are added. */
  function written(g: GateState, a: Answer | undefined, action?: PermissionAction) {
    const r: Resolution = a ? { reason: "answered", answer: a, action: action ?? (a.kind === "permission" ? (a.effect === "approve" ? "Approve" : "Deny") : undefined) } : { reason: "policy_response" };
    const { resolved, decided } = resolutionOf(g, r);
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
    expect(picked.resolved).not.toHaveProperty("control");
    expect(picked.decided).toBeUndefined();
    expect(picked.resolved).toMatchObject({ action: "blue", reason: "answered", audit: { kind: "ask_user", data: {} } });
    const free = inputGate();
    const { resolved } = written(free, say(free, "my secret plan"));
    expect(resolved).toMatchObject({ action: "answered" });
    expect(JSON.stringify(resolved)).not.toContain("my secret plan");
    expect(written(free, undefined).resolved).toMatchObject({ action: undefined, reason: "policy_response" });
  });
});

describe("resolutionOf: controls and closes", () => {
  it("the control chosen is the action journaled; Approve always approves", () => {
    const g = permissionGate({ controls: ["Approve", "Approve always for this workspace", "Deny"] });
    const a = approve(g, { effect: undefined, action: "Approve always for this workspace" });
    const { resolved, decided } = resolutionOf(g, { reason: "answered", answer: a, action: "Approve always for this workspace" });
    expect(resolved).toMatchObject({ action: "Approve always for this workspace", reason: "answered" });
    expect(decided).toMatchObject({ effect: "approve" });
    createEvent("GateResolved", { ...STEP_COORDS, ...resolved });
  });

  it.each(["owner_closed", "abandoned"] as const)("a gate closed as %s records only its reason: no action, no decision", (reason) => {
    for (const g of [permissionGate(), inputGate()]) {
      const { resolved, decided } = resolutionOf(g, { reason });
      expect(resolved).toEqual({ cause: { toolExecutionId: g.toolExecutionId }, gateId: g.gateId, resolver: "loop", reason });
      expect(decided).toBeUndefined();
      createEvent("GateResolved", { ...STEP_COORDS, ...resolved });
    }
  });
});

describe("gateOptionsProblem: what a gate may offer", () => {
  it("permission controls are the Go model's three, each once; input choices at least one, never empty", () => {
    expect(gateOptionsProblem("permission", undefined)).toBeUndefined();
    expect(gateOptionsProblem("permission", [...PERMISSION_ACTIONS])).toBeUndefined();
    expect(gateOptionsProblem("permission", [])).toMatchObject({ option: "controls" });
    expect(gateOptionsProblem("permission", ["Approve", "Approve"])).toMatchObject({ message: "must not repeat an entry" });
    expect(gateOptionsProblem("permission", ["Maybe"])).toMatchObject({ option: "controls" });
    expect(gateOptionsProblem("input", [])).toMatchObject({ option: "choices", message: "must list at least one; omit it for the default" });
    expect(gateOptionsProblem("input", [""])).toMatchObject({ option: "choices" });
    expect(gateOptionsProblem("input", ["a", "b"])).toBeUndefined();
  });
});

describe("the opened gate and its prompt", () => {
  it("a permission gate blocks the tool call, is resolved by the loop and offers the Go runtime's three controls by default", () => {
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
      prompt: {
        title: "Run it?",
        controls: [
          { action: "Approve", label: "Approve" },
          { action: "Approve always for this workspace", label: "Approve always for this workspace" },
          { action: "Deny", label: "Deny" },
        ],
      },
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
