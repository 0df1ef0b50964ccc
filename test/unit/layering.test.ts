// The layering rule (eslint.config.js, src/README.md's table) can fail: every layer's file
// importing every other layer is linted with the project's own no-restricted-imports entries,
// and refused exactly where the table says the import goes upward or sideways.
import { readFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { ESLint, type Linter } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";

// The config is plain JavaScript (no types): loaded by path.
const CONFIG: string = "../../eslint.config.js";
const config = ((await import(CONFIG)) as { default: Linter.Config[] }).default;

/** A module in each room of src/, as an importer and as a target. */
const PLACES = {
  errors: "src/errors.ts",
  wire: "src/wire/wire.ts",
  events: "src/events/ids.ts",
  subjects: "src/subjects/subjects.ts",
  codec: "src/codec/codec.ts",
  options: "src/options.ts",
  telemetry: "src/telemetry/index.ts",
  partition: "src/partition/partition.ts",
  projection: "src/projection/types.ts",
  connection: "src/connection/options.ts",
  streams: "src/streams/shards.ts",
  journal: "src/journal/journal-range.ts",
  parking: "src/parking/parked-store.ts",
  publish: "src/publish/publisher.ts",
  sources: "src/sources/source.ts",
  feed: "src/feed/feeds.ts",
  group: "src/group/group-source.ts",
  subscribe: "src/subscribe/subscription.ts",
  commands: "src/commands/answer.ts",
  operate: "src/operate/operations.ts",
  policy: "src/policy/policy-service.ts",
  "bus-context": "src/bus-context.ts",
  session: "src/session.ts",
  jetloop: "src/jetloop.ts",
  bus: "src/bus.ts",
  index: "src/index.ts",
  catalog: "src/catalog/catalog.ts",
  attach: "src/attach/attach.ts",
  gateway: "src/gateway/handler.ts",
  cli: "src/cli/main.ts",
  web: "src/web/app.ts",
} as const;
type Place = keyof typeof PLACES;

/** The room of a module: its folder under src/ (`wire/`) or its file (`errors.ts`). */
function roomOf(file: string): string {
  const [first, second] = file.replace(/^src\//, "").split("/");
  return second === undefined ? first! : `${first}/`;
}

/** src/README.md's layer table: each room's floor (1 at the bottom), from the rows numbered in its first column. */
const FLOOR_OF: ReadonlyMap<string, number> = new Map(
  readFileSync(new URL("../../src/README.md", import.meta.url), "utf8")
    .split("\n")
    .map((line) => /^\| (\d+) \| ([^|]+) \|/.exec(line))
    .filter((m) => m !== null)
    .flatMap((m) => [...m[2]!.matchAll(/`([^`]+)`/g)].map((r) => [r[1]!, Number(m[1])] as const)),
);

/** src/README.md's tables: may `from` import `to`? */
function allowed(from: Place, to: Place): boolean {
  const [f, t] = [roomOf(PLACES[from]), roomOf(PLACES[to])];
  if (f === t) return true;
  const [ff, ft] = [FLOOR_OF.get(f), FLOOR_OF.get(t)];
  if (ff !== undefined) return ft !== undefined && ft < ff; // a floor: only the floors below
  if (from === "web") return to === "codec" || to === "projection";
  if (from === "jetloop") return ft !== undefined; // the facade's interface: every floor
  if (from === "bus") return to !== "gateway" && to !== "cli" && to !== "web" && to !== "catalog" && to !== "attach";
  if (from === "catalog") return to !== "gateway" && to !== "cli" && to !== "web" && to !== "index" && to !== "attach";
  if (from === "attach") return to !== "gateway" && to !== "cli" && to !== "web" && to !== "index";
  if (from === "index") return to !== "cli" && to !== "web"; // the package surface exports the gateway
  if (from === "gateway") return to !== "cli" && to !== "web" && to !== "index" && to !== "attach";
  return to !== "web"; // cli
}

function specifier(from: string, to: string): string {
  const r = relative(dirname(from), to).replace(/\.ts$/, ".js");
  return r.startsWith(".") ? r : `./${r}`;
}

const layering = config.filter((c) => c.rules?.["no-restricted-imports"] !== undefined);
const eslint = new ESLint({ overrideConfigFile: true, overrideConfig: [{ languageOptions: { parser: tseslint.parser } }, ...layering] });

describe("the layering rule", () => {
  it("has entries to test", () => expect(layering.length).toBeGreaterThan(3));

  it("reads every room of src/README.md's floors, and a module of each is among the places", () => {
    expect(FLOOR_OF.size).toBeGreaterThan(15);
    const placed = new Set(Object.values(PLACES).map(roomOf));
    expect([...FLOOR_OF.keys()].filter((room) => !placed.has(room))).toEqual([]);
  });

  const from = Object.keys(PLACES) as Place[];
  for (const f of from) {
    it(`${f} imports only what src/README.md allows`, async () => {
      for (const t of from.filter((t) => t !== f)) {
        for (const form of ["import type { X } from", "export * from", "import"] as const) {
          const code = `${form} ${JSON.stringify(specifier(PLACES[f], PLACES[t]))};\n`;
          const [result] = await eslint.lintText(code, { filePath: PLACES[f] });
          const refused = result!.messages.some((m) => m.ruleId === "no-restricted-imports");
          expect(refused, `${PLACES[f]}: ${code.trim()}`).toBe(!allowed(f, t));
        }
      }
    });
  }
});
