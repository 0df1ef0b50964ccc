/**
 * 0. The codec alone, in this process, no server: what validation and encoding cost per
 * event, against the floor of doing only the JSON work. These figures explain the ratios
 * of the network benchmarks (a target of 80-90% of a raw client is a budget of a few
 * microseconds per event for everything jetloop adds).
 *   encode: encodeEvent (validate, map to the wire, JSON, UTF-8) vs JSON.stringify + UTF-8
 *           of the already-mapped wire object; on the Go-written mix both for the decoded
 *           events (the library's own: no second validation) and for plain copies of them;
 *   decode: unmarshalEvent (UTF-8, strict JSON, map from the wire, validate) vs UTF-8 +
 *           JSON.parse; on the Go-written mix also by the guided reader alone (the fast
 *           path off: what the fast path saves), and per event type;
 *   validate: validateEvent vs the parse jetloop ran before its hot path was changed
 *           (`schema.safeParse(event, { reportInput: true })`; the rules are the same).
 * Encode and decode run on the benchmark's PermissionDecided and on the Go-written events
 * of the conformance data (every enduring type, tool inputs, long texts: what a journal
 * holds), cycled.
 */
import { defaultRegistry, encodeEvent, unmarshalEvent, validateEvent, type JetloopEvent } from "../src/index.js";
import { decodeEventByReference } from "../src/codec/codec.js";
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { enduringBatch } from "./lib/events.js";
import { median } from "./lib/stats.js";
import { type GoWritten, readJsonl } from "../test/conformance/go-oracle.js";

const N = 20_000;

function perEvent(n: number, f: (i: number) => unknown): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(i);
  return Number(process.hrtime.bigint() - t0) / 1e3 / n;
}

export function runCodec(ctx: BenchContext): Promise<Row[]> {
  const events: JetloopEvent[] = enduringBatch(N);
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const bytes = events.map((e) => encodeEvent(e));
  const wire = bytes.map((b) => JSON.parse(decoder.decode(b)) as unknown);
  const schema = defaultRegistry.get("PermissionDecided")!.schema;
  const pairs: [string, (i: number) => unknown, string, (i: number) => unknown][] = [
    ["encode", (i) => encodeEvent(events[i]!), "JSON.stringify + UTF-8", (i) => encoder.encode(JSON.stringify(wire[i]))],
    ["decode", (i) => unmarshalEvent(bytes[i]!), "UTF-8 + JSON.parse", (i): unknown => JSON.parse(decoder.decode(bytes[i]))],
    ["validate", (i) => validateEvent(events[i]!), "safeParse(e, { reportInput }), as before", (i) => schema.safeParse(events[i]!, { reportInput: true })],
  ];
  const rows: Row[] = [];
  const measure = (label: string, metric: string, jetloop: (i: number) => unknown, rawLabel: string, raw: (i: number) => unknown, n = N): void => {
    const j: number[] = [];
    const r: number[] = [];
    perEvent(n, jetloop);
    perEvent(n, raw);
    for (let k = 0; k < ctx.options.reps; k++) {
      j.push(perEvent(n, jetloop));
      r.push(perEvent(n, raw));
    }
    ctx.log(`codec ${metric} ${label}: jetloop ${median(j).toFixed(2)} µs, ${rawLabel} ${median(r).toFixed(2)} µs`);
    rows.push(compareRow({ bench: "0 codec, no network", metric: `${metric} ${label}`, unit: "µs/event", raw: rawLabel }, j, r));
  };
  const mix = readJsonl<GoWritten>("go-written-events.jsonl");
  const mixBytes = mix.map((w) => encoder.encode(w.json));
  const mixEvents = mixBytes.map((b) => unmarshalEvent(b));
  const mixWire = mix.map((w) => JSON.parse(w.json) as unknown);
  const n = mix.length;
  const size = Math.round(mixBytes.reduce((a, b) => a + b.length, 0) / n);
  measure(`Go-written mix (${n} events, ${size} B avg)`, "encode", (i) => encodeEvent(mixEvents[i % n]!), "JSON.stringify + UTF-8", (i) => encoder.encode(JSON.stringify(mixWire[i % n])));
  // Plain copies of the same events: what a caller builds, validated before it is written
  // (the decoded events above are the library's own, written without a second check).
  const mixPlain: JetloopEvent[] = mixEvents.map((e) => ({ ...e }));
  measure(`Go-written mix, plain objects`, "encode", (i) => encodeEvent(mixPlain[i % n]!), "JSON.stringify + UTF-8", (i) => encoder.encode(JSON.stringify(mixWire[i % n])));
  measure(`Go-written mix (${n} events, ${size} B avg)`, "decode", (i) => unmarshalEvent(mixBytes[i % n]!), "UTF-8 + JSON.parse", (i): unknown => JSON.parse(decoder.decode(mixBytes[i % n])));
  measure(`Go-written mix, guided reader only`, "decode", (i) => decodeEventByReference(mixBytes[i % n]!), "UTF-8 + JSON.parse", (i): unknown => JSON.parse(decoder.decode(mixBytes[i % n])));
  // Per type: each type's Go-written events, cycled (fewer rounds: there are many types).
  const types = [...new Set(mix.map((w) => w.type))].sort();
  for (const type of types) {
    const own = mixBytes.filter((_, k) => mix[k]!.type === type);
    const m = own.length;
    measure(`${type} (${m} Go-written)`, "decode", (i) => unmarshalEvent(own[i % m]!), "UTF-8 + JSON.parse", (i): unknown => JSON.parse(decoder.decode(own[i % m])), N / 4);
  }
  for (const [metric, jetloop, rawLabel, raw] of pairs) measure(`PermissionDecided (${bytes[0]!.length} B)`, metric, jetloop, rawLabel, raw);
  return Promise.resolve(rows);
}
