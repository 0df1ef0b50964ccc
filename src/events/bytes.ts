/**
 * A Go []byte on the wire: standard base64 (padded), as encoding/json reads it with
 * base64.StdEncoding — line breaks (`\r`, `\n`) anywhere are skipped, and the unused low
 * bits of the last character are ignored rather than refused — and as it writes it back:
 * canonical, without line breaks, those bits zero.
 */
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PADDED = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BREAKS = /[\r\n]/g;

/** The canonical text of `value` as Go's decoder reads it, or undefined when Go refuses it. */
export function canonicalBase64(value: string): string | undefined {
  const text = value.includes("\r") || value.includes("\n") ? value.replace(BREAKS, "") : value;
  if (!PADDED.test(text)) return undefined;
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  if (pad === 0) return text;
  // Two pad characters leave 4 unused bits in the last character, one leaves 2.
  const at = text.length - pad - 1;
  const index = ALPHABET.indexOf(text[at]!);
  const kept = index & (pad === 2 ? 0b110000 : 0b111100);
  return kept === index ? text : `${text.slice(0, at)}${ALPHABET[kept]!}${text.slice(at + 1)}`;
}
