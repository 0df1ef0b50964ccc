// The public surface of jetloop. Everything a user imports comes from here, each name
// listed and grouped by what a user does with it: a new export is a decision (reviewed in
// etc/jetloop.api.md), and internals (filter resolution, consumer templates, the bus's
// context, the zod schemas that check values) stay inside. Options and events are
// interfaces; their schemas are kept the same by test/unit/public-types.test.ts.

// --- Connect and publish ------------------------------------------------------------
// A bus: connect (or wrap a NATS connection), provision the journal, publish events.
export { connect, fromConnection, type Jetloop, type BusProvisionReport, type ConnectOptions, type ProvisionRequest } from "./bus.js";
export { type JournalLocation, type PublishAllOptions, type ShardProvisionReport } from "./bus.js";
export type { ConnectionSettings } from "./connection/connect.js";
export type { BusOptions, BusSettings, ReadConsumersOption, TlsFiles } from "./connection/options.js";
export { FEATURES, MINIMUM_SERVER, type Feature } from "./subjects/server-features.js";
export { HEADER_LAST_JOURNAL_SEQ, type PublishOptions, type PublishResult } from "./publish/publisher.js";
export { type ReconcileOptions, type StoredEvent } from "./publish/reconcile.js";
export { type Durability, type DurabilityWarning, type SyncSetting } from "./streams/durability.js";
export type { SessionHandle } from "./session.js";

// --- Events: the model the Go runtime writes -----------------------------------------
export { createEvent, type AnyDef, type Fields, type Stamped } from "./events/factories.js";
export {
  builtInTypes,
  defaultRegistry,
  GateOpened,
  GateResolved,
  LoopIdle,
  LoopStarted,
  PermissionDecided,
  PermissionRequested,
  SessionIdle,
  SessionStarted,
  SessionStopped,
  StepDone,
  ToolCallCompleted,
  ToolCallStarted,
  TurnDone,
  TurnFailed,
  TurnInterrupted,
  TurnStarted,
  UserInputRequested,
  type BuiltInDefinition,
  type EventType,
  type JetloopEvent,
  type LoopEventHeader,
  type PermissionEffect,
  type SessionEventHeader,
  type StepEventHeader,
  type TurnError,
  type TurnEventHeader,
} from "./events/catalogue.js";
export { AGENCY_MACHINE, AGENCY_USER, goTimestamp } from "./events/header.js";
export type { Cause, Coordinate, EventHeader, Visibility } from "./events/header.js";
export {
  GATE_KINDS,
  GATE_RESOLUTION_REASONS,
  GATE_RESOLVERS,
  gateIdentity,
  type Gate,
  type GateCoordinates,
  type GateAudit,
  type GateControl,
  type GateField,
  type GatePrompt,
  type GateResponse,
  type GateResponsePolicy,
  type GateSource,
  type GateSubject,
} from "./events/gate.js";
export {
  COMMAND_EXECUTE,
  COMMAND_START_GRANT,
  decodePermissionRequest,
  encodePermissionRequest,
  validatePermissionRequest,
  type PermissionCandidate,
  type PermissionRequest,
  type PermissionRequestInput,
  type PermissionRequirement,
} from "./events/request.js";
export { MESSAGE_ROLES, type AIMessage, type ContentBlock, type ContentBlockInput, type LeafBlock, type LeafBlockInput, type ToolResultBlockInput, type StepMessage, type ToolResultBlock, type Usage, type UserMessage } from "./events/content.js";
export type { ToolResultCapture } from "./events/capture.js";
export { checkLoopRuntime, checkManifest, EFFORTS, MANIFEST_SCHEMA_VERSION, type AgentRuntime, type ConfigFingerprint, type ConfigManifest, type ModelRuntime } from "./events/runtime.js";
export { NIL_UUID, isCanonicalUuid, newId } from "./events/ids.js";
export { limits, capText } from "./events/text.js";
export { safeValidateEvent, validateEvent, type SafeResult } from "./events/validate.js";
// An application's own event types: a zod shape per body, so uuidSchema and goMapSchema
// are the two building blocks the surface keeps.
export {
  defineEventType,
  EventRegistry,
  type EventCheck,
  type EventClass,
  type EventInputOf,
  type EventSchema,
  type EventShape,
  type HeaderShape,
  type EventOf,
  type EventScope,
  type EventTypeDefinition,
  type EventTypeSpec,
  type IdentityProfile,
  type Presence,
  type Violation,
} from "./events/registry.js";
export { uuidSchema } from "./events/ids.js";
/** A Go `map[string]X` field for a custom event type: every key kept (`z.record` drops `__proto__`), written in Go's order. */
export { goMapSchema } from "./wire/go-map-schema.js";

