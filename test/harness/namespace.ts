// The one namespace generator of the tests, the scenarios and the soak (no vitest here:
// the soak runs the scenarios outside it).

/**
 * A short unique lowercase token ("t" + base36), usable in stream names and subjects.
 * Give each test file its own, so files never share a stream.
 */
export function uniqueNamespace(prefix = "t"): string {
  const rand = Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, "0");
  const time = (Date.now() % 36 ** 4).toString(36).padStart(4, "0");
  return `${prefix}${time}${rand}`;
}
