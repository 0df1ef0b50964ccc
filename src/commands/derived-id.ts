/**
 * A UUID derived from text: the same text, the same id. Where two writers may write the
 * same fact (a retried gate answer, two successors closing one orphan), a derived id makes
 * them one command or one journal message (the stream's duplicate window keys on it).
 */
import { createHash } from "node:crypto";

/** A version-8 (custom) UUID: the text's SHA-256 with the version and variant bits set. */
export function derivedUuid(text: string): string {
  const h = createHash("sha256").update(text).digest("hex");
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
