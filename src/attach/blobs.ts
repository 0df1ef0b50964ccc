/**
 * An offloaded Go envelope, fetched from the object store `natsstore_blobs` the way harness
 * `pkg/sessionstore` (replay.go, resolveBlob) fetches it: the named object's bytes, read up
 * to the pointer's size plus one, must be exactly that size and hash (sha256, lowercase
 * hex) to the pointer's digest. Read with `$JS.API.STREAM.MSG.GET` only (the object's
 * metadata, then each chunk): no consumer, nothing written.
 */
import { createHash } from "node:crypto";
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import type { BlobPointer } from "./envelope.js";
import { GO_BLOB_STREAM, objectChunkSubject, objectMetaSubject } from "./go-layout.js";

export type BlobResult = { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false; readonly problem: "blob_unavailable" | "blob_integrity"; readonly detail: string };

interface ObjectMeta {
  readonly nuid?: unknown;
  readonly size?: unknown;
  readonly chunks?: unknown;
  readonly digest?: unknown;
  readonly deleted?: unknown;
}

/** A message by subject from `seq` on, or null (no such message); other failures throw. */
export async function messageFrom(jsm: JetStreamManager, stream: string, query: { seq: number; next_by_subj: string } | { last_by_subj: string }): Promise<StoredMsg | null> {
  try {
    return await jsm.streams.getMessage(stream, query);
  } catch (e) {
    // 10037: no message found; 10059: no such stream (a session's catalog entry seen before its stream). Anything else (a timeout, a permission) is not "missing".
    const code = (e as { code?: number }).code;
    if (code === 10037 || code === 10059 || /no message found|stream not found/i.test((e as Error).message)) return null;
    throw e;
  }
}

/** Fetches and checks the blob `pointer` names. A failure to reach the server throws (the record is retried, not parked). */
export async function fetchBlob(jsm: JetStreamManager, pointer: BlobPointer): Promise<BlobResult> {
  const metaMsg = await messageFrom(jsm, GO_BLOB_STREAM, { last_by_subj: objectMetaSubject(pointer.key) });
  if (metaMsg === null) return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)} not found` };
  let meta: ObjectMeta;
  try {
    meta = JSON.parse(new TextDecoder().decode(metaMsg.data)) as ObjectMeta;
  } catch {
    return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)}: its metadata is not JSON` };
  }
  if (meta.deleted === true) return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)} was deleted` };
  if (typeof meta.nuid !== "string" || typeof meta.chunks !== "number" || typeof meta.size !== "number") {
    return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)}: its metadata lacks nuid, chunks or size` };
  }
  // Go reads at most size+1 bytes: more is a corruption, and nothing past it is fetched.
  const limit = pointer.size + 1;
  const parts: Uint8Array[] = [];
  let read = 0;
  let seq = 0;
  const subject = objectChunkSubject(meta.nuid);
  for (let i = 0; i < meta.chunks && read < limit; i++) {
    const chunk = await messageFrom(jsm, GO_BLOB_STREAM, { seq: seq + 1, next_by_subj: subject });
    if (chunk === null) return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)}: chunk ${i + 1} of ${meta.chunks} is missing` };
    seq = chunk.seq;
    const take = chunk.data.subarray(0, Math.min(chunk.data.length, limit - read));
    parts.push(take);
    read += take.length;
  }
  const bytes = Buffer.concat(parts);
  // The object store's own reader checks the whole object's digest at its end: a short or
  // corrupt object fails the read there (Go: BlobUnavailableError).
  if (read < limit && bytes.length === meta.size && typeof meta.digest === "string") {
    const digest = `SHA-256=${createHash("sha256").update(bytes).digest("base64url")}`;
    const padded = digest + "=".repeat((4 - ((digest.length - "SHA-256=".length) % 4)) % 4);
    if (meta.digest !== padded && meta.digest !== digest) return { ok: false, problem: "blob_unavailable", detail: `object ${JSON.stringify(pointer.key)}: its bytes do not match the object store's digest` };
  }
  const got = createHash("sha256").update(bytes).digest("hex");
  if (bytes.length !== pointer.size || got !== pointer.sha256) {
    return { ok: false, problem: "blob_integrity", detail: `blob ${JSON.stringify(pointer.key)} is corrupt: ${bytes.length} bytes hashing ${got}, the pointer names ${pointer.size} bytes hashing ${pointer.sha256}` };
  }
  return { ok: true, bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
}
