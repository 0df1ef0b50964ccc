/**
 * Decode micro-benchmark: what decoding (UTF-8 decode, strict JSON, wire mapping,
 * validation) costs per event — `unmarshalEvent` for the journal's events,
 * `unmarshalPreview` for a live preview — next to `JSON.parse` of the same bytes as the
 * baseline.
 *
 *   npx tsx bench/decode.ts
 *
 * Each figure is the median of 5 timed runs of about 250 ms, after a warm-up.
 */
import { createEvent, encodeEvent, marshalEvent, unmarshalEvent, unmarshalPreview } from "../src/index.js";
import { grantRequest, ID, STEP_COORDS } from "../test/fixtures/events.js";

const RUNS = 5;
const RUN_MS = 250;

// The tests' fixtures: a request with a grant and a requirement with candidates.
const coords = STEP_COORDS;
const tool = ID.tool;
const request = grantRequest();

const events = {
  PermissionRequested: marshalEvent(createEvent("PermissionRequested", { ...coords, toolExecutionId: tool, request })),
  StepDone: marshalEvent(
    createEvent("StepDone", {
      ...coords,
      messages: [
        {
          role: "assistant",
          blocks: [
            { type: "text", text: "I will run the tests and read the coverage summary." },
            { type: "tool_use", id: "toolu_01", name: "bash", input: { command: "npm test" } },
            { type: "tool_use", id: "toolu_02", name: "read_file", input: { path: "coverage/summary.txt" } },
          ],
          usage: { inputTokens: 1200, outputTokens: 340 },
        },
        { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: "Test Files  12 passed (12)\n     Tests  318 passed (318)" }] },
        { role: "tool", toolUseId: "toolu_02", blocks: [{ type: "text", text: "All files | 91.2 | 84.0 | 93.5 | 91.2" }] },
      ],
    }),
  ),
  // Ephemeral: encodeEvent, the live channel's encoding, read back by unmarshalPreview.
  ToolCallCompleted: encodeEvent(createEvent("ToolCallCompleted", { ...coords, eventId: ID.tool2, createdAt: "2025-06-01T12:34:56.789Z", toolExecutionId: tool, resultPreview: "318 passed" })),
};
const decoderOf = (name: string) => (name === "ToolCallCompleted" ? unmarshalPreview : unmarshalEvent);

const decoder = new TextDecoder();
let sink: unknown;

/** ns per call of `fn`: the median of RUNS runs. */
function measure(fn: () => unknown): number {
  // Warm up and size one run to about RUN_MS.
  let n = 1;
  for (;;) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink = fn();
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (ms > 50) {
      n = Math.max(1, Math.round((n * RUN_MS) / ms));
      break;
    }
    n *= 2;
  }
  const perOp: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink = fn();
    perOp.push(Number(process.hrtime.bigint() - t) / n);
  }
  perOp.sort((a, b) => a - b);
  return perOp[Math.floor(RUNS / 2)]!;
}

const rows: string[][] = [["event", "bytes", "op", "ns/op", "ops/s", "× JSON.parse"]];
for (const [name, bytes] of Object.entries(events)) {
  const decode = decoderOf(name);
  decode(bytes); // valid before timing
  const base = measure(() => JSON.parse(decoder.decode(bytes)));
  const full = measure(() => decode(bytes));
  const fmt = (ns: number) => [ns.toFixed(0), Math.round(1e9 / ns).toLocaleString("en-US")];
  rows.push([name, String(bytes.length), "JSON.parse (baseline)", ...fmt(base), "1.0"]);
  rows.push([name, String(bytes.length), decode.name, ...fmt(full), (full / base).toFixed(1)]);
}
void sink;

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
console.log(`node ${process.version}, ${RUNS} runs of ~${RUN_MS} ms each, median shown`);
for (const r of rows) console.log(r.map((c, i) => (i >= 3 || i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  "));
