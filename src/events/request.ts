/**
 * The typed prepared request a PermissionRequested carries: what the tool wants to do
 * and which requirements it has not met. It is decoded strictly — unknown fields
 * (a smuggled `grant_token`), duplicate keys, trailing data, `null` and broken invariants
 * all fail closed — because a consumer may act on it. It never holds grant tokens or raw
 * tool arguments.
 */
import { z } from "zod";
import { RequestDecodeError } from "../errors.js";
import { parseStrictJson, StrictJsonError } from "../codec/strict-json.js";
import { fromWire, toWireJson, UnknownWireKeyError } from "../codec/wire.js";
import { uuidSchema } from "./ids.js";
import { limits, text } from "./text.js";

/** Text the Go runtime stores normalized: trimmed and NFC. */
function normalized(max: number) {
  return text(max).refine((v) => v === v.trim() && v === v.normalize("NFC"), "must be trimmed and NFC-normalized");
}

/** The grant class of an approved `command.execute` requirement. */
export const COMMAND_START_GRANT = "command.start.v1";
export const COMMAND_EXECUTE = "command.execute";

const candidateSchema = z.strictObject({
  kind: normalized(limits.name),
  match: normalized(limits.text),
  description: normalized(limits.text),
  grantClass: normalized(limits.name).optional(),
  grantTarget: normalized(limits.text).optional(),
});

const requirementSchema = z.strictObject({
  kind: normalized(limits.name),
  scope: normalized(limits.name).optional(),
  match: normalized(limits.text),
  description: normalized(limits.text),
  grantClass: normalized(limits.name).optional(),
  grantTarget: normalized(limits.text).optional(),
  candidates: z.array(candidateSchema).min(1).max(limits.candidates).optional(),
});

export type PermissionCandidate = z.output<typeof candidateSchema>;
export type PermissionRequirement = z.output<typeof requirementSchema>;

const requestShape = z.strictObject({
  toolName: normalized(limits.name),
  summary: normalized(limits.summary).optional(),
  executionId: uuidSchema.optional(),
  command: normalized(limits.text).optional(),
  workingDirectory: normalized(limits.text).optional(),
  expiresAtUnixMilli: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  requirements: z.array(requirementSchema).min(1).max(limits.requirements),
});

type Grant = { grantClass?: string | undefined; grantTarget?: string | undefined };
const hasGrant = (g: Grant) => g.grantClass !== undefined || g.grantTarget !== undefined;

export const permissionRequestSchema = requestShape.superRefine((req, ctx) => {
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: "custom", path, message });
  const halfGrant = (g: Grant) => (g.grantClass === undefined) !== (g.grantTarget === undefined);
  const seen = new Set<string>();
  let wantsGrant = false;
  req.requirements.forEach((r, i) => {
    if (halfGrant(r)) issue(["requirements", i, "grantClass"], "grant class and grant target must be set together");
    wantsGrant ||= hasGrant(r);
    const key = JSON.stringify([r.kind, r.scope ?? "", r.match, r.grantClass ?? "", r.grantTarget ?? ""]);
    if (seen.has(key)) issue(["requirements", i], "duplicates an earlier requirement");
    seen.add(key);
    if (r.kind === COMMAND_EXECUTE) {
      if (r.scope !== undefined) issue(["requirements", i, "scope"], `must be empty for ${COMMAND_EXECUTE}`);
      if (r.grantClass !== COMMAND_START_GRANT) issue(["requirements", i, "grantClass"], `must be ${COMMAND_START_GRANT} for ${COMMAND_EXECUTE}`);
      if (r.grantTarget !== r.match || r.match !== req.command) {
        issue(["requirements", i, "grantTarget"], "must equal the requirement's match and the request's command");
      }
    }
    const seenCandidates = new Set<string>();
    r.candidates?.forEach((c, j) => {
      const path = ["requirements", i, "candidates", j];
      if (halfGrant(c)) issue([...path, "grantClass"], "grant class and grant target must be set together");
      if (c.kind !== r.kind) issue([...path, "kind"], "must equal its requirement's kind");
      const ckey = JSON.stringify([c.kind, c.match, c.grantClass ?? "", c.grantTarget ?? ""]);
      if (seenCandidates.has(ckey)) issue(path, "duplicates an earlier candidate");
      seenCandidates.add(ckey);
    });
  });
  if (wantsGrant) {
    for (const field of ["executionId", "command", "workingDirectory", "expiresAtUnixMilli"] as const) {
      if (req[field] === undefined) issue([field], "must be set when a requirement asks for a grant");
    }
  }
});

export type PermissionRequest = z.output<typeof permissionRequestSchema>;

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

/** The request as the wire carries it (snake_case, zero values omitted). */
export function encodePermissionRequest(request: PermissionRequest): string {
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
    if (e instanceof UnknownWireKeyError) throw new RequestDecodeError(e.path, "is not a known field", { cause: e });
    throw e;
  }
}
