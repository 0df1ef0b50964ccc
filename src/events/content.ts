/**
 * The model's messages, as the Go runtime writes them in StepDone, TurnStarted and
 * TurnDone: a role, typed content blocks, and per kind of message its own fields.
 *
 * Blocks keep the runtime's wire names — its Go field names, PascalCase (`Text`, `ID`,
 * `Input`) — and are written with sorted keys, as the runtime writes them; in TypeScript
 * they are camelCase like everything else. `tool_use_id` is the model provider's id for a
 * tool call (`toolu_01…`), not jetloop's tool execution id: nothing in a StepDone links the
 * two, so nothing here pretends to.
 */
import { z } from "zod";
import { rawJsonSchema } from "../wire/raw-json-schema.js";
import { sortedKeys, wireField, withValueCodec } from "../wire/wire.js";
import { canonicalBase64 } from "./bytes.js";
import { text } from "./text.js";

/**
 * The runtime's caps on a decoded message list (core's block codec and the event codec):
 * at most this many blocks in one `[]Block`, and messages in one StepDone.
 */
export const MAX_BLOCKS = 10_000;
export const MAX_STEP_MESSAGES = 10_000;

/**
 * Bytes, as Go reads and writes a []byte: standard base64, which Go decodes ignoring line
 * breaks and unused trailing bits and writes back canonically; jetloop normalizes the same
 * way. `""` is an empty, non-nil slice (written `""`), distinct from absent (`null`), so
 * the codec keeps it.
 */
export const bytesSchema = withValueCodec(
  z
    .string()
    .refine((v) => canonicalBase64(v) !== undefined, "must be standard base64")
    .transform((v) => canonicalBase64(v)!),
  {
    toWire: (v) => v,
    fromWire: (v) => v,
    // Padded standard base64; Go skips line breaks anywhere in it.
    jsonSchema: {
      type: "string",
      pattern: "^[\\r\\n]*(([A-Za-z0-9+/][\\r\\n]*){4})*(([A-Za-z0-9+/][\\r\\n]*){2}=[\\r\\n]*=|([A-Za-z0-9+/][\\r\\n]*){3}=)?[\\r\\n]*$",
      contentEncoding: "base64",
    },
  },
);

/** A Go field without a JSON tag: its own name on the wire, written even when empty. */
const goField = <S extends z.ZodType>(name: string, schema: S) => wireField(schema, { name, always: true });
/** The same, where Go writes an absent value as null (a nil []byte). */
const goBytes = (name: string) => wireField(bytesSchema.optional(), { name, always: true, nullable: true });

/** Any JSON value, kept as written (a json.RawMessage): a RawJson. */
const rawJson = rawJsonSchema();

const block = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  sortedKeys(z.object({ type: z.literal(type), ...shape }));

export const textBlockSchema = block("text", { text: goField("Text", text().optional()) });
/** Refused by the model: kept apart from text so a refusal never reads as prose. */
export const refusalBlockSchema = block("refusal", { text: goField("Text", text().optional()) });
export const thinkingBlockSchema = block("thinking", {
  thinking: goField("Thinking", text().optional()),
  signature: goField("Signature", text().optional()),
  /** Tagged omitempty in Go, unlike its neighbours. */
  signatureFormat: wireField(text().optional(), { name: "SignatureFormat" }),
  providerState: wireField(rawJson.optional(), { name: "ProviderState" }),
  providerStateFormat: wireField(text().optional(), { name: "ProviderStateFormat" }),
});
export const toolUseBlockSchema = block("tool_use", {
  /** The model provider's id of this call. */
  id: goField("ID", text().optional()),
  name: goField("Name", text().optional()),
  /** The tool's input exactly as the model wrote it. */
  input: wireField(rawJson.optional(), { name: "Input", always: true, nullable: true }),
  providerState: wireField(rawJson.optional(), { name: "ProviderState" }),
  providerStateFormat: wireField(text().optional(), { name: "ProviderStateFormat" }),
});
export const imageBlockSchema = block("image", {
  mediaType: goField("MediaType", text().optional()),
  source: goField("Source", z.object({ url: goField("URL", text().optional()), data: goBytes("Data") }).optional()),
});
export const audioBlockSchema = block("audio", { mediaType: goField("MediaType", text().optional()), data: goBytes("Data") });
export const documentBlockSchema = block("document", {
  mediaType: goField("MediaType", text().optional()),
  name: goField("Name", text().optional()),
  data: goBytes("Data"),
  text: goField("Text", text().optional()),
});

/** The blocks that hold no blocks: one list for the types and the union below. */
const leafBlockSchemas = [
  textBlockSchema,
  refusalBlockSchema,
  thinkingBlockSchema,
  toolUseBlockSchema,
  imageBlockSchema,
  audioBlockSchema,
  documentBlockSchema,
] as const;
/** The blocks that hold no blocks (text, refusal, thinking, tool use, image, audio, document). */
export type LeafBlock = z.output<(typeof leafBlockSchemas)[number]>;
/** A block that holds no blocks, as a writer gives it. */
export type LeafBlockInput = z.input<(typeof leafBlockSchemas)[number]>;

