/**
 * One Go ledger envelope, read as harness `pkg/sessionstore` (envelope.go, decodeEnvelope)
 * reads it: `encoding/json` into `{V int, Kind string, ID string, Body []byte}`, then the
 * version must be 1 and the kind a known one. So, as Go: keys match their field in any
 * letter case and a later key wins; unknown keys are ignored; `null` leaves a field zero
 * (so `"v":null` is version 0, refused); `body` is standard base64 with padding (Go's
 * decoder skips CR and LF), its bytes kept exactly. A top-level `null` is an empty
 * envelope (version 0, refused).
 */

/** The kinds Go's envelope validation accepts (the later private ones included: never copied). */
export const GO_KINDS = ["event", "command", "fence", "blobptr", "gate_prepared", "command_application", "command_disposition"] as const;
export type GoKind = (typeof GO_KINDS)[number];

export interface GoEnvelope {
  readonly v: number;
  readonly kind: GoKind;
  readonly id: string;
  readonly body: Uint8Array;
}

export type EnvelopeResult = { readonly ok: true; readonly envelope: GoEnvelope } | { readonly ok: false; readonly reason: string };

const STD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const utf8 = new TextDecoder("utf-8");

/** Go's `[]byte` from a JSON string: standard base64, padded, CR and LF skipped. */
export function goBase64(text: string): Uint8Array | undefined {
  const s = text.replace(/[\r\n]/g, "");
  if (s.length % 4 !== 0 || !STD_BASE64.test(s)) return undefined;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  if (s.slice(0, s.length - pad).includes("=")) return undefined;
  const bytes = Buffer.from(s, "base64");
  // Go's strict decoder refuses non-zero trailing bits; Node's drops them: compare back.
  if (bytes.toString("base64") !== s) return undefined;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The field a JSON key fills, as encoding/json matches it (exact, else ASCII case-folded). */
function fieldOf(key: string): "v" | "kind" | "id" | "body" | undefined {
  const k = key.toLowerCase();
  return k === "v" || k === "kind" || k === "id" || k === "body" ? k : undefined;
}

/** Decodes one stored ledger message as Go's reader does; a refusal says why, as Go would. */
export function decodeGoEnvelope(data: Uint8Array): EnvelopeResult {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(data));
  } catch (e) {
    return { ok: false, reason: `decode: ${(e as Error).message}` };
  }
  if (json !== null && (typeof json !== "object" || Array.isArray(json))) return { ok: false, reason: `decode: cannot unmarshal ${Array.isArray(json) ? "array" : typeof json} into an envelope` };
  let v = 0;
  let kind = "";
  let id = "";
  let body: Uint8Array = new Uint8Array(0);
  for (const [key, value] of Object.entries((json ?? {}) as Record<string, unknown>)) {
    const field = fieldOf(key);
    if (field === undefined || value === null) continue;
    if (field === "v") {
      if (typeof value !== "number" || !Number.isSafeInteger(value)) return { ok: false, reason: `decode: v ${JSON.stringify(value)} is not an int` };
      v = value;
    } else if (field === "body") {
      if (typeof value !== "string") return { ok: false, reason: "decode: body is not a base64 string" };
      const b = goBase64(value);
      if (b === undefined) return { ok: false, reason: "decode: body is not standard base64" };
      body = b;
    } else {
      if (typeof value !== "string") return { ok: false, reason: `decode: ${field} is not a string` };
      if (field === "kind") kind = value;
      else id = value;
    }
  }
  if (v !== 1) return { ok: false, reason: `unsupported version ${v}` };
  if (!(GO_KINDS as readonly string[]).includes(kind)) return { ok: false, reason: `unknown kind ${JSON.stringify(kind)}` };
  return { ok: true, envelope: { v, kind: kind as GoKind, id, body } };
}

/** A blob pointer's body, read as Go's decodeBlobPointer reads it (`{key, size, sha256}`). */
export interface BlobPointer {
  readonly key: string;
  readonly size: number;
  readonly sha256: string;
}

export function decodeBlobPointer(body: Uint8Array): BlobPointer | string {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch (e) {
    return `decode blobptr: ${(e as Error).message}`;
  }
  if (json === null) return { key: "", size: 0, sha256: "" };
  if (typeof json !== "object" || Array.isArray(json)) return "decode blobptr: not an object";
  let key = "";
  let size = 0;
  let sha256 = "";
  for (const [k, value] of Object.entries(json as Record<string, unknown>)) {
    const f = k.toLowerCase();
    if (value === null) continue;
    if (f === "key" || f === "sha256") {
      if (typeof value !== "string") return `decode blobptr: ${f} is not a string`;
      if (f === "key") key = value;
      else sha256 = value;
    } else if (f === "size") {
      if (typeof value !== "number" || !Number.isSafeInteger(value)) return "decode blobptr: size is not an int64";
      size = value;
    }
  }
  return { key, size, sha256 };
}
