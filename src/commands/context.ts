/**
 * What the answer path and the session controls get of the bus (the bus builds it once,
 * src/bus-context.ts): the subscriptions' part (they read the journal: a gate server
 * replays what it left open), and the workspace rules, publishing and the bus's close.
 */
import type { PublishOptions, PublishResult } from "../publish/publisher.js";
import type { SubscribeContext } from "../subscribe/context.js";
import type { WorkspaceRules } from "./workspace-rules.js";

export interface CommandsContext<E> extends SubscribeContext<E> {
  /** The namespace's workspace rules ("Approve always for this workspace"). */
  readonly rules: WorkspaceRules;
  /**
   * `close` runs when the bus closes (an intentional close of what registered it); returns
   * the unregister. Throws ConnectionClosedError once the bus is closed.
   */
  onClose(close: () => Promise<void>): () => void;
  publish(event: E, options?: PublishOptions): Promise<PublishResult>;
  /** The largest encoded event `publish` takes on this connection (`maxEventBytes` less the journal's header room). */
  eventCap(): number;
}
