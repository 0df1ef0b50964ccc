/**
 * A `null` element in an array. Go's reader reads `null` as "leave the zero value": in a
 * slice of structs or strings it is a zero element; in a slice of blocks or messages
 * (interfaces, decoded by their tag) it names no type and is refused. Go's writer never
 * writes one: every slice of the model holds structs or strings, never pointers, and a nil
 * block fails core's MarshalBlock (content/block_json.go, `blockTag`). So jetloop refuses a
 * `null` element in every typed array (CONFORMANCE.md, `null-values`, which names each
 * one), and keeps one inside raw JSON, where it is data.
 *
 * Every array element of every Go-written event (and MODEL.md's carriers) is replaced by `null` in turn; the verdict
 * must be the one the rule gives for the array's key, and every key refused must be named
 * in CONFORMANCE.md's rule.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { CARRIERS } from "./model-carriers.js";
import { reportFigure } from "../harness/figures-log.js";

/** The Go-written events, and the events in Go's form MODEL.md's inventory adds (captures among them). */
const written: GoWritten[] = [...readJsonl<GoWritten>("go-written-events.jsonl"), ...Object.entries(CARRIERS).map(([id, json]) => ({ id, type: "", json }))];

/** The keys CONFORMANCE.md's `null-values` rule names as typed arrays. */
function namedArrays(): Set<string> {
  const page = readFileSync(join(import.meta.dirname, "../../CONFORMANCE.md"), "utf8");
  const row = page.split("\n").find((l) => l.startsWith("| `null-values` |"))!;
  const what = row.split(" | ")[1]!;
  return new Set([...what.slice(what.indexOf("typed array")).matchAll(/`([a-z_]+)`/gi)].map((m) => m[1]!));
}

/** Each array element of valid JSON text: its bounds and the key whose value (or a nested array of it) the array is. */
function elements(text: string): { start: number; end: number; key: string }[] {
  const out: { start: number; end: number; key: string }[] = [];
  let i = 0;
  const space = () => {
    while (" \t\r\n".includes(text[i] ?? "x")) i++;
  };
  const value = (key: string): void => {
    space();
    const c = text[i];
    if (c === "{") {
      i++;
      space();
      if (text[i] === "}") return void i++;
      for (;;) {
        space();
        const ks = i;
        i++;
        while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
        i++;
        const k = JSON.parse(text.slice(ks, i)) as string;
        space();
        i++;
        value(k);
        space();
        if (text[i++] === "}") return;
      }
    }
    if (c === "[") {
      i++;
      space();
      if (text[i] === "]") return void i++;
      for (;;) {
        space();
        const start = i;
        value(key);
        out.push({ start, end: i, key });
        space();
        if (text[i++] === "]") return;
      }
    }
    if (c === '"') {
      i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
      return;
    }
    while (i < text.length && !",]} \t\r\n".includes(text[i]!)) i++;
  };
  value("");
  return out;
}

describe("a null element in an array", () => {
  it("is refused in every typed array (each named in CONFORMANCE.md's rule), kept inside raw JSON", () => {
    const named = namedArrays();
    expect(named.size).toBeGreaterThanOrEqual(10);
    const refusedKeys = new Set<string>();
    let refused = 0;
    let kept = 0;
    for (const w of written) {
      for (const e of elements(w.json)) {
        const text = `${w.json.slice(0, e.start)}null${w.json.slice(e.end)}`;
        const r = safeDecodeEvent(text);
        if (named.has(e.key)) {
          expect(r.success, `${w.id} ${e.key}`).toBe(false);
          refused++;
          refusedKeys.add(e.key);
        } else {
          // Raw JSON: the null is data, written back as it was read.
          expect(r.success, `${w.id} ${e.key}`).toBe(true);
          if (r.success) expect(new TextDecoder().decode(encodeEvent(r.data))).toBe(text);
          kept++;
        }
      }
    }
    reportFigure(`null-elements: ${refused} null elements refused in typed arrays (${[...refusedKeys].sort().join(", ")}), ${kept} kept in raw JSON`);
    expect(refused).toBeGreaterThan(50);
    expect(kept).toBeGreaterThan(0);
  }, 60_000);
});
