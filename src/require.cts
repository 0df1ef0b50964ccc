// What `require("jetloop")` loads: jetloop is an ES module only (it uses top-level
// ES module imports of its NATS client), so a CommonJS consumer gets this message instead
// of Node's ERR_PACKAGE_PATH_NOT_EXPORTED.
export {};
throw new Error(
  'jetloop is an ES module and cannot be loaded with require(). Use `import { connect } from "jetloop"` in an ES module ' +
    '(a .mjs/.mts file, or "type": "module" in package.json), or `await import("jetloop")` from CommonJS.',
);
