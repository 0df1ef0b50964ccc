// MODEL.md's inventory, row by row: every field of the Go types the journal carries, read
// from the table itself, and for each row the cases its columns state — the field is
// present in a Go-form event and comes back as written; its zero is omitted, written or
// kept as the row says (or refused by a rule); a wrong JSON type is refused; a cap holds
// at the limit and refuses one over it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent } from "../../src/codec/codec.js";
import { CARRIERS } from "./model-carriers.js";

const MAX_BYTES = 16 * 1024 * 1024;
const NIL = "00000000-0000-0000-0000-000000000000";

interface Row {
  readonly goType: string;
  readonly json: string;
  readonly kind: string;
  readonly zero: string;
  readonly cap: string;
  readonly carrier: string;
  readonly path: string[];
}

function inventory(): Row[] {
  const page = readFileSync(join(import.meta.dirname, "../../MODEL.md"), "utf8");
  const rows: Row[] = [];
  for (const line of page.split("\n")) {
    const m = /^\| ([^|]+) \| `([^`]+)` \| (\w+) \| (.+?) \| .+ \| (.+?) \| .+ \| `([^`]+)` `([^`]+)` \|$/.exec(line);
    if (m) rows.push({ goType: m[1]!, json: m[2]!, kind: m[3]!, zero: m[4]!, cap: m[5]!, carrier: m[6]!, path: m[7]!.split(".") });
  }
  return rows;
}

type Json = Record<string, unknown> | unknown[];

function parent(root: Json, path: readonly string[]): [Record<string, unknown> | unknown[], string] {
  let at: unknown = root;
  for (const key of path.slice(0, -1)) at = (at as Record<string, unknown>)[key];
  if (typeof at !== "object" || at === null) throw new Error(`no parent for ${path.join(".")}`);
  return [at as Record<string, unknown>, path[path.length - 1]!];
}
/** The value at `path`, or undefined when it or any object above it is absent. */
function get(root: Json, path: readonly string[]): unknown {
  let at: unknown = root;
  for (const key of path) {
    if (typeof at !== "object" || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}
function set(root: Json, path: readonly string[], value: unknown): void {
  const [p, k] = parent(root, path);
  if (value === undefined) delete (p as Record<string, unknown>)[k];
  else (p as Record<string, unknown>)[k] = value;
}

/** Decodes and re-encodes; the wire object Go's writer would produce, or the refusal. */
function roundTrip(text: string): { ok: true; wire: Json; text: string } | { ok: false; error: unknown } {
  try {
    const out = new TextDecoder().decode(encodeEvent(decodeEvent(text, { maxBytes: MAX_BYTES }), { maxBytes: MAX_BYTES }));
    return { ok: true, wire: JSON.parse(out) as Json, text: out };
  } catch (error) {
    return { ok: false, error };
  }
}

function mutated(row: Row, change: (wire: Json) => void): ReturnType<typeof roundTrip> {
  const wire = JSON.parse(CARRIERS[row.carrier]!) as Json;
  change(wire);
  return roundTrip(JSON.stringify(wire));
}

const ZEROS: Record<string, unknown> = { string: "", enum: "", bool: false, uint: 0, int: 0, uuid: NIL, time: "0001-01-01T00:00:00Z", object: {}, array: [], map: {}, bytes: null };
const WRONG: Record<string, unknown> = { string: 1, enum: 1, bool: "true", uint: "1", int: "1", uuid: 1, time: 1, object: [], array: {}, map: [], bytes: 1 };

/** A capture's tool_use_id names its result: both change together. */
function linked(row: Row, wire: Json, value: unknown): void {
  if (row.goType !== "ToolResultCapture" || row.json !== "tool_use_id") return;
  const old = get(wire, row.path);
  for (const m of (wire as { messages: { tool_use_id?: unknown }[] }).messages) if (m.tool_use_id === old) m.tool_use_id = value;
}

const rows = inventory();

describe("MODEL.md's inventory", () => {
  it("lists the fields of every Go type the journal carries, each once", () => {
    expect(rows.length).toBeGreaterThan(200);
    const seen = new Set(rows.map((r) => `${r.goType}.${r.json}`));
    expect(seen.size).toBe(rows.length);
  });

  // A rule's citation is the Go line that applies it, in the stored copy MODEL.md lists, so a
  // reader can open the line instead of searching a function whose body drifts between
  // versions. Rules of Go's standard library are cited by function (no stored copy of the
  // release); every other citation must carry `file.go:LINE`, and its file must be listed.
  it("cites, for every rule of looprig's code, the Go line that applies it, in a listed copy", () => {
    const page = readFileSync(join(import.meta.dirname, "../../MODEL.md"), "utf8");
    const copies = new Set([...page.matchAll(/^\| looprig\/\w+ \| `([^`]+\.go)` \| [0-9a-f]{12}\b/gm)].map((m) => m[1]!.split("/").pop()!));
    expect(copies.size).toBeGreaterThan(0);
    const cited = page.split("\n").filter((line) => /^\| [^|]+ \| `[^`]+` \|/.test(line) && line.split(" | ").length >= 8);
    expect(cited.length).toBe(rows.length);
    const problems: string[] = [];
    let lines = 0;
    for (const line of cited) {
      const [, name, json] = /^\| ([^|]+) \| `([^`]+)`/.exec(line)!;
      const checks = line.split(" | ")[4]!;
      if (/`[\w/]+\.go\b/.test(checks) && !checks.includes(" — Go: ")) problems.push(`${name}.${json}: names Go code outside "— Go:"`);
      if (!checks.includes(" — Go: ")) continue;
      const go = checks.slice(checks.indexOf(" — Go: ") + 7);
      if (/^(encoding\/json's|Go's `time\.)/.test(go)) continue;
      const files = [...go.matchAll(/`([\w/.-]+\.go)(?::(\d+))?`/g)];
      if (files.length === 0) problems.push(`${name}.${json}: no Go line`);
      for (const [, file, at] of files) {
        if (at === undefined) problems.push(`${name}.${json}: ${file} without a line`);
        else if (!copies.has(file!.split("/").pop()!)) problems.push(`${name}.${json}: ${file} is not in the copies read`);
        else lines++;
      }
    }
    expect(problems).toEqual([]);
    expect(lines).toBeGreaterThan(80);
  });

  // CONFORMANCE.md's stricter rules say why Go's writer never produces what they refuse; the
  // Go lines that show it are in the same stored copies.
  it("cites, for every stricter rule of CONFORMANCE.md, the Go lines of its why, in a listed copy", () => {
    const model = readFileSync(join(import.meta.dirname, "../../MODEL.md"), "utf8");
    const copies = new Set([...model.matchAll(/^\| looprig\/\w+ \| `([^`]+\.go)` \| [0-9a-f]{12}\b/gm)].map((m) => m[1]!.split("/").pop()!));
    const page = readFileSync(join(import.meta.dirname, "../../CONFORMANCE.md"), "utf8");
    const rules = page.split("\n").filter((line) => /^\| `[a-z0-9-]+` \|.*\| \d+ \| \d+ \| \d+ \|$/.test(line));
    expect(rules.length).toBeGreaterThan(5);
    const problems: string[] = [];
    for (const line of rules) {
      const rule = /^\| `([a-z0-9-]+)`/.exec(line)![1]!;
      const why = line.split(" | ")[2]!;
      if (!why.includes("Go: ")) problems.push(`${rule}: no "Go:"`);
      for (const [, file, at] of why.matchAll(/`([\w/.-]+\.go)(?::(\d+))?`/g)) {
        if (at === undefined) problems.push(`${rule}: ${file} without a line`);
        else if (!copies.has(file!)) problems.push(`${rule}: ${file} is not in MODEL.md's copies read`);
      }
    }
    expect(problems).toEqual([]);
  });

  it.each(Object.keys(CARRIERS))("%s: a Go-form event comes back byte for byte", (name) => {
    const r = roundTrip(CARRIERS[name]!);
    expect(r.ok && r.text).toBe(CARRIERS[name]);
  });
});

