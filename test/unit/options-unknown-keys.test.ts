// Every entry point refuses an option key it does not know, naming it (OptionsError.option
// is the key's dotted path), never reading the call as another kind: generated over the
// entry points × key shapes (typos of real keys, nested keys, prototype-ish names, any
// string), each on top of options the entry point accepts.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { OptionsError } from "../../src/errors.js";
import { answerShape, controlShape, interruptShape, parseAnswerOptions, parseControlOptions, parseInterruptOptions, parseServeGatesOptions, serveGatesShape } from "../../src/commands/options.js";
import { busShape, connectShape, parseBusOptions, parseConnectOptions } from "../../src/connection/options.js";
import { gatewayShape, listenShape, parseGatewayOptions, parseListenOptions } from "../../src/gateway/options.js";
import { catalogShape, listShape, parseCatalogOptions, parseListOptions } from "../../src/catalog/options.js";
import { parsePublishAllOptions, parsePublishOptions, parseReconcileOptions, publishAllShape, publishShape, reconcileShape } from "../../src/publish/options.js";
import { consumersShape, parseConsumersOptions, parseProvisionRequest, provisionShape } from "../../src/streams/provision-options.js";
import { durableShape, feedShape, parseReplayOptions, parseSubscribeOptions, replayShape } from "../../src/sources/options.js";

/** A place options nest: its path from the top, a value the entry point accepts there, the keys it knows. */
interface Nest {
  readonly path: readonly string[];
  readonly value: Record<string, unknown>;
  readonly keys: readonly string[];
}

interface EntryPoint {
  readonly name: string;
  readonly parse: (options: never) => unknown;
  /** Options it accepts, to which the unknown key is added. */
  readonly base: Record<string, unknown>;
  /** The keys it knows at the top: its shape's (or shapes', for a union of kinds). */
  readonly keys: readonly string[];
  readonly nests: readonly Nest[];
}

const keysOf = (...shapes: z.ZodObject[]) => [...new Set(shapes.flatMap((s) => Object.keys(s.shape)))];
const startNests = (base: readonly string[]): Nest[] => [
  { path: [...base, "start"], value: { seq: 1 }, keys: ["seq"] },
  { path: [...base, "start"], value: { time: new Date(0) }, keys: ["time"] },
];
const since = { since: new Date(0) };

const ENTRY_POINTS: readonly EntryPoint[] = [
  {
    name: "connect",
    parse: parseConnectOptions,
    base: { servers: "nats://127.0.0.1:4222", namespace: "app" },
    keys: keysOf(connectShape),
    nests: [
      { path: ["tls"], value: { caFile: "ca.pem" }, keys: ["caFile", "certFile", "keyFile", "handshakeFirst"] },
      { path: ["readConsumers"], value: { prefix: "alice", size: 4 }, keys: ["prefix", "size", "waitMs"] },
    ],
  },
  {
    name: "fromConnection",
    parse: parseBusOptions,
    base: { namespace: "app" },
    keys: keysOf(busShape),
    nests: [{ path: ["readConsumers"], value: { prefix: "alice", size: 4 }, keys: ["prefix", "size", "waitMs"] }],
  },
  // A feed subscription knows the durable kind's keys too: they are refused, by name, as the other kind's.
  { name: "subscribeEvents (feed)", parse: parseSubscribeOptions, base: { batch: 8 }, keys: keysOf(feedShape, durableShape), nests: startNests([]) },
  { name: "subscribeEvents (durable)", parse: parseSubscribeOptions, base: { durable: "billing" }, keys: keysOf(feedShape, durableShape), nests: startNests([]) },
  { name: "replay", parse: parseReplayOptions, base: { fromSeq: 1 }, keys: keysOf(replayShape), nests: [] },
  { name: "provision", parse: (o: never) => parseProvisionRequest(o, { publishDeadlineMs: 30_000, clustered: false }), base: { mode: "verify" }, keys: keysOf(provisionShape), nests: [] },
  { name: "consumers", parse: parseConsumersOptions, base: {}, keys: keysOf(consumersShape), nests: [] },
  { name: "createGatewayHandler", parse: parseGatewayOptions, base: { token: "t" }, keys: keysOf(gatewayShape), nests: [] },
  { name: "startGateway", parse: parseListenOptions, base: { listen: "127.0.0.1:0" }, keys: keysOf(listenShape), nests: [] },
  { name: "openSessionCatalog", parse: parseCatalogOptions, base: { syncTimeoutMs: 5000 }, keys: keysOf(catalogShape), nests: [] },
  { name: "SessionCatalog.list", parse: parseListOptions, base: { limit: 20 }, keys: keysOf(listShape), nests: [] },
  { name: "publish", parse: parsePublishOptions, base: { expectedLastSeq: 0 }, keys: keysOf(publishShape), nests: [] },
  {
    name: "publishAll",
    parse: parsePublishAllOptions,
    base: { resume: since },
    keys: keysOf(publishAllShape),
    nests: [{ path: ["resume"], value: since, keys: ["since"] }],
  },
  { name: "storedEvents", parse: parseReconcileOptions, base: since, keys: keysOf(reconcileShape), nests: [] },
  { name: "session.answer", parse: parseAnswerOptions, base: {}, keys: keysOf(answerShape), nests: [] },
  { name: "session.submitInput", parse: parseControlOptions, base: {}, keys: keysOf(controlShape), nests: [] },
  { name: "session.interrupt", parse: parseInterruptOptions, base: {}, keys: keysOf(interruptShape), nests: [] },
  { name: "serveGates", parse: parseServeGatesOptions, base: {}, keys: keysOf(serveGatesShape), nests: [] },
];

