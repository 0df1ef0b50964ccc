/**
 * The typed prepared request a PermissionRequested carries: what the tool wants to do
 * and which requirements it has not met. It is decoded strictly — unknown fields
 * (a smuggled `grant_token`), duplicate keys, trailing data, `null` and broken invariants
 * all fail closed — because a consumer may act on it. It never holds grant tokens or raw
 * tool arguments.
 */
import { z } from "zod";
import { RequestDecodeError } from "../errors.js";
import { isWellFormed, parseStrictJson, StrictJsonError } from "../wire/strict-json.js";
import { fromWire, toWireJson, wireField, WireKeyError } from "../wire/wire.js";
import { isSet, isTrimmedText } from "./text.js";

/** The grant class of an approved `command.execute` requirement. */
export const COMMAND_START_GRANT = "command.start.v1";
/** The requirement kind of running a command; its grant is COMMAND_START_GRANT on the command itself. */
export const COMMAND_EXECUTE = "command.execute";

/** Another grant that would also meet a requirement (same kind and grant; another match). */
export interface PermissionCandidate {
  kind: string;
  match: string;
  description: string;
  grantClass?: string | undefined;
  grantTarget?: string | undefined;
}

/** One requirement the tool has not met: what it needs (`kind`, e.g. fs.read), where (`match`), said for a person. */
export interface PermissionRequirement {
  kind: string;
  /** Written even when empty, as the runtime writes it. */
  scope?: string | undefined;
  match: string;
  description: string;
  grantClass?: string | undefined;
  grantTarget?: string | undefined;
  candidates?: PermissionCandidate[] | undefined;
}

/**
 * A request as a subscriber reads it: `requirements` always a list. Every other field may
 * be absent: a pure tool asks with no requirements, and the runtime writes such a request
 * as `{}` (so `toolName` too may be absent).
 */
export interface PermissionRequest {
  toolName?: string | undefined;
  summary?: string | undefined;
  /** The runtime's own execution id: free text, not necessarily a UUID. */
  executionId?: string | undefined;
  command?: string | undefined;
  workingDirectory?: string | undefined;
  expiresAtUnixMilli?: number | undefined;
  requirements: PermissionRequirement[];
}

/** A request as a writer gives it: `requirements` may be left out (none). */
export interface PermissionRequestInput extends Omit<PermissionRequest, "requirements"> {
  requirements?: PermissionRequirement[] | undefined;
}

// The checking side of the interfaces above (test/unit/public-types.test.ts keeps them the same).
export const candidateSchema = z.strictObject({
  kind: z.string(),
  match: z.string(),
  description: z.string(),
  grantClass: z.string().optional(),
  grantTarget: z.string().optional(),
});

export const requirementSchema = z.strictObject({
  kind: z.string(),
  /** Written even when empty, as the runtime writes it. */
  scope: wireField(z.string().optional(), { always: true }),
  match: z.string(),
  description: z.string(),
  grantClass: z.string().optional(),
  grantTarget: z.string().optional(),
  candidates: z.array(candidateSchema).optional(),
});

/**
 * Every field may be absent: a pure tool asks with no requirements, and the runtime
 * writes such a request as `{}`.
 */
const requestShape = z.strictObject({
  toolName: z.string().optional(),
  summary: z.string().optional(),
  /** The runtime's own execution id: free text, not necessarily a UUID. */
  executionId: z.string().optional(),
  command: z.string().optional(),
  workingDirectory: z.string().optional(),
  expiresAtUnixMilli: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  /** Absent on the wire (a pure tool's `{}`) reads as none: always a list to a subscriber. */
  requirements: z.array(requirementSchema).default([]),
});


type Path = (string | number)[];
type Issue = (path: Path, message: string) => void;

function checkTrimmed(issue: Issue, path: Path, v: string | undefined, required: boolean): void {
  if (!isSet(v)) {
    if (required) issue(path, "must not be empty");
  } else if (!isTrimmedText(v)) issue(path, "must have no surrounding white space and no NUL");
}

const grantOf = (g: { grantClass?: string | undefined; grantTarget?: string | undefined }) => `${g.grantClass ?? ""}\u0000${g.grantTarget ?? ""}`;

