// The users of a nats-server `authorization { users: [...] }` block and their grants, read
// from an example configuration file (deploy/nats/permissions*.example.conf), so a test
// over "every subject the example grants" covers a grant added to the file later without
// being told of it.

/** One user of the block, as the file grants it. */
export interface UserGrants {
  readonly user: string;
  readonly password: string;
  /** False for a user without a permissions block (unrestricted: the operator). */
  readonly restricted: boolean;
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
}

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

/** The text without comments: "#" to the end of the line (no subject or password of the examples holds one). */
function uncommented(text: string): string {
  return text.replace(/#[^\n]*/g, "");
}

/** The quoted strings of `<key>: { allow: [ ... ] }` inside `block`, or [] when it has none. */
function allowList(block: string, key: "publish" | "subscribe"): string[] {
  const m = new RegExp(`\\b${key}\\s*:\\s*\\{\\s*allow\\s*:\\s*\\[([^\\]]*)\\]`).exec(block);
  if (!m) return [];
  return [...m[1]!.matchAll(/"([^"]*)"/g)].map((q) => q[1]!);
}

/** Every user of the file, in order; throws when the file names none (a parser that finds nothing proves nothing). */
export function parseUserGrants(text: string): UserGrants[] {
  const plain = uncommented(text);
  const starts = [...plain.matchAll(/\{\s*user\s*:\s*([^,\s}]+)\s*,\s*password\s*:\s*([^,\s}]+)/g)];
  if (starts.length === 0) throw new Error("no `{ user: …, password: … }` entry found");
  return starts.map((m, i) => {
    const block = plain.slice(m.index, starts[i + 1]?.index ?? plain.length);
    const publish = allowList(block, "publish");
    const subscribe = allowList(block, "subscribe");
    return { user: m[1]!, password: m[2]!, restricted: /\bpermissions\s*:/.test(block), publish, subscribe };
  });
}

/** The session ids a grant names (UUID tokens). */
export function sessionsNamed(grants: readonly string[]): Set<string> {
  return new Set(grants.flatMap((g) => g.match(UUID) ?? []));
}

/**
 * A follower: restricted, and every grant outside the JetStream API and its own inbox names
 * a session (no namespace-wide subject: the runtime writes `acme.journal.>`, the gateway
 * reads `acme.feed.>`).
 */
export function isFollower(u: UserGrants): boolean {
  if (!u.restricted) return false;
  const own = [...u.publish, ...u.subscribe].filter((g) => !g.startsWith("$JS.") && !g.startsWith("_INBOX"));
  return own.length > 0 && own.every((g) => (g.match(UUID) ?? []).length > 0);
}

/** The user's inbox prefix: the one `_INBOX….>` subscribe grant (the example's rule for every restricted user). */
export function inboxPrefixOf(u: UserGrants): string {
  const inboxes = u.subscribe.filter((g) => /^_INBOX[^.]*\.>$/.test(g));
  if (inboxes.length !== 1) throw new Error(`${u.user}: expected one _INBOX….> grant, found ${JSON.stringify(inboxes)}`);
  return inboxes[0]!.slice(0, -2);
}
