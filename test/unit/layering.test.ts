// The layering rule (eslint.config.js, src/README.md's table) can fail: every layer's file
// importing every other layer is linted with the project's own no-restricted-imports entries,
// and refused exactly where the table says the import goes upward or sideways.
import { dirname, relative } from "node:path";
import { ESLint, type Linter } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";

// The config is plain JavaScript (no types): loaded by path.
const CONFIG: string = "../../eslint.config.js";
const config = ((await import(CONFIG)) as { default: Linter.Config[] }).default;

/** A module in each place of src/, as an importer and as a target. */
const PLACES = {
  errors: "src/errors.ts",
  wire: "src/wire/wire.ts",
  events: "src/events/ids.ts",
  subjects: "src/subjects/subjects.ts",
  codec: "src/codec/codec.ts",
  publish: "src/publish/publisher.ts",
  feed: "src/subscribe/feed/feeds.ts",
  "bus-context": "src/bus-context.ts",
  projection: "src/projection/types.ts",
  bus: "src/bus.ts",
  index: "src/index.ts",
  catalog: "src/catalog/catalog.ts",
  attach: "src/attach/attach.ts",
  gateway: "src/gateway/handler.ts",
  cli: "src/cli/main.ts",
  web: "src/web/app.ts",
} as const;
type Place = keyof typeof PLACES;

const FLOOR: readonly Place[] = ["errors", "wire", "events", "subjects", "codec"];
const RUNTIME: readonly Place[] = ["publish", "feed", "bus-context", "projection"];

/** src/README.md's table: may `from` import `to`? */
function allowed(from: Place, to: Place): boolean {
  if (FLOOR.includes(from)) return FLOOR.indexOf(to) !== -1 && FLOOR.indexOf(to) < FLOOR.indexOf(from);
  if (from === "web") return to === "codec" || to === "projection";
  if (RUNTIME.includes(from)) return FLOOR.includes(to) || RUNTIME.includes(to);
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
