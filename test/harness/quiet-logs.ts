// vitest setupFile of the integration projects: the bus's default logger writes warnings
// to stderr (a test provokes many on purpose: permission violations, poison, gaps). They
// are held per test and printed only when the test fails, so a green run is quiet.
import { beforeEach } from "vitest";

const write = process.stderr.write.bind(process.stderr);
let held: string[] = [];

process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
  // Only the logger's JSON lines (pino: {"level":…); anything else passes straight through.
  if (text.startsWith('{"level":')) {
    held.push(text);
    const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    callback?.();
    return true;
  }
  return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
});

beforeEach(({ onTestFailed }) => {
  held = [];
  onTestFailed(() => {
    for (const line of held) write(line);
  });
});