// --- Subscribe: follow, replay and rebuild --------------------------------------------
export type { Delivery, DurableDelivery, DeliveryFailure } from "./sources/delivery.js";
export type { EventFilter, LoopScope } from "./sources/filter.js";
export type {
  CommonSubscribeOptions,
  DurableSubscribeOptions,
  FeedMode,
  FeedSubscribeOptions,
  GroupOptions,
  ReportBody,
  ShardPositions,
  StartPosition,
  SubscribeOptions,
  SubscribeStart,
  SubscriptionReport,
} from "./sources/options.js";
export type { ReplayOptions } from "./subscribe/replay.js";
export { type Subscription, type DurableSubscription, type SubscriptionStats } from "./subscribe/subscription.js";
export {
  GateLedger,
  type GateLedgerOptions,
  type GateViolation,
  type LedgerEvent,
  type LedgerGate,
  type LedgerOpened,
  type LedgerResolved,
  type LedgerVerdict,
  rebuildToolActivity,
  ToolActivityProjection,
  type ApplyResult,
  type DecisionFact,
  type GateFact,
  type GateResolutionFact,
  type InputFact,
  type JournalRef,
  type LiveCompletionFact,
  type LiveOverlay,
  type LiveStartFact,
  type RequestFact,
  type ResultFact,
  type ToolActivity,
  type ToolActivityDelivery,
  type ToolKey,
  type ToolStatus,
  type TurnOutcome,
} from "./projection/index.js";
// The session catalog (src/catalog/README.md): one entry per session, what lists read.
export {
  openSessionCatalog,
  type CatalogReport,
  type CatchUpReport,
  type RebuildReport,
  type SessionCatalog,
  type SessionCatalogOptions,
  type SessionListOptions,
  type SessionPage,
} from "./catalog/catalog.js";
export { ENTRY_MAX_BYTES, type CatalogEntry, type CatalogRow, type Poisoned, type PoisonReason } from "./catalog/entry.js";
export type { SessionLifecycle, SessionState } from "./catalog/fold.js";

// --- Answer: gates, controls, policy --------------------------------------------------
export {
  type GateServer,
  type InputAnswer,
  type InputGate,
  type PermissionAction,
  type PermissionAnswer,
  type PermissionGate,
  type ServeGatesOptions,
  type StepCoordinates,
} from "./commands/gate-server.js";
export type { AnswerOptions } from "./commands/answer.js";
export type { Answer, AnswerInput, AnswerOutcome, AnswerTarget, InputGateAnswer, PermissionGateAnswer } from "./commands/protocol.js";
export { type ControlServer, type ControlHandlers, type InputResult, type InterruptResult } from "./commands/controls-server.js";
export type { ControlOptions, ControlResult, InterruptOptions } from "./commands/controls-client.js";
export { MAX_RULES_LISTED, ruleId, rulesBucketName, type RuleCandidate, type RuleProvenance, type WorkspaceRule, type WorkspaceRules } from "./commands/workspace-rules.js";
export {
  servePolicy,
  type PermissionCase,
  type PolicyBus,
  type PolicyDecide,
  type PolicyDecision,
  type PolicyOptions,
  type PolicyService,
  type PolicyStats,
} from "./policy/policy-service.js";

