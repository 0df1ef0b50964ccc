/**
 * fast-check arbitraries for valid events of every built-in type, in the Go runtime's
 * model: canonical uuids, coordinates that follow each identity profile, free text
 * (anything well-formed, "" excluded since it means absent), RFC 3339 times with offsets,
 * optional fields present or absent. Values are the canonical ones (no zero values that
 * the wire drops), so a decoded event deep-equals the validated one. Reusable by any
 * property or fuzz test.
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
import { isTrimmedText } from "../../src/events/text.js";

export type AnyEvent = Record<string, unknown> & { type: string };

// --- building blocks -------------------------------------------------------------

/** An object with `required` keys always present and `optional` keys present or absent. */
function obj<R extends Record<string, fc.Arbitrary<unknown>>, O extends Record<string, fc.Arbitrary<unknown>>>(
  required: R,
  optional: O = {} as O,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({ ...required, ...optional }, { requiredKeys: Object.keys(required) as never[] });
}

/** Like `obj`, never empty (an empty object is absent on the wire). */
function nonEmpty(a: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return a.filter((o) => Object.keys(o).length > 0);
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

const MIN_MS = -62135596800000 + 86_400_000; // 0001-01-02T00:00:00Z: after Go's zero time
const MAX_MS = 253402300799999 - 86_400_000; // 9999-12-30: an offset keeps the year in four digits

/**
 * RFC 3339 as Go's time.Parse reads it: no fraction or any number of digits after '.' or
 * ',' (trailing zeros and more than nine included), `Z` or any offset (+00:00 and -00:00
 * included; the runtime stamps local time). Validation writes it in Go's form.
 */
export const createdAtArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: MIN_MS, max: MAX_MS }),
    fc.option(fc.tuple(fc.constantFrom(".", ".", ".", ","), fc.stringMatching(/^[0-9]{1,12}$/)), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })), { nil: undefined }),
  )
  .map(([ms, fraction, offset]) => {
    const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
    const zone = offset === undefined ? "Z" : `${offset[0]}${String(offset[1]).padStart(2, "0")}:${String(offset[2]).padStart(2, "0")}`;
    return `${iso.slice(0, 19)}${fraction === undefined ? "" : `${fraction[0]}${fraction[1]}`}${zone}`;
  });

/** Characters that stress escaping and code-unit counting: Go escapes <, >, &, U+2028 and U+2029. */
const TRICKY = [
  "a", "Z", "0", " ", "\t", "\n", "\r", "\u0000", "\u001b", "\u007f", ".", "/", "-", "_", "é", "e\u0301", "A\u030a", "ß", "中", "😀", "👍🏽", "🇫🇷",
  "\u2028", "\u2029", "\u00a0", "\u0085", "<", ">", "&", '"', "\\", "'", "\u0080", "\ufeff", "\uffff", "\u{10ffff}",
];

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (s: string) => !LONE_SURROGATE.test(s);

const textCandidates = (max: number, long: boolean) =>
  fc.oneof(
    { arbitrary: fc.string({ unit: fc.constantFrom(...TRICKY), minLength: 1, maxLength: Math.min(max, 24) }), weight: 4 },
    { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: Math.min(max, 24) }), weight: 3 },
    { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: Math.min(max, 24) }), weight: 1 },
    // Long text: the journal's text fields have no cap of their own.
    ...(long ? [{ arbitrary: fc.string({ unit: "grapheme-ascii", minLength: max - 2, maxLength: max }), weight: 1 }] : []),
  );

/** The longest text the thorough arbitraries generate. */
const LONG = 4096;

/** Non-empty free text of at most `max` UTF-16 code units: anything well-formed, control characters included. */
export function textArb(max: number = LONG, long = true): fc.Arbitrary<string> {
  return textCandidates(max, long).filter((s) => s.length >= 1 && s.length <= max && wellFormed(s));
}

