/**
 * The names the Go runtime's session store (looprig/natsstore under harness
 * `pkg/sessionstore`) gives its sessions in NATS, as recorded
 * (test/conformance/data/natsstore/README.md): one stream per session, the catalog KV, the
 * object store. The one place the attach spells them.
 */
import { isCanonicalUuid } from "../events/ids.js";
import { GO_SESSION_SUBJECTS, subjectsOverlap } from "../streams/foreign-subjects.js";

/** The subject root every Go session ledger is written under: `sessions.<uuid>`. */
export const GO_SUBJECT_ROOT = "sessions";
/** Every Go session's subject (one token per session id). */
export const GO_SESSIONS_FILTER = `${GO_SUBJECT_ROOT}.*`;
/** The subjects a jetloop stream must not capture: the Go runtime's stream creation would fail. */
export const GO_SESSIONS_ALL = GO_SESSION_SUBJECTS;

/** The catalog: KV bucket `natsstore_kv`, key `sessions/<uuid>`, value the session's SessionMeta JSON. */
export const GO_CATALOG_BUCKET = "natsstore_kv";
export const GO_CATALOG_PREFIX = "sessions/";

/** Offloaded envelopes (over 512 KiB): object store `natsstore_blobs`. */
export const GO_BLOB_BUCKET = "natsstore_blobs";
export const GO_BLOB_STREAM = `OBJ_${GO_BLOB_BUCKET}`;

/** The stream-created advisory of any stream; the attach keeps those of Go session streams. */
export const STREAM_CREATED_ADVISORIES = "$JS.EVENT.ADVISORY.STREAM.CREATED.>";

/**
 * The header kept beside each attached event in jetloop's journal: the record's Go journal
 * sequence (its Go stream's sequence), from which a restarted attach resumes.
 */
export const HEADER_GO_SEQ = "Jetloop-Go-Seq";

const STREAM_PREFIX = "sessions_s";

/** natsstore's stream of session `sessionId` (the ledger `sessions/<uuid>`, `/` escaped as `_s`). */
export function goStreamName(sessionId: string): string {
  return `${STREAM_PREFIX}${sessionId}`;
}

/** The one subject of session `sessionId`'s stream. */
export function goSubject(sessionId: string): string {
  return `${GO_SUBJECT_ROOT}.${sessionId}`;
}

/** The session a Go session stream's name is of; undefined for any other stream. */
export function sessionOfGoStream(name: string): string | undefined {
  if (!name.startsWith(STREAM_PREFIX)) return undefined;
  const id = name.slice(STREAM_PREFIX.length);
  return isCanonicalUuid(id) ? id : undefined;
}

/** The session a Go ledger subject is of; undefined for any other subject. */
export function sessionOfGoSubject(subject: string): string | undefined {
  const prefix = `${GO_SUBJECT_ROOT}.`;
  if (!subject.startsWith(prefix)) return undefined;
  const id = subject.slice(prefix.length);
  return isCanonicalUuid(id) ? id : undefined;
}

/** The session a catalog key names; undefined for any other key of the bucket. */
export function sessionOfCatalogKey(key: string): string | undefined {
  if (!key.startsWith(GO_CATALOG_PREFIX)) return undefined;
  const id = key.slice(GO_CATALOG_PREFIX.length);
  return isCanonicalUuid(id) ? id : undefined;
}

/** The object store's metadata subject of object `name` (base64url with padding, as nats.go writes it). */
export function objectMetaSubject(name: string): string {
  return `$O.${GO_BLOB_BUCKET}.M.${Buffer.from(name, "utf8").toString("base64url")}${"=".repeat((3 - (Buffer.byteLength(name, "utf8") % 3)) % 3)}`;
}

/** The subject an object's chunks are stored on. */
export function objectChunkSubject(nuid: string): string {
  return `$O.${GO_BLOB_BUCKET}.C.${nuid}`;
}

/** Whether a subject filter of a jetloop stream can capture a Go ledger subject (streams/foreign-subjects.ts). */
export function overlapsGoSessions(filter: string): boolean {
  return subjectsOverlap(filter, GO_SESSIONS_ALL);
}
