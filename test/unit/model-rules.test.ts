// The Go runtime's rules that MODEL.md's rows point to, each tested over the family of
// inputs it covers: byte fields as Go's base64 reads them, the StepDone capture rules, the
// model-facing error detail, the manifest's schema versions, and runtime identifiers.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent } from "../../src/codec/codec.js";
import { canonicalBase64 } from "../../src/events/bytes.js";
import { CARRIERS } from "./model-carriers.js";

type Wire = Record<string, unknown>;

const wireOf = (name: string): Wire => JSON.parse(CARRIERS[name]!) as Wire;

/** The object holding the last key of a dotted path, and that key. */
function slot(w: Wire, path: string): [Record<string, unknown>, string] {
  const keys = path.split(".");
  let at = w;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  return [at, keys[keys.length - 1]!];
}
const val = (w: Wire, path: string): unknown => {
  const [o, k] = slot(w, path);
  return o[k];
};
const put = (w: Wire, path: string, value: unknown): void => {
  const [o, k] = slot(w, path);
  o[k] = value;
};
const del = (w: Wire, path: string): void => {
  const [o, k] = slot(w, path);
  delete o[k];
};
function read(wire: Wire): { ok: true; wire: Wire } | { ok: false; error: unknown } {
  try {
    return { ok: true, wire: JSON.parse(new TextDecoder().decode(encodeEvent(decodeEvent(JSON.stringify(wire))))) as Wire };
  } catch (error) {
    return { ok: false, error };
  }
}
const accepted = (wire: Wire) => read(wire).ok;

describe("byte fields, as Go's encoding/json reads a []byte", () => {
  const withBreaks = (text: string, at: number[]) => at.reduce((t, i, n) => `${t.slice(0, i % (t.length + 1))}${n % 2 ? "\r\n" : "\n"}${t.slice(i % (t.length + 1))}`, text);

  it("skips line breaks anywhere and ignores unused trailing bits, writing the canonical text", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.array(fc.nat(200), { maxLength: 4 }), fc.nat(15), (bytes, breaks, noise) => {
        const canonical = Buffer.from(bytes).toString("base64");
        let text = canonical;
        const pad = canonical.endsWith("==") ? 2 : canonical.endsWith("=") ? 1 : 0;
        if (pad > 0) {
          // Set some of the bits Go's (non-strict) decoder ignores in the last character.
          const at = canonical.length - pad - 1;
          const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
          const index = alphabet.indexOf(canonical[at]!) | (noise & (pad === 2 ? 0b1111 : 0b11));
          text = `${canonical.slice(0, at)}${alphabet[index]}${canonical.slice(at + 1)}`;
        }
        text = withBreaks(text, breaks);
        expect(canonicalBase64(text)).toBe(canonical);
        const wire = wireOf("StepDone~captures");
        put(wire, "messages.1.blocks.0.Data", text);
        const r = read(wire);
        expect(r.ok && val(r.wire, "messages.1.blocks.0.Data")).toBe(canonical);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses what StdEncoding refuses: missing padding, characters outside the alphabet, URL-safe base64", () => {
    for (const bad of ["QQ", "QUJ", "Q===", "QU!D", "QU-_", " QUJD", "QUJD\t"]) {
      expect(canonicalBase64(bad), bad).toBeUndefined();
      const wire = wireOf("StepDone~captures");
      put(wire, "messages.1.blocks.0.Data", bad);
      expect(accepted(wire), bad).toBe(false);
    }
  });

  it("keeps an empty slice (\"\") apart from nil (null)", () => {
    const wire = wireOf("StepDone~captures");
    put(wire, "messages.1.blocks.0.Data", "");
    expect(read(wire)).toMatchObject({ ok: true, wire: { messages: [{}, { blocks: [{ Data: "" }] }, {}] } });
    put(wire, "messages.1.blocks.0.Data", null);
    expect(read(wire)).toMatchObject({ ok: true, wire: { messages: [{}, { blocks: [{ Data: null }] }, {}] } });
  });
});

