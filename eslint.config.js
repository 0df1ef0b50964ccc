// Type-aware rules: floating and misused promises are the bugs an async NATS client invites.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The floor of src/, bottom up (src/README.md): each layer imports only the layers below it
// (and errors.ts, the bottom of all). Everything else sits above codec/.
const FLOOR = ["wire", "events", "subjects", "codec"];
const floorRules = FLOOR.map((layer, i) => {
  const below = ["errors\\.js$", ...FLOOR.slice(0, i).map((l) => `${l}/`)].join("|");
  return {
    files: [`src/${layer}/**/*.ts`],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: `^\\.\\./(?!(${below}))`,
              message: `src/${layer}/ is a floor layer: it imports only ${["errors.ts", ...FLOOR.slice(0, i).map((l) => `${l}/`)].join(", ")} (src/README.md).`,
            },
          ],
        },
      ],
    },
  };
});

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".nats/", "coverage/"] },
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
    files: ["src/errors.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [{ regex: "^\\.", message: "errors.ts is the bottom of src/: it imports nothing of it." }] }] },
  },
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
);