/** Like textArb, and trimmed with no NUL, as the runtime's request validator wants it. */
export function trimmedTextArb(max: number = LONG, long = true): fc.Arbitrary<string> {
  return textCandidates(max, long)
    .map((s) => s.trim())
    .filter((s) => s.length >= 1 && s.length <= max && wellFormed(s) && isTrimmedText(s));
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
 * Builds the event arbitraries. `longText` lets text fields grow long (thorough, but a
 * request then weighs several KB); without it every text field stays short (for fuzz
 * corpora, where size only costs time).
 */
export function eventArbitraries({ longText }: { longText: boolean }): EventArbitraries {
  const txt = (max: number = longText ? LONG : 64) => textArb(max, longText);
  const short = () => textArb(40, false);
  const ttxt = (max: number = longText ? LONG : 64) => trimmedTextArb(max, longText);
  const tshort = () => trimmedTextArb(40, false);

  // --- the permission request ----------------------------------------------------------

  const grantArb = fc.option(fc.record({ grantClass: tshort(), grantTarget: ttxt() }), { nil: undefined });

  const candidateKey = (c: Record<string, unknown>) => JSON.stringify([c.kind, c.match, c.grantClass ?? "", c.grantTarget ?? ""]);
  const requirementKey = (r: Record<string, unknown>) => JSON.stringify([r.kind, r.scope ?? "", r.match, r.grantClass ?? "", r.grantTarget ?? ""]);

  /** Candidates carry their requirement's kind and grant exactly; their description is any non-empty text. */
  const candidatesArb = (kind: string, grant: Record<string, unknown>) =>
    fc.uniqueArray(
      obj({ match: ttxt(), description: txt() }).map((c) => ({ kind, ...c, ...grant })),
      { selector: candidateKey, minLength: 1, maxLength: 3 },
    );

  const plainRequirementArb = tshort()
    .filter((k) => k !== COMMAND_EXECUTE)
    .chain((kind) =>
      fc.tuple(obj({ match: ttxt(), description: ttxt() }, { scope: tshort() }), grantArb).chain(([r, g]) =>
        fc
          .option(candidatesArb(kind, g ?? {}), { nil: undefined })
          .map((candidates) => ({ kind, ...r, ...g, ...(candidates ? { candidates } : {}) })),
      ),
    );

  /** A valid PermissionRequest: distinct requirements, candidates of their kind, grant fields when a grant is asked. */
  const permissionRequestArb: fc.Arbitrary<PermissionRequest> = fc
    .record({
      // toolName is free text to the runtime's validator: untrimmed is fine.
      base: obj({}, { toolName: short(), summary: ttxt() }),
      requirements: fc.uniqueArray(plainRequirementArb, { selector: requirementKey, minLength: 0, maxLength: 4 }),
      commandExecute: fc.option(fc.record({ command: ttxt(), description: ttxt() }), { nil: undefined }),
      execution: fc.record({
        // The runtime's own execution id: free text, not necessarily a UUID.
        executionId: fc.oneof(uuidArb, tshort()),
        command: ttxt(),
        workingDirectory: ttxt(),
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
      return {
        ...base,
        ...(wantsGrant || includeExecution ? exec : {}),
        ...(reqs.length > 0 ? { requirements: reqs } : {}),
      } as unknown as PermissionRequest;
    });

  // --- headers -----------------------------------------------------------------------

  const causeArb = nonEmpty(
    obj(
      {},
      {
        commandId: uuidArb,
        eventId: uuidArb,
        toolExecutionId: uuidArb,
        // AGENCY_MACHINE (0, the wire's zero) or AGENCY_USER (1); the runtime keeps other values.
        agency: fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: 0, max: 255 })),
        sessionId: uuidArb,
        loopId: uuidArb,
        turnId: uuidArb,
        stepId: uuidArb,
      },
    ),
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
          { sessionId: uuidArb, eventId: uuidArb },
          { createdAt: createdAtArb, agentName: short(), cause: causeArb, visibility: fc.constantFrom("public", "internal") },
        ),
      )
      .map(([coords, rest]) => ({ ...rest, ...coords }));
  }

  // --- content -----------------------------------------------------------------------

  // Keys in one letter case: the reader refuses two keys differing only in letter case at
  // any level, raw JSON included (codec.test.ts pins what the writer does with them).
  const keyArb = fc.string({ unit: fc.constantFrom("a", "b", "c", "x", "y", "_", "1", "é"), minLength: 1, maxLength: 8 });
  const inputArb = fc.dictionary(keyArb, fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 3 });
  const leafBlockArb = fc.oneof(
    fc.record({ type: fc.constant("text"), text: txt(200) }),
    fc.record({ type: fc.constant("refusal"), text: short() }),
    obj({ type: fc.constant("thinking"), thinking: txt(200) }, { signature: short(), signatureFormat: short() }),
    obj(
      { type: fc.constant("tool_use"), id: short(), name: short(), input: inputArb },
      { providerState: fc.dictionary(keyArb, fc.string(), { minKeys: 1, maxKeys: 2 }), providerStateFormat: short() },
    ),
  );
  const toolResultBlockArb = obj(
    { type: fc.constant("tool_result"), toolUseId: short() },
    { content: fc.array(leafBlockArb, { minLength: 1, maxLength: 2 }), isError: fc.constant(true) },
  );
  const blocksArb = fc.array(fc.oneof({ arbitrary: leafBlockArb, weight: 4 }, { arbitrary: toolResultBlockArb, weight: 1 }), { minLength: 1, maxLength: 4 });
  const count = fc.integer({ min: 1, max: 1_000_000 });
  // Any counts: usage is recorded verbatim (reasoning may exceed output, as providers report it).
  const messageUsageArb = nonEmpty(obj({}, { inputTokens: count, outputTokens: count, cacheReadTokens: count, cacheCreationTokens: count, reasoningTokens: count }));
  const zeroOr = fc.oneof(fc.constant(0), count);
  /** A turn's usage: all five counts are written, so all five are present. */
  const turnUsageArb = fc.record({ inputTokens: zeroOr, outputTokens: zeroOr, cacheReadTokens: zeroOr, cacheCreationTokens: zeroOr, reasoningTokens: zeroOr });

  const messagesArb = fc
    .tuple(
      obj({ role: fc.constant("assistant") }, { blocks: blocksArb, usage: messageUsageArb }),
      fc.array(obj({ role: fc.constant("tool") }, { toolUseId: short(), blocks: blocksArb, isError: fc.constant(true) }), { maxLength: 4 }),
    )
    .map(([assistant, tools]) => [assistant, ...tools]);

  /** One capture per tool result, as the runtime records them: exact, truncated, or bounded below. */
  const captureArb = (toolUseId: string) =>
    fc.tuple(uuidArb, count, count, fc.constantFrom("utf-8", "binary"), fc.constantFrom("capture_ceiling", "source_limit"), short().filter((s) => s !== ""), fc.nat(2)).map(
      ([toolExecutionId, captured, more, encoding, truncationReason, objectId, shape]) =>
        shape === 0
          ? { toolExecutionId, toolUseId, capturedBytes: captured, originalBytes: captured, encoding }
          : {
              toolExecutionId,
              toolUseId,
              reference: { objectId },
              capturedBytes: captured,
              ...(shape === 1 ? { originalBytes: captured + more } : { originalBytesLowerBound: captured + more }),
              truncated: true,
              truncationReason,
              encoding,
            },
    );
  const capturedStepArb = fc
    .tuple(
      obj({ role: fc.constant("assistant") }, { blocks: blocksArb, usage: messageUsageArb }),
      fc.uniqueArray(short().filter((s) => s !== ""), { minLength: 1, maxLength: 3 }),
    )
    .chain(([assistant, ids]) =>
      fc.tuple(...ids.map(captureArb)).map((captures) => ({
        messages: [assistant, ...ids.map((toolUseId) => ({ role: "tool", toolUseId }))],
        captures,
      })),
    )
    .filter((s) => new Set(s.captures.map((c) => c.toolExecutionId)).size === s.captures.length);

  /** Runtime identifiers (the runtime's rule): a `team/name` path, or one segment for agent-runtime names. */
  const identifierArb = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}(?:\/[a-z0-9][a-z0-9._-]{0,20})?$/);
  const agentIdArb = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/);
  const manifestArb = obj(
    { schemaVersion: fc.constant(3) },
    {
      agentKind: short(),
      topologyRev: short(),
      modelId: short(),
      systemPromptRev: short(),
      tools: fc.array(obj({ name: short().filter((s) => s !== "") }, { inputSchemaRev: short(), outputSchemaRev: short() }), { maxLength: 3 }),
      runtimeSkills: fc.constant(true),
      workspaceRoot: short(),
      workspaceTrust: short(),
      agentAdapter: short(),
      permissionPosture: short(),
      nativePermissionPolicyRev: short(),
      permissionStrictness: fc.integer({ min: 1, max: 255 }),
      permissionReviewConfigured: fc.constant(true),
      permissionReviewPolicyRev: short(),
      confinementRev: short(),
      confinementStrictness: fc.integer({ min: 1, max: 255 }),
      externalCapabilityRev: short(),
      hookPolicyRev: short(),
      runtimeProfile: identifierArb,
      runtimeCatalogRev: identifierArb,
      runtimeIdentityRev: identifierArb,
      appFields: fc.dictionary(keyArb, short(), { maxKeys: 3 }),
    },
  );

  const turnIndexArb = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 }), fc.maxSafeNat());

  // --- gates -------------------------------------------------------------------------

  const gateArb = (resolver: string) =>
    obj(
      { id: uuidArb, resolver: fc.constant(resolver) },
      {
        kind: fc.oneof(fc.constantFrom("harness.permission", "harness.ask_user", "harness.form", "harness.open_url"), short()),
        blocks: fc.constantFrom("tool_call", "session"),
        effect: fc.constantFrom("resume", "initiate", "control"),
        criticality: fc.constantFrom("critical", "non_critical"),
        subject: nonEmpty(obj({}, { toolExecutionId: uuidArb, toolUseId: short(), turnId: uuidArb, stepId: uuidArb, inputId: uuidArb })),
        prompt: nonEmpty(
          obj(
            {},
            {
              title: short(),
              body: txt(200),
              controls: fc.array(nonEmpty(obj({}, { action: short(), label: short() })), { minLength: 1, maxLength: 3 }),
              origin: short(),
            },
          ),
        ),
        restorable: fc.constant(true),
      },
    );

  const auditArb = fc.oneof(
    fc.record({
      kind: fc.constant("permission"),
      data: obj({}, { requirementDescriptions: fc.array(txt(80), { minLength: 1, maxLength: 3 }), candidateDescriptions: fc.array(txt(80), { minLength: 1, maxLength: 3 }) }),
    }),
    fc.record({ kind: fc.constant("ask_user"), data: obj({}, { answerPreview: txt(80) }) }),
    fc.record({
      kind: fc.constant("form"),
      data: obj({}, { values: fc.dictionary(keyArb, txt(40), { minKeys: 1, maxKeys: 3 }) }),
    }),
  );

  // --- loops and sessions --------------------------------------------------------------

  /** A valid agent runtime and the model runtime it needs (none for a harness-managed one). */
  const loopRuntimeArb = fc.oneof(
    fc.constant({}),
    fc.record({ runtime: fc.record({ key: fc.record({ provider: short(), model: short() }) }) }),
    fc.record({
      agentRuntime: fc.record({
        harness: agentIdArb,
        profile: identifierArb,
        credentialMode: fc.constant("native-auth"),
        source: fc.constant("native"),
        selectionKind: fc.constant("harness-managed"),
      }),
    }),
    fc.record({
      agentRuntime: fc.record({
        harness: agentIdArb,
        profile: identifierArb,
        credentialMode: fc.constant("gateway-backed"),
        source: fc.constant("gateway"),
        selectionKind: fc.constant("explicit"),
        modelAlias: agentIdArb,
      }),
      runtime: fc.record({ key: fc.record({ provider: short(), model: short() }), effort: fc.constantFrom("low", "high", "max") }),
    }),
  );

  /** The body (and, for gates, the coordinates) of each built-in type. */
  const bodies: { [T in EventType]: fc.Arbitrary<Record<string, unknown>> } = {
    PermissionRequested: fc.record({ toolExecutionId: uuidArb, request: permissionRequestArb }),
    PermissionDecided: obj({ toolExecutionId: uuidArb }, { effect: fc.constantFrom("approve", "deny"), reason: txt(), subject: txt(), audit: txt() }),
    UserInputRequested: obj(
      { toolExecutionId: uuidArb },
      // Any strings, the empty one and repeats included: the runtime checks none.
      { question: txt(), choices: fc.array(fc.oneof(short(), fc.constant("")), { minLength: 1, maxLength: 5 }) },
    ),
    ToolCallStarted: obj({ toolExecutionId: uuidArb }, { toolName: short(), summary: txt(limits.summary) }),
    ToolCallCompleted: obj({ toolExecutionId: uuidArb }, { isError: fc.boolean(), resultPreview: txt(limits.resultPreview) }),
    GateOpened: fc.constant({}),
    GateResolved: fc.constant({}),
    StepDone: fc.oneof(fc.record({ messages: messagesArb }), capturedStepArb),
    TurnStarted: obj({}, { turnIndex: turnIndexArb, message: fc.record({ role: fc.constant("user"), blocks: blocksArb }) }),
    TurnDone: obj({}, { turnIndex: turnIndexArb, message: obj({ role: fc.constant("assistant"), blocks: blocksArb }, { usage: messageUsageArb }), usage: turnUsageArb }),
    TurnFailed: obj(
      // A detail only under the explicit flag, as the runtime writes it.
      { err: fc.oneof(fc.record({ kind: short(), message: txt() }), obj({ kind: short(), message: txt(), modelFacing: fc.constant(true) }, { modelFacingDetail: txt() })) },
      { turnIndex: turnIndexArb },
    ),
    TurnInterrupted: obj({}, { turnIndex: turnIndexArb }),
    LoopStarted: fc
      .tuple(loopRuntimeArb, obj({}, { parentToolUseId: short(), initialMode: short(), initialRequestId: uuidArb, displayName: short(), description: txt() }))
      .map(([r, rest]) => ({ ...r, ...rest })),
    LoopIdle: fc.constant({}),
    SessionStarted: obj(
      {},
      {
        config: nonEmpty(
          obj({}, { topologyRev: short(), agentKind: short(), modelId: short(), runtimeSkills: fc.constant(true), nativePermissionPolicyRev: short(), externalCapabilityRev: short(), runtimeProfile: short(), runtimeCatalogRev: short(), runtimeIdentityRev: short() }),
        ),
        manifest: manifestArb,
      },
    ),
    SessionIdle: fc.constant({}),
    SessionStopped: fc.constant({}),
  };

  function gateEventArb(type: "GateOpened" | "GateResolved"): fc.Arbitrary<AnyEvent> {
    const def = defaultRegistry.get(type)!;
    // Any resolver but "session" needs the full quartet, "loop" or one the runtime does not know.
    return fc.oneof(fc.constantFrom("loop", "session"), short()).chain((resolver) =>
      fc
        .tuple(
          headerArb(def, resolver !== "session"),
          type === "GateOpened"
            ? fc.record({ gate: gateArb(resolver) })
            : obj(
                { gateId: uuidArb, resolver: fc.constant(resolver) },
                {
                  reason: fc.constantFrom("answered", "policy_response", "abandoned", "owner_closed", "restore_unavailable"),
                  action: short(),
                  source: nonEmpty(obj({}, { kind: short(), reason: txt() })),
                  audit: auditArb,
                },
              ),
        )
        .map(([header, body]): AnyEvent => ({ type, ...header, ...body })),
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
/** Valid events and requests whose text may be long. */
export const { permissionRequestArb, eventArb, anyEventArb, enduringEventArb, ephemeralEventArb } = thorough;
/** The same with short text only: cheap to generate and to decode. */
export const compact: EventArbitraries = eventArbitraries({ longText: false });
