// Type-aware rules: floating and misused promises are the bugs an async NATS client invites.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The floors of src/, bottom up: src/README.md's layer table, the same rooms in the same
// order (test/unit/layering.test.ts reads the table and lints every room importing every
// other against it). A room is a folder (`wire/`, with its subfolders) or a file of src/
// (`errors.ts`); it imports only rooms of the floors below its own, never a room beside
// it. Above the last floor sit the facade (jetloop.ts, bus.ts, index.ts) and its users
// (catalog/, gateway/, cli/, web/), with the rules further down.
const FLOORS = [
  ["errors.ts"],
  ["wire/"],
  ["events/"],
  ["subjects/"],
  ["codec/"],
  ["options.ts", "telemetry/", "partition/", "projection/"],
  ["connection/"],
  ["streams/"],
  ["journal/"],
  ["parking/", "publish/"],
  ["sources/"],
  ["feed/", "group/"],
  ["subscribe/"],
  ["commands/", "operate/"],
  ["policy/", "bus-context.ts"],
  ["session.ts"],
];
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A room as the target of an import specifier: `wire/` its folder, `errors.ts` its module (`errors.js`). */
const target = (room) => (room.endsWith("/") ? escape(room) : `${escape(room.replace(/\.c?ts$/, ""))}\\.c?js$`);
const floorRules = FLOORS.flatMap((floor, i) => {
  const below = FLOORS.slice(0, i).flat();
  const message = `src/README.md's layer table: ${floor.join(", ")} import${floor.length === 1 ? "s" : ""} only the floors below (${below.join(", ") || "nothing of src/"}).`;
  const refuse = (up) => ({ regex: below.length === 0 ? `^${up}` : `^${up}(?!(${below.map(target).join("|")}))`, message });
  return floor.flatMap((room) =>
    room.endsWith("/")
      ? [
          // Out of a folder's own files (../x) and out of its subfolders' (../../x).
          { files: [`src/${room}*.ts`], rules: { "no-restricted-imports": ["error", { patterns: [refuse("\\.\\./")] }] } },
          { files: [`src/${room}*/**/*.ts`], rules: { "no-restricted-imports": ["error", { patterns: [refuse("\\.\\./\\.\\./")] }] } },
        ]
      : [{ files: [`src/${room}`], rules: { "no-restricted-imports": ["error", { patterns: [refuse("\\./")] }] } }],
  );
});

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".nats/", "coverage/", "docs-api/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // The facade (bus.ts) sits on top: the layers below it depend on the narrow
    // BusContext (bus-context.ts), never on the Jetloop class.
    files: ["src/**/*.ts", "src/**/*.cts"],
    // Above the facade: the CLI and the gateway are the SDK's own users.
    ignores: ["src/bus.ts", "src/index.ts", "src/cli/**", "src/gateway/**", "src/catalog/**", "src/attach/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { regex: "(^|/)bus\\.js$", message: "Below the facade: depend on BusContext (src/bus-context.ts), not on bus.ts." },
            { regex: "^(\\.\\.?/)+index\\.js$", message: "Below the facade: import the module itself, not the package surface (src/index.ts)." },
            { regex: "^(\\.\\.?/)+(cli|gateway|web|catalog|attach)/", message: "Below the facade: cli/, gateway/, catalog/, attach/ and web/ are the SDK's users; nothing below imports them (src/README.md)." },
          ],
        },
      ],
    },
  },
  {
    // The page (web/) runs in the browser: it takes only codec/ and projection/ (src/README.md).
    files: ["src/web/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^\\.\\./(?!(codec|projection)/)", message: "src/web/ is the browser page: it imports only codec/ and projection/ (src/README.md)." }] },
      ],
    },
  },
  {
    // The facade: bus.ts takes the runtime only; index.ts (the package surface) also the gateway.
    files: ["src/bus.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "^\\./(cli|gateway|web|catalog|attach)/", message: "bus.ts is the facade: cli/, gateway/, catalog/, attach/ and web/ are its users (src/README.md)." }] }],
    },
  },
  {
    files: ["src/index.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "^\\./(cli|web)/", message: "index.ts is the package surface: cli/ and web/ are not part of it (src/README.md)." }] }],
    },
  },
  {
    // The page (web/) is served as built assets (gateway/web-assets.ts), never imported by the CLI.
    files: ["src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "^\\.\\./web/", message: "src/web/ is the browser page: the CLI never imports it (src/README.md)." }] }],
    },
  },
  {
    // The session catalog sits on the facade, under the gateway and the CLI, which read it, and the package surface, which exports it.
    files: ["src/catalog/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^\\.\\./(cli/|gateway/|web/|attach/|index\\.js$)", message: "src/catalog/ is read by the gateway and the CLI and exported by index.ts; it imports none of them, nor web/ or attach/ (src/README.md)." }] },
      ],
    },
  },
  {
    // The attach follows a Go runtime's store into the journal: on the facade and the catalog (which it feeds); run by the CLI, exported by index.ts.
    files: ["src/attach/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^\\.\\./(cli/|gateway/|web/|index\\.js$)", message: "src/attach/ is run by the CLI and exported by index.ts; it imports neither, nor gateway/ or web/ (src/README.md)." }] },
      ],
    },
  },
  {
    // The gateway sits beside the CLI, which starts it, and under the package surface, which exports it.
    files: ["src/gateway/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^\\.\\./(cli/|web/|attach/|index\\.js$)", message: "src/gateway/ is started by the CLI and exported by index.ts; it imports neither, nor web/ or attach/ (src/README.md)." }] },
      ],
    },
  },
  ...floorRules,
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
);
