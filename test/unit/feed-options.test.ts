// The feed mode options are checked eagerly and named: the bus option, a live
// subscription's override (refused on a durable one), and the gateway's default.
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/index.js";
import { parseBusOptions } from "../../src/connection/options.js";
import { parseGatewayOptions } from "../../src/gateway/options.js";
import { parseSubscribeOptions } from "../../src/sources/options.js";

function optionOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(OptionsError);
    return (e as OptionsError).option;
  }
  return undefined;
}

describe("feed options", () => {
  it("the bus follows the feed per loop unless told otherwise, and refuses other modes", () => {
    expect(parseBusOptions({}).feed).toBe("loop");
    expect(parseBusOptions({ feed: "namespace" }).feed).toBe("namespace");
    expect(optionOf(() => parseBusOptions({ feed: "session" }))).toBe("feed");
  });

  it("a live subscription may choose its mode; a durable one may not", () => {
    expect(parseSubscribeOptions({}).feed).toBeUndefined();
    expect(parseSubscribeOptions({ feed: "namespace" }).feed).toBe("namespace");
    expect(optionOf(() => parseSubscribeOptions({ feed: "all" as "loop" }))).toBe("feed");
    expect(optionOf(() => parseSubscribeOptions({ durable: "svc", feed: "loop" } as never))).toBe("feed");
  });

  it("the gateway follows the namespace feed by default", () => {
    expect(parseGatewayOptions({}).feed).toBe("namespace");
    expect(parseGatewayOptions({ feed: "loop" }).feed).toBe("loop");
    expect(optionOf(() => parseGatewayOptions({ feed: "x" as "loop" }))).toBe("feed");
  });
});
