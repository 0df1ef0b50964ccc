/**
 * fast-check arbitraries for valid events of every built-in type: canonical uuids,
 * coordinates that follow each identity profile, well-formed text within its cap,
 * optional fields present or absent. Reusable by any property or fuzz test.
 */
import fc from "fast-check";
import {
  COMMAND_EXECUTE,
  COMMAND_START_GRANT,
  defaultRegistry,
  isCanonicalUuid,
  limits,
  type EventType,
  type EventTypeDefinition,
  type PermissionRequest,
} from "../../src/index.js";
import { isCleanText } from "../../src/events/text.js";

export type AnyEvent = Record<string, unknown> & { type: string };

// --- building blocks -------------------------------------------------------------

/** An object with `required` keys always present and `optional` keys present or absent. */
function obj<R extends Record<string, fc.Arbitrary<unknown>>, O extends Record<string, fc.Arbitrary<unknown>>>(
  required: R,
  optional: O = {} as O,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({ ...required, ...optional }, { requiredKeys: Object.keys(required) as never[] });
}

export const uuidArb: fc.Arbitrary<string> = fc
  .oneof(
    fc.uuid(),
    // Any version and variant nibble: the codec does not care which.
    fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 32, maxLength: 32 }).map((d) => {
      const h = d.map((x) => x.toString(16)).join("");
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }),
  )
  .filter(isCanonicalUuid);

const MIN_MS = -62167219200000; // 0000-01-01T00:00:00Z
const MAX_MS = 253402300799999; // 9999-12-31T23:59:59.999Z

/** RFC 3339 UTC with no fraction or 1–9 fraction digits, as Go's RFC3339Nano or JS's toISOString write it. */
export const createdAtArb: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: MIN_MS, max: MAX_MS }), fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }))
  .map(([ms, fraction]) => {
    const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
    return fraction === undefined ? iso : `${iso.slice(0, 19)}${fraction === "" ? "" : `.${fraction}`}Z`;
  });

/** Characters that stress escaping, normalization and code-unit counting. */
const TRICKY = [
  "a", "Z", "0", " ", "\t", "\n", "\r", ".", "/", "-", "_", "é", "e\u0301", "A\u030a", "ß", "中", "😀", "👍🏽", "🇫🇷",
  "\u2028", "\u2029", "\u00a0", "\u0085", "<", ">", "&", '"', "\\", "'", "\u0080", "\ufeff", "\uffff", "\u{10ffff}",
];

const textCandidates = (max: number, long: boolean) =>
  fc.oneof(
    { arbitrary: fc.string({ unit: fc.constantFrom(...TRICKY), minLength: 1, maxLength: Math.min(max, 24) }), weight: 4 },
    { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: Math.min(max, 24) }), weight: 3 },
    { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: Math.min(max, 24) }), weight: 1 },
    // Near the cap (only for caps small enough to be cheap).
    ...(long && max <= limits.text ? [{ arbitrary: fc.string({ unit: "grapheme-ascii", minLength: max - 2, maxLength: max }), weight: 1 }] : []),
  );

/** Non-empty, well-formed text of at most `max` UTF-16 code units (sometimes right at the cap). */
export function textArb(max: number = limits.text, long = true): fc.Arbitrary<string> {
  return textCandidates(max, long).filter((s) => s.length >= 1 && s.length <= max && isCleanText(s));
}

/** Like textArb, and also trimmed and NFC-normalized, as the permission request wants it. */
export function normalizedTextArb(max: number = limits.text, long = true): fc.Arbitrary<string> {
  return textCandidates(max, long)
    .map((s) => s.normalize("NFC").trim())
    .filter((s) => s.length >= 1 && s.length <= max && isCleanText(s) && s === s.trim() && s === s.normalize("NFC"));
}

export const builtInTypes: EventType[] = [...defaultRegistry.types()].map((d) => d.type as EventType);
export const enduringTypes = builtInTypes.filter((t) => defaultRegistry.get(t)!.class === "enduring");
export const ephemeralTypes = builtInTypes.filter((t) => defaultRegistry.get(t)!.class === "ephemeral");

export interface EventArbitraries {
  /** A valid PermissionRequest: distinct requirements, candidates of their kind, grant fields when a grant is asked. */
  permissionRequestArb: fc.Arbitrary<PermissionRequest>;
  /** A valid event of one type. */
  eventArb: (type: EventType) => fc.Arbitrary<AnyEvent>;
  anyEventArb: fc.Arbitrary<AnyEvent>;
  enduringEventArb: fc.Arbitrary<AnyEvent>;
  ephemeralEventArb: fc.Arbitrary<AnyEvent>;
}

/**
 * Builds the event arbitraries. `longText` lets text fields reach their caps (thorough,
 * but a request then weighs ~12 KB); without it every text field stays short (for fuzz
 * corpora, where size only costs time).
 */