/** A tool's result as the model reads it: blocks, and whether it is an error. */
export interface ToolResultBlock {
  type: "tool_result";
  toolUseId?: string | undefined;
  content?: ContentBlock[] | undefined;
  isError?: boolean | undefined;
}
/** A content block of a message, told apart by `type`. */
export type ContentBlock = LeafBlock | ToolResultBlock;

/** What a block is built from: raw JSON fields (a tool's input) may be any JSON value. */
export interface ToolResultBlockInput {
  type: "tool_result";
  toolUseId?: string | undefined;
  content?: ContentBlockInput[] | undefined;
  isError?: boolean | undefined;
}
/** A content block as a writer gives it: raw JSON fields (a tool's input) may be any JSON value. */
export type ContentBlockInput = LeafBlockInput | ToolResultBlockInput;

// Written out rather than with `block`: the getter (a block may contain blocks) must
// not be read before contentBlockSchema exists.
export const toolResultBlockSchema: z.ZodType<ToolResultBlock, ToolResultBlockInput> = sortedKeys(
  z.object({
    type: z.literal("tool_result"),
    toolUseId: wireField(text().optional(), { always: true }),
    get content() {
      return z.array(contentBlockSchema).max(MAX_BLOCKS).optional();
    },
    isError: z.boolean().optional(),
  }),
);

export const contentBlockSchema: z.ZodType<ContentBlock, ContentBlockInput> = z.discriminatedUnion("type", [
  ...leafBlockSchemas,
  toolResultBlockSchema as unknown as typeof textBlockSchema,
]);

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const usageShape = (always: boolean) => ({
  inputTokens: wireField(count.optional(), { name: "InputTokens", always }),
  outputTokens: wireField(count.optional(), { name: "OutputTokens", always }),
  cacheReadTokens: wireField(count.optional(), { name: "CacheReadTokens", always }),
  cacheCreationTokens: wireField(count.optional(), { name: "CacheCreationTokens", always }),
  reasoningTokens: wireField(count.optional(), { name: "ReasoningTokens", always }),
});
/**
 * Token usage of one model response (zero counts omitted). Recorded verbatim, as the pinned
 * core records it in both directions (content/message.go): a provider may report more
 * reasoning than output tokens, and core's ReasoningWithinOutput is a predicate, no gate.
 */
export const messageUsageSchema = z.object(usageShape(false));
/** Token usage of a whole turn: all five counts written. */
export const turnUsageSchema = z.object(usageShape(true));
/** Token usage: of one model response (zero counts omitted) or of a whole turn (all five written). */
export interface Usage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  cacheReadTokens?: number | undefined;
  cacheCreationTokens?: number | undefined;
  reasoningTokens?: number | undefined;
}

const blocks = z.array(contentBlockSchema).max(MAX_BLOCKS).optional();
const role = wireField(text().optional(), { always: true });
/** A pointer in Go: `"usage":{}` (a response that reported zero usage) is kept as written. */
const aiUsage = wireField(messageUsageSchema.optional(), { keepEmpty: true });

/** A message whose role the runtime does not check (TurnStarted's user message). */
export const userMessageSchema = z.object({ role, blocks });
/** The model's response (TurnDone's final message). */
export const aiMessageSchema = z.object({ role, blocks, usage: aiUsage });

/** The roles of a StepDone's messages. */
export const MESSAGE_ROLES = ["assistant", "tool", "user", "system"] as const;

/** One message of a StepDone: the model's response, then one message per tool result. */
export const stepMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("assistant"), blocks, usage: aiUsage }),
  z.object({
    role: z.literal("tool"),
    blocks,
    /** The model provider's id of the call this result answers. */
    toolUseId: wireField(text().optional(), { always: true }),
    isError: z.boolean().optional(),
  }),
  z.object({ role: z.literal("user"), blocks }),
  z.object({ role: z.literal("system"), blocks }),
]);

/** A message whose role the runtime does not check (TurnStarted's user message). */
export interface UserMessage {
  role?: string | undefined;
  blocks?: ContentBlock[] | undefined;
}

/** The model's response (TurnDone's final message). `usage: {}` (zero usage reported) is kept as written. */
export interface AIMessage extends UserMessage {
  usage?: Usage | undefined;
}

/** One message of a StepDone: the model's response, then one message per tool result. */
export type StepMessage =
  | { role: "assistant"; blocks?: ContentBlock[] | undefined; usage?: Usage | undefined }
  | {
      role: "tool";
      blocks?: ContentBlock[] | undefined;
      /** The model provider's id of the call this result answers. */
      toolUseId?: string | undefined;
      isError?: boolean | undefined;
    }
  | { role: "user"; blocks?: ContentBlock[] | undefined }
  | { role: "system"; blocks?: ContentBlock[] | undefined };
