/**
 * Generates schemas/: JSON Schemas (draft 2020-12) of the wire, for readers in other
 * languages. One file per built-in event type (schemas/events/<Type>.json, and
 * event.json, any of them), one per HTTP body of the gateway (schemas/http/), and
 * schemas/index.json listing them all.
 *
 *   npx tsx scripts/json-schemas.ts          # writes schemas/
 *   npx tsx scripts/json-schemas.ts --check  # exits 1 if a file differs or is missing
 *
 * Events are described from the model (src/events/) by src/wire/wire-json-schema.ts:
 * wire names, value codecs, Go's zeros, with the envelope's `v` and the type's identity
 * profile added here. The HTTP bodies are written by hand in the gateway (src/gateway/),
 * so they are declared below as zod schemas in camelCase, their wire names derived the same
 * way; test/unit/json-schemas.test.ts holds both to the Go runtime's own bytes
 * (test/conformance/data/). test/unit/json-schemas.test.ts also regenerates and compares.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defaultRegistry } from "../src/events/catalogue.js";
import { contentBlockSchema, MAX_BLOCKS } from "../src/events/content.js";
import { causeSchema, timestampSchema } from "../src/events/header.js";
import { NIL_UUID, uuidSchema } from "../src/events/ids.js";
import type { EventTypeDefinition } from "../src/events/registry.js";
import { rawJsonSchema } from "../src/wire/raw-json-schema.js";
import { type JsonSchema, wireJsonSchemas } from "../src/wire/wire-json-schema.js";
import { compareUtf8, wireField } from "../src/wire/wire.js";

export const SCHEMAS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "schemas");
const DRAFT = "https://json-schema.org/draft/2020-12/schema";
/** Identifiers, not locations: files refer to each other relative to these. */
const BASE = "https://jetloop.invalid/schemas/";
/** Written once per file under `$defs`: the recursive content block, and what every event repeats. */
const NAMES = new Map<z.ZodType, string>([
  [contentBlockSchema, "ContentBlock"],
  [uuidSchema, "Uuid"],
  [timestampSchema, "Timestamp"],
  [causeSchema, "Cause"],
]);
const COORDINATES = { loopId: "loop_id", turnId: "turn_id", stepId: "step_id" } as const;

function sortedProperties(properties: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(properties).sort(([a], [b]) => compareUtf8(a, b)));
}

/**
 * Where a gate event names its resolver. A gate's identity hangs on it (gate.ts's
 * `gateIdentity`, the runtime's rule): a `session` gate needs only its session, any other
 * the full quartet.
 */
const GATE_RESOLVER: Record<string, (resolver: JsonSchema) => JsonSchema> = {
  GateOpened: (resolver) => ({ required: ["gate"], properties: { gate: { type: "object", required: ["resolver"], properties: { resolver } } } }),
  GateResolved: (resolver) => ({ required: ["resolver"], properties: { resolver } }),
};

function gateIdentity(at: (resolver: JsonSchema) => JsonSchema): JsonSchema {
  const set = { not: { const: NIL_UUID } };
  return {
    if: at({ const: "session" }),
    else: { required: Object.values(COORDINATES), properties: Object.fromEntries(Object.values(COORDINATES).map((c) => [c, set])) },
  };
}