describe("StepDone captures, as validateStepDoneCaptures rules", () => {
  type Change = (w: Wire) => void;
  const cases: [string, Change, boolean][] = [
    ["the Go-form carrier", () => {}, true],
    ["no captures at all", (w) => del(w, "captures"), true],
    ["an empty list (omitted)", (w) => put(w, "captures", []), true],
    ["fewer captures than tool results", (w) => (val(w, "captures") as unknown[]).pop(), false],
    ["more captures than tool results", (w) => (val(w, "captures") as unknown[]).push({ ...(val(w, "captures.0") as Wire), tool_execution_id: "6f1c2a3b-4d5e-4f60-8a7b-000000000519", tool_use_id: "toolu_3" }), false],
    ["a tool_use_id naming no result", (w) => put(w, "captures.0.tool_use_id", "toolu_9"), false],
    ["a tool_use_id two results share", (w) => put(w, "messages.2.tool_use_id", "toolu_1"), false],
    ["two captures of one result", (w) => put(w, "captures.1.tool_use_id", "toolu_1"), false],
    ["two captures of one tool execution", (w) => put(w, "captures.1.tool_execution_id", val(w, "captures.0.tool_execution_id")), false],
    ["the nil tool execution id", (w) => put(w, "captures.0.tool_execution_id", "00000000-0000-0000-0000-000000000000"), false],
    ["an unknown member (a signed URL)", (w) => put(w, "captures.0.signed_url", "https://x"), false],
    ["an unknown member inside the reference (dropped, as Go drops it)", (w) => put(w, "captures.1.reference.signed_url", "https://x"), true],
    ["a reference without an object id", (w) => put(w, "captures.1.reference", {}), false],
    ["a truncation without a reference", (w) => del(w, "captures.1.reference"), false],
    ["an unknown encoding", (w) => put(w, "captures.0.encoding", "base64"), false],
    ["an exact size below the captured bytes", (w) => put(w, "captures.0.original_bytes", 11), false],
    ["an exact size above the captured bytes, not marked truncated", (w) => put(w, "captures.0.original_bytes", 13), false],
    ["an exact size above, truncated, with a reason and a reference", (w) => Object.assign(val(w, "captures.0") as Wire, { reference: { object_id: "o" }, original_bytes: 13, truncated: true, truncation_reason: "source_limit" }), true],
    ["an exact size with a lower bound too", (w) => put(w, "captures.0.original_bytes_lower_bound", 20), false],
    ["an unknown size not marked truncated", (w) => put(w, "captures.1.truncated", false), false],
    ["an unknown size with a lower bound not above the captured bytes", (w) => put(w, "captures.1.original_bytes_lower_bound", 4096), false],
    ["a truncation without a reason", (w) => del(w, "captures.1.truncation_reason"), false],
    ["a truncation with an unknown reason", (w) => put(w, "captures.1.truncation_reason", "too_big"), false],
    ["a reason without a truncation", (w) => put(w, "captures.0.truncation_reason", "source_limit"), false],
    ["a tool_use_id of 1024 bytes", (w) => ["captures.0.tool_use_id", "messages.1.tool_use_id"].forEach((p) => put(w, p, "x".repeat(1024))), true],
    ["a tool_use_id of 1025 bytes", (w) => ["captures.0.tool_use_id", "messages.1.tool_use_id"].forEach((p) => put(w, p, "x".repeat(1025))), false],
  ];
  it.each(cases)("%s", (_, change, ok) => {
    const wire = wireOf("StepDone~captures");
    change(wire);
    expect(accepted(wire)).toBe(ok);
  });
});

