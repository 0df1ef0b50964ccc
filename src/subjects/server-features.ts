import { ServerUnsupportedError } from "../errors.js";

/** Features that depend on the server version, with the first version that has them. */
export const FEATURES = {
  /** `Nats-Expected-Last-Subject-Sequence-Subject`: conditional append over a session's subjects. */
  fencing: "2.11.0",
  /** A stream leader's step-down names its successor (`placement.preferred`, nats-server PR 6284). */
  preferredStepdown: "2.11.0",
  /** Atomic batch publish (ADR-50): up to 1,000 messages committed together; the stream needs `allow_atomic`. */
  atomicBatch: "2.12.0",
  /** Fast-ingest batches: server-paced flow control for many appends; the stream needs `allow_batched`. */
  fastBatch: "2.14.0",
} as const;
/** A nats-server feature jetloop uses where the server has it (fencing, atomic batches, fast batches), each with the version that brings it. */
export type Feature = keyof typeof FEATURES;

/** The most messages nats-server commits in one atomic batch. */
export const MAX_ATOMIC_BATCH = 1000;

/** The oldest nats-server jetloop supports. */
export const MINIMUM_SERVER = "2.10.0";

function parts(version: string): [number, number, number] {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
}

export function compareVersions(a: string, b: string): number {
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

export function supports(version: string, feature: Feature): boolean {
  return compareVersions(version, FEATURES[feature]) >= 0;
}

/** Throws ServerUnsupportedError with a clear message when `version` lacks `feature`. */
export function requireFeature(version: string, feature: Feature): void {
  if (!supports(version, feature)) throw new ServerUnsupportedError(feature, FEATURES[feature], version);
}

export function requireMinimum(version: string): void {
  if (compareVersions(version, MINIMUM_SERVER) < 0) throw new ServerUnsupportedError("jetloop", MINIMUM_SERVER, version);
}