function checkRequirement(issue: Issue, req: z.output<typeof requestShape>, r: PermissionRequirement, i: number): void {
  const at = (...p: Path): Path => ["requirements", i, ...p];
  checkTrimmed(issue, at("kind"), r.kind, true);
  checkTrimmed(issue, at("match"), r.match, true);
  checkTrimmed(issue, at("description"), r.description, true);
  checkTrimmed(issue, at("scope"), r.scope, false);
  checkTrimmed(issue, at("grantClass"), r.grantClass, false);
  checkTrimmed(issue, at("grantTarget"), r.grantTarget, false);
  if (isSet(r.grantClass) !== isSet(r.grantTarget)) issue(at("grantClass"), "grant class and grant target must be set together");
  if (r.kind === COMMAND_EXECUTE) {
    if (isSet(r.scope)) issue(at("scope"), `must be empty for ${COMMAND_EXECUTE}`);
    if (r.grantClass !== COMMAND_START_GRANT) issue(at("grantClass"), `must be ${COMMAND_START_GRANT} for ${COMMAND_EXECUTE}`);
    if (r.grantTarget !== r.match || r.match !== req.command) issue(at("grantTarget"), "must equal the requirement's match and the request's command");
  }
  const candidates = r.candidates ?? [];
  const grant = grantOf(r);
  const seen = candidates.length > 1 ? new Set<string>() : undefined;
  for (let j = 0; j < candidates.length; j++) {
    const c = candidates[j]!;
    checkTrimmed(issue, at("candidates", j, "match"), c.match, true);
    if (!isSet(c.description)) issue(at("candidates", j, "description"), "must not be empty");
    if (c.kind !== r.kind) issue(at("candidates", j, "kind"), "must equal its requirement's kind");
    if (grantOf(c) !== grant) issue(at("candidates", j, "grantClass"), "must carry its requirement's grant exactly");
    if (seen) {
      const key = `${c.kind}\u0000${c.match}\u0000${grantOf(c)}`;
      if (seen.has(key)) issue(at("candidates", j), "duplicates an earlier candidate");
      seen.add(key);
    }
  }
}

/** The runtime's request validator (tool.ValidateRequest), rule for rule. */
export const permissionRequestSchema = requestShape.superRefine((req, ctx) => {
  const issue: Issue = (path, message) => ctx.addIssue({ code: "custom", path, message });
  checkTrimmed(issue, ["summary"], req.summary, false);
  const requirements = req.requirements ?? [];
  const seen = requirements.length > 1 ? new Set<string>() : undefined;
  let wantsGrant = false;
  for (let i = 0; i < requirements.length; i++) {
    const r = requirements[i]!;
    checkRequirement(issue, req, r, i);
    wantsGrant ||= isSet(r.grantClass) || isSet(r.grantTarget);
    if (seen) {
      const key = `${r.kind}\u0000${r.scope ?? ""}\u0000${r.match}\u0000${grantOf(r)}`;
      if (seen.has(key)) issue(["requirements", i], "duplicates an earlier requirement");
      seen.add(key);
    }
  }
  if (wantsGrant) {
    for (const field of ["executionId", "command", "workingDirectory"] as const) {
      if (!isSet(req[field])) issue([field], "must be set when a requirement asks for a grant");
    }
    if (req.expiresAtUnixMilli === undefined) issue(["expiresAtUnixMilli"], "must be set when a requirement asks for a grant");
    checkTrimmed(issue, ["command"], req.command, false);
    checkTrimmed(issue, ["workingDirectory"], req.workingDirectory, false);
  }
});


function firstIssue(error: z.ZodError): RequestDecodeError {
  const issue = error.issues[0]!;
  const field = issue.path.join(".");
  return new RequestDecodeError(field, issue.message, { cause: error });
}

/** Checks a request object (camelCase) against the schema and its invariants. */
export function validatePermissionRequest(request: unknown): PermissionRequest {
  if (request === null || typeof request !== "object" || Array.isArray(request)) {
    throw new RequestDecodeError("", "must be an object");
  }
  const result = permissionRequestSchema.safeParse(request);
  if (!result.success) throw firstIssue(result.error);
  return result.data;
}

/** The request as the runtime writes it (snake_case, its field order, zero values omitted). */
export function encodePermissionRequest(request: PermissionRequestInput): string {
  return toWireJson(permissionRequestSchema, validatePermissionRequest(request));
}

/** The strict decoder: wire JSON in, a valid request out, or a RequestDecodeError. */
export function decodePermissionRequest(input: string | Uint8Array): PermissionRequest {
  let text: string;
  try {
    text = typeof input === "string" ? input : new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(input);
  } catch (e) {
    throw new RequestDecodeError("", "is not valid UTF-8", { cause: e });
  }
  // A lone surrogate is in no UTF-8 text: the string stands for no bytes Go could read.
  if (!isWellFormed(text)) throw new RequestDecodeError("", "is not valid UTF-8 (a lone surrogate)");
  let json: unknown;
  try {
    json = parseStrictJson(text);
  } catch (e) {
    if (e instanceof StrictJsonError) throw new RequestDecodeError("", e.message, { cause: e });
    throw e;
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new RequestDecodeError("", "must be a JSON object");
  }
  return validatePermissionRequest(requestFromWire(json));
}

/** Wire object → camelCase request, refusing keys the request does not define. */
export function requestFromWire(json: unknown): unknown {
  try {
    return fromWire(permissionRequestSchema, json);
  } catch (e) {
    if (e instanceof WireKeyError) throw new RequestDecodeError(e.path, e.message.slice(e.path.length + 1), { cause: e });
    throw e;
  }
}