const PROTOTYPE_ISH = ["__proto__", "constructor", "prototype", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "__defineGetter__", "then"];

/** One edit of a real key: the typos people make. */
function typo(key: string): fc.Arbitrary<string> {
  const at = fc.nat({ max: Math.max(0, key.length - 1) });
  const letter = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-0123456789");
  return fc.oneof(
    at.map((i) => key.slice(0, i) + key.slice(i + 1)), // a letter left out
    fc.tuple(at, letter).map(([i, c]) => key.slice(0, i) + c + key.slice(i)), // one too many
    fc.tuple(at, letter).map(([i, c]) => key.slice(0, i) + c + key.slice(i + 1)), // one wrong
    at.map((i) => (i + 1 < key.length ? key.slice(0, i) + key[i + 1]! + key[i]! + key.slice(i + 2) : `${key}s`)), // two swapped
    fc.constant(key.toLowerCase()),
    fc.constant(key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)), // snake_case
    fc.constantFrom(`${key}s`, `_${key}`, `${key} `, ` ${key}`),
  );
}

/** Unknown keys at one level: typos of the known ones, prototype-ish names, any string. */
function unknownKey(known: readonly string[]): fc.Arbitrary<string> {
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.constantFrom(...known).chain(typo) },
      { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_ISH) },
      { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    )
    .filter((k) => !known.includes(k));
}

/**
 * `target` with an own, enumerable `key` (even `__proto__`, which a literal would turn into
 * the prototype); with `replacing`, a key of `target` it stands in for is gone (the typo
 * replaced the real key, which may be required).
 */