describe.each(rows.map((r) => [`${r.goType}.${r.json}`, r] as const))("%s", (_, row) => {
  it("is present where the row is tested, and read back as written", () => {
    expect(CARRIERS[row.carrier], row.carrier).toBeDefined();
    const wire = JSON.parse(CARRIERS[row.carrier]!) as Json;
    expect(get(wire, row.path)).not.toBeUndefined();
    const r = roundTrip(CARRIERS[row.carrier]!);
    expect(r.ok && get(r.wire, row.path)).toEqual(get(wire, row.path));
  });

  const zero = row.zero;
  if (zero === "omitted") {
    it("omits its zero", () => {
      const r = mutated(row, (w) => set(w, row.path, ZEROS[row.kind]));
      expect(r.ok, String(!r.ok && r.error)).toBe(true);
      expect(r.ok && get(r.wire, row.path)).toBeUndefined();
    });
  } else if (zero.startsWith("written")) {
    const literal = JSON.parse(/`(.*)`/.exec(zero)![1]!) as unknown;
    it(`writes ${JSON.stringify(literal)} when absent`, () => {
      const r = mutated(row, (w) => set(w, row.path, undefined));
      expect(r.ok, String(!r.ok && r.error)).toBe(true);
      expect(r.ok && get(r.wire, row.path)).toEqual(literal);
    });
  } else if (zero === "kept empty") {
    it("omits it when absent and keeps it when empty", () => {
      const absent = mutated(row, (w) => set(w, row.path, undefined));
      expect(absent.ok && get(absent.wire, row.path)).toBeUndefined();
      const empty = mutated(row, (w) => set(w, row.path, ZEROS[row.kind]));
      expect(empty.ok, String(!empty.ok && empty.error)).toBe(true);
      expect(empty.ok && get(empty.wire, row.path)).not.toBeUndefined();
    });
  } else if (zero === "required" || zero === "rule") {
    it(zero === "required" ? "refuses the event without it" : "refuses its zero, by the rule the row names", () => {
      const r = mutated(row, (w) => {
        linked(row, w, ZEROS[row.kind]);
        set(w, row.path, zero === "required" ? undefined : ZEROS[row.kind]);
      });
      expect(r.ok).toBe(false);
    });
  } else {
    throw new Error(`${row.goType}.${row.json}: unknown zero column ${zero}`);
  }

  if (row.kind !== "raw") {
    it("refuses a wrong JSON type", () => {
      const r = mutated(row, (w) => set(w, row.path, WRONG[row.kind]));
      expect(r.ok).toBe(false);
    });
  }

  const items = /^(\d+) items$/.exec(row.cap);
  const bytes = /^(\d+) bytes$/.exec(row.cap);
  const most = /^≤ (\d+)$/.exec(row.cap);
  if (items) {
    const n = Number(items[1]);
    it(`holds ${n} items and refuses ${n + 1}`, () => {
      const fill = (count: number) => (w: Json) => {
        const list = get(w, row.path) as unknown[];
        set(w, row.path, [...list, ...Array.from({ length: count - list.length }, () => list[list.length - 1])]);
      };
      const at = mutated(row, fill(n));
      expect(at.ok, String(!at.ok && at.error)).toBe(true);
      expect(mutated(row, fill(n + 1)).ok).toBe(false);
    });
  } else if (bytes) {
    const n = Number(bytes[1]);
    it(`holds ${n} UTF-8 bytes and refuses ${n + 1}, counting bytes, not characters`, () => {
      const put = (value: string) => (w: Json) => {
        linked(row, w, value);
        set(w, row.path, value);
      };
      for (const [fits, over] of [
        ["a".repeat(n), "a".repeat(n + 1)],
        ["é".repeat(n / 2), `${"é".repeat(n / 2)}a`],
      ] as const) {
        const at = mutated(row, put(fits));
        expect(at.ok, String(!at.ok && at.error)).toBe(true);
        expect(mutated(row, put(over)).ok).toBe(false);
      }
    });
  } else if (most) {
    const n = Number(most[1]);
    it(`holds ${n} and refuses ${n + 1}`, () => {
      expect(mutated(row, (w) => set(w, row.path, n)).ok).toBe(true);
      expect(mutated(row, (w) => set(w, row.path, n + 1)).ok).toBe(false);
    });
  } else if (row.cap !== "—") {
    throw new Error(`${row.goType}.${row.json}: unknown cap column ${row.cap}`);
  }
});
