/** Pure projections over deliveries: the state a reconnecting UI rebuilds. */
export { GateLedger, type GateLedgerOptions, type GateViolation, type LedgerEvent, type LedgerGate, type LedgerOpened, type LedgerResolved, type LedgerVerdict } from "./gate-ledger.js";
export { rebuildToolActivity, ToolActivityProjection } from "./tool-activity.js";
export type {
  ApplyResult,
  DecisionFact,
  GateFact,
  GateResolutionFact,
  InputFact,
  JournalRef,
  LiveCompletionFact,
  LiveOverlay,
  LiveStartFact,
  RequestFact,
  ResultFact,
  ToolActivity,
  ToolActivityDelivery,
  ToolKey,
  ToolStatus,
  TurnOutcome,
} from "./types.js";
