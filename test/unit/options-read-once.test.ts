// Options are read one way: whatever form the caller gives a key in (an own property, an
// inherited one, a getter on a class), an entry point reads it exactly as the one options
// parser does, or refuses the call; it never validates a key and then drops it (a gateway
// `token` lost that way is a gateway without authentication). Generated over the entry
// points whose options are split or short-cut after the parse × sets of their keys × the
// form of each key. And a non-object options value is refused, never read as "no options".
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { parseBusOptions, parseConnectOptions } from "../../src/connection/options.js";
import { parseGatewayOptions, parseListenOptions } from "../../src/gateway/options.js";
import { parsePublishOptions } from "../../src/publish/options.js";
import { parseSubscribeOptions } from "../../src/sources/options.js";

type Form = "own" | "inherited" | "getter";

/** The options `entries` as the caller might build them: each key in its own form. */
function build(entries: readonly (readonly [string, unknown, Form])[]): Record<string, unknown> {
  const proto: Record<string, unknown> = {};
  for (const [k, v, form] of entries) {
    if (form === "inherited") proto[k] = v;
    if (form === "getter") Object.defineProperty(proto, k, { get: () => v, enumerable: false });
  }
  const o = Object.create(proto) as Record<string, unknown>;
  for (const [k, v, form] of entries) if (form === "own") o[k] = v;
  return o;
}

interface EntryPoint {
  readonly name: string;
  /** What the entry point reads of the options, comparable with toEqual. */
  readonly read: (options: Record<string, unknown>) => unknown;
  /** Always given (own), so the call is valid. */
  readonly base: Record<string, unknown>;
  /** Keys with a value each that differs from the default. */
  readonly values: Record<string, unknown>;
  /** Of `values`, the keys every call gives (in some form): the kind's own key. */
  readonly always?: readonly string[];
}

const ENTRY_POINTS: readonly EntryPoint[] = [
  {
    name: "connect",
    read: (o) => {
      const { connection, bus } = parseConnectOptions(o);
      return { connection: { ...connection }, bus: parseBusOptions(bus) };
    },
    base: {},
    values: { namespace: "acme", stream: "S1", servers: "nats://elsewhere:4222", name: "n", token: "t", maxInFlight: 7, feed: "namespace", tls: { handshakeFirst: true } },
  },
  {
    name: "startGateway",
    read: (o) => {
      const { bind, limits, handlerOptions } = parseListenOptions(o as never);
      return { bind, limits, handler: parseGatewayOptions(handlerOptions) };
    },
    base: { listen: "127.0.0.1:0" },
    values: { token: "s3cret", maxBodyBytes: 10, headersTimeoutMs: 100, maxConnectionsPerClient: 3, maxConnections: 9, maxHeaderBytes: 4096, insecurePublicBind: true, feed: "loop", allowedHosts: ["example.com"] },
  },
  {
    name: "subscribe (durable)",
    read: (o) => ({ ...parseSubscribeOptions(o) }),
    base: {},
    values: { durable: "billing", start: "new", batch: 3, ackWaitMs: 1000, ephemeralBuffer: 5 },
    always: ["durable"],
  },
  {
    name: "subscribe (feed)",
    read: (o) => ({ ...parseSubscribeOptions(o) }),
    base: {},
    values: { start: "all", batch: 3, feed: "namespace", ephemeralBuffer: 5 },
  },
  {
    name: "publish",
    read: (o) => ({ ...parsePublishOptions(o) }),
    base: {},
    values: { expectedLastSeq: 3, fireAndForget: true },
  },
];

/** The outcome of reading: what was read, or the refusal's option. */
function outcome(ep: EntryPoint, options: Record<string, unknown>): { read: unknown } | { refused: string } {
  try {
    return { read: ep.read(options) };
  } catch (e) {
    if (!(e instanceof OptionsError)) throw e;
    return { refused: e.option };
  }
}

describe("options are read one way, whatever form a key comes in", () => {
  for (const ep of ENTRY_POINTS) {
    it(`${ep.name}: an inherited or getter key is read as the own key is, or the call is refused`, () => {
      const always = ep.always ?? [];
      const keys = Object.keys(ep.values).filter((k) => !always.includes(k));
      fc.assert(
        fc.property(
          fc.subarray(keys, { minLength: always.length === 0 ? 1 : 0 }).map((ks) => [...always, ...ks]).chain((ks) => fc.tuple(fc.constant(ks), fc.array(fc.constantFrom<Form>("own", "inherited", "getter"), { minLength: ks.length, maxLength: ks.length }))),
          ([ks, forms]) => {
            const entries = ks.map((k, i) => [k, ep.values[k], forms[i]!] as const);
            const own = outcome(ep, { ...ep.base, ...Object.fromEntries(ks.map((k) => [k, ep.values[k]])) });
            expect("read" in own, `${ep.name} accepts ${ks.join(", ")} as own keys`).toBe(true);
            const given = outcome(ep, Object.assign(build(entries), ep.base));
            if ("refused" in given) return; // refusing is as safe as reading the same
            expect(given, `${ep.name}: ${entries.map(([k, , f]) => `${k} (${f})`).join(", ")}`).toEqual(own);
          },
        ),
        { numRuns: 200 },
      );
    });
  }

  it("subscribe and publish refuse an options value that is not an object, never reading it as no options", () => {
    for (const value of [null, 5, "durable", true, [], [["durable", "billing"]], () => ({})]) {
      expect(() => parseSubscribeOptions(value as never), `subscribe ${JSON.stringify(value)}`).toThrow(OptionsError);
      expect(() => parsePublishOptions(value as never), `publish ${JSON.stringify(value)}`).toThrow(OptionsError);
    }
  });
});
