/**
 * The bus core: what the layers below the bus (subscriptions, replay, the answer path, the
 * session handle) get of it, built once by bus.ts. Each takes its own narrow part of it
 * (`SubscribeContext` in subscribe/context.ts, `CommandsContext` in commands/context.ts);
 * this is the whole, which the bus builds and the session handle takes. None of them
 * imports bus.ts; the lint configuration refuses it. Namespace and stream live in
 * `settings` only.
 */
import type { CommandsContext } from "./commands/context.js";

export type BusContext<E> = CommandsContext<E>;
