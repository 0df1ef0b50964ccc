/**
 * UTF-8 for bytes that are handed straight to NATS.js, which copies them into its
 * outbound buffer: the publisher's event bytes and header blocks.
 */
const utf8Encoder = new TextEncoder();

/**
 * Encodes into views of a shared slab instead of a fresh ArrayBuffer per event, which is
 * what TextEncoder.encode costs most of its time on. The views never overlap and a slab is
 * never written twice, so a view stays valid for as long as it is held; but `bytes.buffer`
 * is the whole slab, so only the publisher (which hands the bytes to NATS.js, which copies
 * them) uses it, never the public encoders.
 */
const SLAB_BYTES = 64 * 1024;
let slab = new Uint8Array(SLAB_BYTES);
let slabUsed = 0;

export function encodePooled(text: string): Uint8Array {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  const worst = text.length * 3;
  if (worst > SLAB_BYTES / 4) return utf8Encoder.encode(text);
  if (SLAB_BYTES - slabUsed < worst) {
    slab = new Uint8Array(SLAB_BYTES);
    slabUsed = 0;
  }
  const { written } = utf8Encoder.encodeInto(text, slab.subarray(slabUsed));
  const out = slab.subarray(slabUsed, slabUsed + written);
  slabUsed += written;
  return out;
}
