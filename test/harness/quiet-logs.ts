// vitest setupFile of the integration projects: the bus's default logger writes warnings
// to stderr (a test provokes many on purpose: permission violations, poison, gaps). They
// are held per test and printed only when the test fails, so a green run is quiet.
// Setup files run again before each test file, in a worker that keeps its process (isolate:
// false): stderr is wrapped once per process, and each file's hook resets the one buffer.
import { beforeEach } from "vitest";

type Held = { lines: string[]; write: typeof process.stderr.write };
const KEY = Symbol.for("jetloop.quiet-logs");
const store = globalThis as { [KEY]?: Held };

function install(): Held {
  const held: Held = { lines: [], write: process.stderr.write.bind(process.stderr) };
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    // Only the logger's JSON lines (pino: {"level":…); anything else passes straight through.
    if (text.startsWith('{"level":')) {
      held.lines.push(text);
      const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      callback?.();
      return true;
    }
    return (held.write as (...a: unknown[]) => boolean)(chunk, ...rest);
  });
  return held;
}

const held = (store[KEY] ??= install());

beforeEach(({ onTestFailed }) => {
  held.lines = [];
  onTestFailed(() => {
    for (const line of held.lines) held.write(line);
  });
});