function withKey(target: Record<string, unknown>, key: string, value: unknown, replacing?: string): Record<string, unknown> {
  const copy = { ...target };
  if (replacing !== undefined) delete copy[replacing];
  Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

/** Options: the base, with `nest`'s value at its path (when nested), and the unknown key at that level. */
function optionsWith(entry: EntryPoint, nest: Nest | undefined, key: string, value: unknown, replacing?: string): Record<string, unknown> {
  if (nest === undefined) return withKey(entry.base, key, value, replacing);
  return { ...entry.base, [nest.path[0]!]: withKey(nest.value, key, value, replacing) };
}

/** Each key the given options hold, with a typo of it that replaces it. */
const replacedKey = (present: readonly string[], known: readonly string[]) =>
  fc.constantFrom(...present).chain((real) => typo(real).filter((k) => !known.includes(k)).map((key) => ({ key, real })));

function refusal(parse: (o: never) => unknown, options: unknown): OptionsError | undefined {
  try {
    parse(options as never);
  } catch (e) {
    if (e instanceof OptionsError) return e;
    throw e;
  }
  return undefined;
}

// Any value, undefined too: a key that is no option is refused whatever it holds.
const value = fc.oneof(fc.constant(undefined), fc.jsonValue(), fc.constant(() => 0));

describe("unknown option keys", () => {
  it.each(ENTRY_POINTS.map((e) => [e.name, e] as const))("%s accepts its base options", (_, entry) => {
    expect(refusal(entry.parse, entry.base)).toBeUndefined();
    for (const nest of entry.nests) expect(refusal(entry.parse, { ...entry.base, [nest.path[0]!]: nest.value })).toBeUndefined();
  });

  it.each(ENTRY_POINTS.map((e) => [e.name, e] as const))("%s refuses an unknown top-level key, naming it", (_, entry) => {
    fc.assert(
      fc.property(unknownKey(entry.keys), value, (key, v) => {
        const e = refusal(entry.parse, optionsWith(entry, undefined, key, v));
        expect(e, key).toBeInstanceOf(OptionsError);
        expect(e!.option).toBe(key);
        expect(e!.code).toBe("OPTIONS_INVALID");
      }),
      { numRuns: 150 },
    );
  });

  const withBase = ENTRY_POINTS.filter((e) => Object.keys(e.base).length > 0).map((e) => [e.name, e] as const);
  it.each(withBase)("%s refuses a typo that replaces a key it was given, naming the typo", (_, entry) => {
    fc.assert(
      fc.property(replacedKey(Object.keys(entry.base), entry.keys), ({ key, real }) => {
        expect(refusal(entry.parse, optionsWith(entry, undefined, key, entry.base[real], real))?.option).toBe(key);
      }),
      { numRuns: 100 },
    );
  });

  const nested = ENTRY_POINTS.flatMap((entry) => entry.nests.map((nest) => [`${entry.name} ${nest.path.join(".")} ${JSON.stringify(nest.keys)}`, entry, nest] as const));
  it.each(nested)("%s: an unknown nested key is named by its path", (_, entry, nest) => {
    fc.assert(
      fc.property(unknownKey(nest.keys), value, (key, v) => {
        const e = refusal(entry.parse, optionsWith(entry, nest, key, v));
        expect(e, key).toBeInstanceOf(OptionsError);
        expect(e!.option).toBe([...nest.path, key].join("."));
      }),
      { numRuns: 100 },
    );
    fc.assert(
      fc.property(replacedKey(Object.keys(nest.value), nest.keys), ({ key, real }) => {
        expect(refusal(entry.parse, optionsWith(entry, nest, key, nest.value[real], real))?.option).toBe([...nest.path, key].join("."));
      }),
      { numRuns: 100 },
    );
  });

  it("a misspelt durable is refused, not read as a feed subscription", () => {
    fc.assert(
      fc.property(typo("durable").filter((k) => k !== "durable"), (key) => {
        expect(refusal(parseSubscribeOptions, { [key]: "billing" })?.option).toBe(key);
      }),
    );
  });

  it("each kind's own options are refused on the other kind, by name", () => {
    const durableOnly = Object.keys(durableShape.shape).filter((k) => !(k in feedShape.shape) && k !== "durable");
    const feedOnly = Object.keys(feedShape.shape).filter((k) => !(k in durableShape.shape));
    for (const k of durableOnly) expect(refusal(parseSubscribeOptions, { [k]: 1 })?.message).toBe(`${k}: applies to durable subscriptions only`);
    for (const k of feedOnly) expect(refusal(parseSubscribeOptions, { durable: "billing", [k]: "loop" })?.message).toBe(`${k}: applies to feed subscriptions only`);
    // Typed absent there (`?: undefined`), so an undefined one is no option at all.
    for (const k of durableOnly) expect(refusal(parseSubscribeOptions, { [k]: undefined })).toBeUndefined();
  });
});