// --- Operate: subjects, streams, consumers, parking, the gateway, telemetry -----------
export {
  commandSubject,
  eventSubject,
  filterSubject,
  NO_LOOP,
  parkedFilter,
  parkedSubject,
  parseEventSubject,
  parseParkedSubject,
  type Channel,
  type ParkedState,
  type ParsedSubject,
  type SubjectAddress,
  type JournalShard,
  type SubjectSelector,
} from "./subjects/subjects.js";
export { declaredParkedStreamConfig, declaredStreamConfig, defaultParkedStreamName, type StreamVars } from "./streams/declared.js";
export { defaultStreamName } from "./subjects/subjects.js";
export { diffStreamConfig, type FieldDrift, type ProvisionReport } from "./streams/provision.js";
export { retentionLimits, retentionWarnings, type RetentionField, type RetentionLimit, type RetentionWarning } from "./streams/retention.js";
export type { ConsumerFigures, ConsumersReport, GroupFigures, ShardFigures } from "./streams/consumer-figures.js";
export type { RemovedDurable } from "./streams/remove-durable.js";
export type { GroupStatus } from "./group/group-source.js";
export type { GroupPartitionFigures, GroupReport } from "./group/groups-report.js";
export { sessionPartition } from "./partition/partition.js";
export type { Parked, ParkedOwner, ParkedSelection } from "./parking/parked-store.js";
export type { ParkedEntry, ParkInput, ParkReason } from "./parking/parked-entry.js";
export {
  bearerToken,
  CAPABILITIES_JSON,
  createGatewayHandler,
  isLoopback,
  JETLOOP_CAPABILITIES_JSON,
  startGateway,
  type Authenticate,
  type GatewayHandler,
  type GatewayOptions,
  type GatewayPrincipal,
  type ListenOptions,
  type RunningGateway,
  type ServerOptions,
} from "./gateway/index.js";
// Telemetry (src/telemetry/README.md): a delivery's trace context, log lines that join traces, metrics.
export { deliveryContext, publishedContext, withDelivery } from "./telemetry/spans.js";
export { traceLogFields } from "./telemetry/logs.js";
export { METRICS, type MetricDefinition, type MetricKind } from "./telemetry/metrics.js";
export type { BoundarySettings } from "./gateway/boundary.js";
export type { SharedStreams } from "./gateway/sse-stream.js";
export { checkMetricsBind, startMetricsServer, type MetricsServer, type MetricsServerOptions } from "./gateway/metrics-server.js";

// --- Attach: a Go runtime's own session store followed into the journal (src/attach/README.md)
export { attach, type Attach, type AttachOptions, type AttachRole } from "./attach/attach.js";
export type { AttachedSession, AttachReport, DiscoveredVia, SessionState as AttachedSessionState } from "./attach/session-follower.js";
export type { GoHttpOptions } from "./attach/options.js";
export type { LiveFigures } from "./attach/go-live.js";
export type { PreviewFigures } from "./attach/go-previews.js";

// --- Codec: the wire form, for tools and other languages ------------------------------
export {
  DEFAULT_MAX_EVENT_BYTES,
  encodeEvent,
  marshalEvent,
  safeUnmarshalEvent,
  unmarshalEvent,
  unmarshalPreview,
  WIRE_VERSION,
  type CodecOptions,
  type DecodeError,
} from "./codec/codec.js";
/** A json.RawMessage field's value (a tool's input, gate metadata): its JSON text, parsed on demand. */
export { RawJson } from "./wire/raw-json.js";

// --- Errors: each a JetloopError with a stable code and its cause ---------------------
export {
  JetloopError,
  isJetloopError,
  type JetloopErrorCode,
  CommandError,
  ConnectionClosedError,
  ConnectionFailedError,
  DeliveryMismatchError,
  TurnUnheldError,
  EventDecodeError,
  EventEncodeError,
  EventNotPersistableError,
  EventValidationError,
  CatalogEntryError,
  CatalogEntryPoisonedError,
  CatalogError,
  GatewayBindError,
  MessageTooLargeError,
  NotProvisionedError,
  OptionsError,
  ParkingError,
  PermissionDeniedError,
  PolicyTimeoutError,
  ProvisionDriftError,
  PublishConflictError,
  PublishOrderError,
  PublishIdClaimedError,
  PublishError,
  PublishTimeoutError,
  RegistryError,
  RequestDecodeError,
  ServerUnsupportedError,
  SubscriptionError,
  BatchTooLargeError,
  BatchTimeoutError,
  GateClosedError,
  ResolutionIncompleteError,
  ProjectionDeliveryError,
  SubjectError,
  TelemetryUnavailableError,
  ReadConsumersBusyError,
  GoRecordError,
  AttachError,
  type GoRecordProblem,
  type CommandErrorCode,
  type CommandOutcome,
  type DecodeFailure,
  type ValidationRule,
} from "./errors.js";
