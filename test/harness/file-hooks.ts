// vitest setupFile of the integration projects, run before each test file: hooks every file
// needs, registered here because the files share one module graph per worker (isolate:
// false, vitest.config.ts), where a harness module's top-level hook would be registered
// for the first file that imports it only.
import { afterAll } from "vitest";
import { closeTestConnections } from "./context.js";

// After the file's tests: the connections connectTest opened for it.
afterAll(closeTestConnections);