describe("a turn error's model-facing detail, as restoredErrorWire reads it", () => {
  const withErr = (err: Wire) => Object.assign(wireOf("TurnFailed/model-facing"), { err });
  it("is kept with model_facing: true and refused without it, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), fc.constantFrom(undefined, false), (detail, flag) => {
        expect(accepted(withErr({ kind: "k", message: "m", model_facing: true, model_facing_detail: detail }))).toBe(true);
        expect(accepted(withErr({ kind: "k", message: "m", ...(flag === undefined ? {} : { model_facing: flag }), model_facing_detail: detail }))).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
  it("holds 256 KiB of UTF-8 and refuses a byte more", () => {
    const at = "€".repeat((256 * 1024 - 1) / 3) + "a"; // 262144 bytes
    expect(accepted(withErr({ kind: "k", message: "m", model_facing: true, model_facing_detail: at }))).toBe(true);
    expect(accepted(withErr({ kind: "k", message: "m", model_facing: true, model_facing_detail: `${at}a` }))).toBe(false);
  });
  it("the flag alone is an error with no detail to show", () => {
    expect(read(withErr({ kind: "k", message: "m", model_facing: true }))).toMatchObject({ ok: true, wire: { err: { kind: "k", message: "m", model_facing: true } } });
  });
});

describe("a manifest's fields by schema version, as validConfigManifestSchema rules", () => {
  // Go's rule, restated: 0 no hook policy; 1 no hook policy, no runtime fields; 2 no
  // runtime fields; 3 runtime fields are identifiers; anything newer is refused.
  const goAccepts = (v: number, hook: boolean, runtime: "none" | "valid" | "invalid") =>
    v === 0 ? !hook : v === 1 ? !hook && runtime === "none" : v === 2 ? runtime === "none" : v === 3 ? runtime !== "invalid" : false;
  const table = [0, 1, 2, 3, 4, 0xffffffff].flatMap((v) => [false, true].flatMap((hook) => (["none", "valid", "invalid"] as const).map((runtime) => [v, hook, runtime] as const)));
  it.each(table)("schema %i, hook policy %s, runtime fields %s", (v, hook, runtime) => {
    const wire = wireOf("SessionStarted/manifest-v3-internal");
    const m = { schema_version: v, agent_kind: "carbon:carbon" } as Wire;
    if (hook) m.hook_policy_rev = "h1";
    if (runtime !== "none") m.runtime_profile = runtime === "valid" ? "team/default" : "team/../x";
    wire.manifest = m;
    expect(accepted(wire)).toBe(goAccepts(v, hook, runtime));
  });
});

describe("runtime identifiers, as validAgentRuntimeIdentifier and validRuntimeManifestIdentifier rule", () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9._@+=,~-]{1,12}$/).filter((s) => s !== "." && s !== "..");
  const identifier = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join("/")).filter((s) => Buffer.byteLength(s) <= 128 && !s.startsWith("~/") && !s.startsWith("./") && !s.startsWith("../"));
  const spoilers = fc.constantFrom("\u0000", "\u0007", "\u0085", " ", "\u00a0", "\u3000", "\t", "\\", ":", "://");
  const loop = (harness: string, profile: string) => {
    const wire = wireOf("LoopStarted/runtime-full");
    put(wire, "agent_runtime.harness", harness);
    put(wire, "agent_runtime.profile", profile);
    return accepted(wire);
  };
  const manifest = (value: string) => {
    const wire = wireOf("SessionStarted/manifest-v3-internal");
    put(wire, "manifest.runtime_catalog_rev", value);
    return accepted(wire);
  };

  it("accepts identifiers: a profile or manifest field may be a path, an agent-runtime name may not", () => {
    fc.assert(
      fc.property(identifier, (id) => {
        expect(loop("h", id)).toBe(true);
        expect(manifest(id)).toBe(true);
        expect(loop(id, "p")).toBe(!id.includes("/"));
      }),
      { numRuns: 300 },
    );
  });

  it("refuses control characters, white space, backslashes and colons anywhere", () => {
    fc.assert(
      fc.property(identifier, spoilers, fc.nat(), (id, bad, at) => {
        const i = at % (id.length + 1);
        const spoiled = `${id.slice(0, i)}${bad}${id.slice(i)}`;
        expect(loop("h", spoiled)).toBe(false);
        expect(manifest(spoiled)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses empty, dot and dot-dot segments, and an agent runtime's path prefixes", () => {
    for (const bad of ["/a", "a/", "a//b", "./a", "../a", "a/./b", "a/../b", ".", ".."]) {
      expect(loop("h", bad), bad).toBe(false);
      expect(manifest(bad), bad).toBe(false);
    }
    expect(loop("h", "~/a")).toBe(false);
    expect(manifest("~/a")).toBe(true);
  });
});
