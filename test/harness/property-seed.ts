// vitest setupFile of every project: fast-check's global seed is this process's seed
// (property.ts), and a failing test prints it, so the inputs that failed can be made again.
// Setup files run before each test file; the seed is one per process (kept in property.ts).
import fc from "fast-check";
import { beforeEach } from "vitest";
import { propertySeed } from "./property.js";

const seed = propertySeed();
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });

beforeEach(({ onTestFailed, task }) => {
  onTestFailed(() => {
    process.stderr.write(`[jetloop] generated inputs of "${task.name}" came from seed ${seed}: JETLOOP_SEED=${seed} reproduces them\n`);
  });
});