export function eventArbitraries({ longText }: { longText: boolean }): EventArbitraries {
  const txt = (max: number = limits.text) => textArb(max, longText);
  const ntxt = (max: number = limits.text) => normalizedTextArb(max, longText);

  // --- the permission request ----------------------------------------------------------

  const grantArb = fc.option(fc.record({ grantClass: ntxt(limits.name), grantTarget: ntxt() }), { nil: undefined });

  const candidateKey = (c: Record<string, unknown>) => JSON.stringify([c.kind, c.match, c.grantClass ?? "", c.grantTarget ?? ""]);
  const requirementKey = (r: Record<string, unknown>) => JSON.stringify([r.kind, r.scope ?? "", r.match, r.grantClass ?? "", r.grantTarget ?? ""]);

  const candidatesArb = (kind: string) =>
    fc.uniqueArray(
      fc.tuple(obj({ match: ntxt(), description: ntxt() }), grantArb).map(([c, g]) => ({ kind, ...c, ...g })),
      { selector: candidateKey, minLength: 1, maxLength: 3 },
    );

  const plainRequirementArb = ntxt(limits.name)
    .filter((k) => k !== COMMAND_EXECUTE)
    .chain((kind) =>
      fc
        .tuple(
          obj({ match: ntxt(), description: ntxt() }, { scope: ntxt(limits.name), candidates: candidatesArb(kind) }),
          grantArb,
        )
        .map(([r, g]) => ({ kind, ...r, ...g })),
    );

  /** A valid PermissionRequest: distinct requirements, candidates of their kind, grant fields when a grant is asked. */
  const permissionRequestArb: fc.Arbitrary<PermissionRequest> = fc
    .record({
      base: obj({ toolName: ntxt(limits.name) }, { summary: ntxt(limits.summary) }),
      requirements: fc.uniqueArray(plainRequirementArb, { selector: requirementKey, minLength: 1, maxLength: 4 }),
      commandExecute: fc.option(fc.record({ command: ntxt(), description: ntxt() }), { nil: undefined }),
      execution: fc.record({
        executionId: uuidArb,
        command: ntxt(),
        workingDirectory: ntxt(),
        expiresAtUnixMilli: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      }),
      includeExecution: fc.boolean(),
    })
    .map(({ base, requirements, commandExecute, execution, includeExecution }) => {
      const reqs: Record<string, unknown>[] = [...requirements];
      const exec: Record<string, unknown> = { ...execution };
      if (commandExecute) {
        exec.command = commandExecute.command;
        reqs.push({
          kind: COMMAND_EXECUTE,
          match: commandExecute.command,
          description: commandExecute.description,
          grantClass: COMMAND_START_GRANT,
          grantTarget: commandExecute.command,
        });
      }
      const wantsGrant = reqs.some((r) => r.grantClass !== undefined);
      return { ...base, ...(wantsGrant || includeExecution ? exec : {}), requirements: reqs } as unknown as PermissionRequest;
    });

  // --- headers -----------------------------------------------------------------------

  const causeArb = obj(
    {},
    {
      commandId: uuidArb,
      eventId: uuidArb,
      toolExecutionId: uuidArb,
      agency: fc.constantFrom("machine", "user"),
      sessionId: uuidArb,
      loopId: uuidArb,
      turnId: uuidArb,
      stepId: uuidArb,
    },
  );

  type Coords = { loopId?: string; turnId?: string; stepId?: string };

  /** Coordinates that satisfy `identity`; `fullQuartet` forces all three (loop-resolved gates). */
  function coordinatesArb(def: EventTypeDefinition, fullQuartet = false): fc.Arbitrary<Coords> {
    const one = (c: "loopId" | "turnId" | "stepId") => {
      const p = def.identity[c];
      if (fullQuartet || p === "required") return uuidArb.map((v) => v as string | undefined);
      if (p === "forbidden") return fc.constant(undefined);
      return fc.option(uuidArb, { nil: undefined });
    };
    return fc.record({ loopId: one("loopId"), turnId: one("turnId"), stepId: one("stepId") }).map((c) => {
      const out: Coords = {};
      if (c.loopId) out.loopId = c.loopId;
      if (c.turnId) out.turnId = c.turnId;
      // A step belongs to a turn.
      if (c.stepId && c.turnId) out.stepId = c.stepId;
      return out;
    });
  }

  function headerArb(def: EventTypeDefinition, fullQuartet = false): fc.Arbitrary<Record<string, unknown>> {
    return fc
      .tuple(
        coordinatesArb(def, fullQuartet),
        obj(
          { sessionId: uuidArb, eventId: uuidArb, createdAt: createdAtArb },
          { agentName: txt(limits.name), cause: causeArb, visibility: fc.constantFrom("public", "internal") },
        ),
      )
      .map(([coords, rest]) => ({ ...rest, ...coords }));
  }

  // --- bodies ------------------------------------------------------------------------

  const gateArb = (resolver: "loop" | "session") =>
    obj(
      { id: uuidArb, kind: fc.oneof(fc.constantFrom("harness.permission", "harness.ask_user", "harness.form", "harness.open_url"), txt(limits.name)), resolver: fc.constant(resolver) },
      {
        toolExecutionId: uuidArb,
        title: txt(limits.name),
        prompt: txt(),
        actions: fc.array(txt(limits.name), { minLength: 1, maxLength: 4 }),
      },
    );

  const messagesArb = fc
    .tuple(
      fc.option(
        obj(
          { role: fc.constant("assistant") },
          {
            content: txt(200),
            toolCalls: fc.array(obj({ toolExecutionId: uuidArb, toolName: txt(limits.name) }), { minLength: 1, maxLength: 3 }),
          },
        ),
        { nil: undefined },
      ),
      fc.uniqueArray(
        obj({ role: fc.constant("tool"), toolExecutionId: uuidArb }, { toolName: txt(limits.name), content: txt(200), isError: fc.boolean() }),
        { selector: (m) => m.toolExecutionId, maxLength: 4 },
      ),
    )
    .map(([assistant, tools]) => (assistant ? [assistant, ...tools] : tools))
    .filter((m) => m.length > 0);

  const turnIndexArb = fc.oneof(fc.constant(0), fc.nat({ max: 1000 }), fc.maxSafeNat());

  /** The body (and, for gates, the coordinates) of each built-in type. */
  const bodies: { [T in EventType]: fc.Arbitrary<Record<string, unknown>> } = {
    PermissionRequested: fc.record({ toolExecutionId: uuidArb, request: permissionRequestArb }),
    PermissionDecided: obj(
      { toolExecutionId: uuidArb, effect: fc.constantFrom("approve", "deny") },
      { reason: txt(), subject: txt(), audit: txt() },
    ),
    UserInputRequested: obj(
      { toolExecutionId: uuidArb },
      { question: txt(), choices: fc.uniqueArray(txt(limits.name), { minLength: 1, maxLength: 5 }) },
    ),
    ToolCallStarted: obj({ toolExecutionId: uuidArb }, { toolName: txt(limits.name), summary: txt(limits.summary) }),
    ToolCallCompleted: obj({ toolExecutionId: uuidArb }, { isError: fc.boolean(), resultPreview: txt(limits.resultPreview) }),
    GateOpened: fc.constant({}),
    GateResolved: fc.constant({}),
    StepDone: fc.record({ messages: messagesArb }),
    TurnStarted: obj({}, { turnIndex: turnIndexArb }),
    TurnDone: obj({}, { turnIndex: turnIndexArb }),
    TurnFailed: obj(
      { err: obj({ kind: txt(limits.name) }, { message: txt() }) },
      { turnIndex: turnIndexArb },
    ),
    TurnInterrupted: obj({}, { turnIndex: turnIndexArb, reason: txt() }),
    LoopStarted: fc.constant({}),
    LoopIdle: fc.constant({}),
    SessionStarted: fc.constant({}),
    SessionStopped: obj({}, { reason: txt() }),
  };

  function gateEventArb(type: "GateOpened" | "GateResolved"): fc.Arbitrary<AnyEvent> {
    const def = defaultRegistry.get(type)!;
    return fc.constantFrom("loop" as const, "session" as const).chain((resolver) =>
      fc.tuple(
        headerArb(def, resolver === "loop"),
        type === "GateOpened"
          ? fc.record({ gate: gateArb(resolver) })
          : obj(
              { gateId: uuidArb, resolver: fc.constant(resolver), reason: fc.constantFrom("answered", "policy_response", "abandoned", "owner_closed", "restore_unavailable") },
              { action: txt(limits.name), source: obj({ kind: txt(limits.name) }, { reason: txt() }) },
            ),
      ).map(([header, body]): AnyEvent => ({ type, ...header, ...body })),
    );
  }

  /** A valid event of `type`, as a caller would build it (camelCase, defaults maybe left out). */
  function eventArb(type: EventType): fc.Arbitrary<AnyEvent> {
    if (type === "GateOpened" || type === "GateResolved") return gateEventArb(type);
    const def = defaultRegistry.get(type)!;
    return fc.tuple(headerArb(def), bodies[type]).map(([header, body]): AnyEvent => ({ type, ...header, ...body }));
  }

  return {
    permissionRequestArb,
    eventArb,
    anyEventArb: fc.oneof(...builtInTypes.map(eventArb)),
    enduringEventArb: fc.oneof(...enduringTypes.map(eventArb)),
    ephemeralEventArb: fc.oneof(...ephemeralTypes.map(eventArb)),
  };
}

const thorough = eventArbitraries({ longText: true });
/** Valid events and requests whose text may reach every cap. */
export const { permissionRequestArb, eventArb, anyEventArb, enduringEventArb, ephemeralEventArb } = thorough;
/** The same with short text only: cheap to generate and to decode. */
export const compact: EventArbitraries = eventArbitraries({ longText: false });