/** One event type's wire form: its fields, the envelope's `v`, its identity profile. */
export function eventSchema(def: EventTypeDefinition): JsonSchema {
  const d = wireJsonSchemas({ names: NAMES });
  const body = d.value(def.schema);
  const properties = { ...(body.properties as Record<string, JsonSchema>) };
  const required = new Set(body.required as string[]);
  properties.v = { type: "integer", enum: [0, 1], description: "the wire schema version; absent reads as 1" };
  const uuid = d.value(uuidSchema);
  for (const [coordinate, wire] of Object.entries(COORDINATES)) {
    const presence = def.identity[coordinate as keyof typeof COORDINATES];
    if (presence === "required") {
      properties[wire] = { ...uuid, not: { const: NIL_UUID } };
      required.add(wire);
    } else if (presence === "forbidden") {
      properties[wire] = { const: NIL_UUID, description: "not carried by this type: absent, or the nil UUID" };
    }
  }
  // The identity rule every type shares (validate.ts's checkIdentity): a step belongs to a turn.
  const stepNeedsTurn =
    def.identity.stepId === "forbidden" || def.identity.turnId === "required"
      ? {}
      : {
          if: { required: ["step_id"], properties: { step_id: { not: { const: NIL_UUID } } } },
          then: { required: ["turn_id"], properties: { turn_id: { not: { const: NIL_UUID } } } },
        };
  const defs = d.defs();
  const gate = GATE_RESOLVER[def.type];
  return {
    $schema: DRAFT,
    $id: `${BASE}events/${def.type}.json`,
    title: def.type,
    description:
      `A ${def.type} event as the Go runtime and jetloop's codec write it: ${def.class}, ${def.scope}-scoped, family ${def.family}` +
      `${def.endsTurn ? ", ends its turn" : ""}. Keys Go does not know are ignored; cross-field rules, keys differing from a field ` +
      "only in letter case, duplicate keys and the byte and depth caps are the codec's (see CONFORMANCE.md).",
    type: "object",
    properties: sortedProperties(properties),
    required: [...required].sort(compareUtf8),
    ...stepNeedsTurn,
    ...(gate ? { allOf: [gateIdentity(gate)] } : {}),
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}

// --- HTTP bodies ----------------------------------------------------------------

const text = () => z.string();
const always = <S extends z.ZodType>(s: S) => wireField(s, { always: true });
/** Stands for an event: its own file, by `$ref`, replaces it. */
const EVENT = z.object({ type: z.string() });
const journalEntry = z.object({ journalSeq: z.number().int().min(1), event: EVENT });

interface HttpBody {
  readonly name: string;
  readonly description: string;
  readonly schema: z.ZodType;
}

export const HTTP_BODIES: readonly HttpBody[] = [
  {
    name: "error",
    description: "Every JSON error answer: the error envelope, with a stable code",
    schema: z.object({ error: z.object({ code: text(), message: text(), retryable: always(z.boolean()) }) }),
  },
  {
    name: "capabilities",
    description: "GET /v1/capabilities",
    schema: z.object({ protocol: text(), version: z.number().int(), features: z.array(text()) }),
  },
  {
    name: "session-created",
    description: "POST /v1/sessions (201): the session, and the input command when the request carried blocks",
    schema: z.object({ sessionId: uuidSchema, commandId: uuidSchema.optional() }),
  },
  {
    name: "input-request",
    description: "POST /v1/sessions and POST /v1/sessions/{sid}/input: the user's content blocks (at least one for input)",
    schema: z.object({ blocks: z.array(contentBlockSchema).max(MAX_BLOCKS) }),
  },
  { name: "input-accepted", description: "POST /v1/sessions/{sid}/input (200)", schema: z.object({ commandId: uuidSchema }) },
  { name: "interrupted", description: "POST /v1/sessions/{sid}/interrupt (200)", schema: z.object({ interrupted: always(z.boolean()) }) },
  { name: "restored", description: "POST /v1/sessions/{sid}/restore (200)", schema: z.object({ sessionId: uuidSchema }) },
  {
    name: "gate-answer",
    description:
      "POST /v1/sessions/{sid}/gates/{gid}: the answer, read leniently as Go reads it (other keys ignored; null leaves a field empty; an empty body is no answer)",
    schema: z.object({ action: text().nullable().optional(), values: z.record(z.string(), rawJsonSchema()).nullable().optional() }),
  },
  { name: "gate-answered", description: "POST /v1/sessions/{sid}/gates/{gid} (202): an empty object", schema: z.strictObject({}) },
  {
    name: "journal-page",
    description: "GET /v1/sessions/{sid}/journal: public events in journal order, each with its journal sequence",
    schema: z.object({ events: always(z.array(journalEntry)), nextJournalSeq: always(z.number().int().min(0)), done: always(z.boolean()) }),
  },
  {
    name: "session-status",
    description: "GET /v1/sessions/{sid}/status: the session's state folded from its journal",
    schema: z.object({
      sessionId: uuidSchema,
      state: text().optional(),
      lastJournalSeq: always(z.number().int().min(0)),
      activeTurnId: uuidSchema.optional(),
      waitingGateId: uuidSchema.optional(),
      lastTurn: journalEntry.optional(),
      lastStep: journalEntry.optional(),
      updatedAt: text().optional(),
    }),
  },
  {
    name: "session-list",
    description: "GET /v1/sessions: a page of the session catalog",
    schema: z.object({
      sessions: always(
        z.array(
          z.object({ sessionId: uuidSchema, state: text().optional(), title: text().optional(), createdAt: text().optional(), lastActiveAt: text().optional() }),
        ),
      ),
      skip: always(z.number().int().min(0)),
      limit: always(z.number().int().min(0)),
      nextSkip: always(z.number().int().min(0)),
      done: always(z.boolean()),
    }),
  },
];

/** Replaces the stand-in event object with a reference to events/event.json. */
function referEvents(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(referEvents);
  if (typeof schema !== "object" || schema === null) return schema;
  const o = schema as Record<string, unknown>;
  const props = o.properties as Record<string, JsonSchema> | undefined;
  if (o.type === "object" && props && Object.keys(props).join() === "type" && props.type?.type === "string") return { $ref: "../events/event.json" };
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, referEvents(v)]));
}

export function httpSchema(body: HttpBody): JsonSchema {
  // A body is what the gateway writes (or reads): Go's "zero means absent" is the event reader's rule, not a body's.
  const d = wireJsonSchemas({ names: NAMES, goZeros: false });
  const out = referEvents(d.value(body.schema)) as JsonSchema;
  const defs = d.defs();
  return {
    $schema: DRAFT,
    $id: `${BASE}http/${body.name}.json`,
    title: body.name,
    description: body.description,
    ...out,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}

// --- the files ------------------------------------------------------------------

/** Every file of schemas/, by its path there, with its text. */
export function renderSchemas(): Map<string, string> {
  const files = new Map<string, JsonSchema>();
  const builtIn = [...defaultRegistry.types()].filter((d) => d.builtIn);
  for (const def of builtIn) files.set(`events/${def.type}.json`, eventSchema(def));
  files.set("events/event.json", {
    $schema: DRAFT,
    $id: `${BASE}events/event.json`,
    title: "event",
    description: "Any built-in event, by its type",
    oneOf: builtIn.map((d) => ({ $ref: `${d.type}.json` })),
  });
  for (const body of HTTP_BODIES) files.set(`http/${body.name}.json`, httpSchema(body));
  const index = {
    description: "The JSON Schemas of jetloop's wire: one per event type, one per HTTP body of the gateway",
    events: Object.fromEntries(builtIn.map((d) => [d.type, `events/${d.type}.json`])),
    event: "events/event.json",
    http: Object.fromEntries(HTTP_BODIES.map((b) => [b.name, `http/${b.name}.json`])),
  };
  const out = new Map<string, string>();
  for (const [path, schema] of files) out.set(path, `${JSON.stringify(schema, null, 2)}\n`);
  out.set("index.json", `${JSON.stringify(index, null, 2)}\n`);
  return out;
}

/** The files now in schemas/, by path. */
export function readSchemas(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string, prefix: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name), `${prefix}${entry.name}/`);
      else out.set(`${prefix}${entry.name}`, readFileSync(join(dir, entry.name), "utf8"));
    }
  };
  walk(SCHEMAS_DIR, "");
  return out;
}

function main(): void {
  const rendered = renderSchemas();
  if (process.argv.includes("--check")) {
    let existing: Map<string, string>;
    try {
      existing = readSchemas();
    } catch {
      existing = new Map();
    }
    const differ = [...new Set([...rendered.keys(), ...existing.keys()])].filter((p) => rendered.get(p) !== existing.get(p));
    if (differ.length > 0) {
      process.stderr.write(`schemas/ differs from the generator's output: ${differ.join(", ")}\n`);
      process.exit(1);
    }
    return;
  }
  rmSync(SCHEMAS_DIR, { recursive: true, force: true });
  for (const [path, text] of rendered) {
    mkdirSync(dirname(join(SCHEMAS_DIR, path)), { recursive: true });
    writeFileSync(join(SCHEMAS_DIR, path), text);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
