// The public surface of jetloop. Everything a user imports comes from here.
export * from "./errors.js";
export { NIL_UUID, isCanonicalUuid, newId, uuidSchema } from "./events/ids.js";
export { limits, capText } from "./events/text.js";
export { AGENCY_MACHINE, AGENCY_USER, goTimestamp } from "./events/header.js";
export type { Cause, EventHeader, Visibility } from "./events/header.js";
export * from "./events/content.js";
export * from "./events/gate.js";
export * from "./events/runtime.js";
export {
  defineEventType,
  EventRegistry,
  type EventClass,
  type EventInputOf,
  type EventOf,
  type EventScope,
  type EventTypeDefinition,
  type EventTypeSpec,
  type IdentityProfile,
  type Presence,
  type Violation,
} from "./events/registry.js";
export * from "./events/catalogue.js";
export {
  COMMAND_EXECUTE,
  COMMAND_START_GRANT,
  decodePermissionRequest,
  encodePermissionRequest,
  permissionRequestSchema,
  validatePermissionRequest,
  type PermissionCandidate,
  type PermissionRequest,
  type PermissionRequirement,
} from "./events/request.js";
export { safeValidateEvent, validateEvent, type SafeResult } from "./events/validate.js";
export { createEvent } from "./events/factories.js";
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
export { connect, Jetloop, type BusProvisionReport, type ConnectOptions, type ProvisionRequest } from "./bus.js";
export type { ConnectionSettings } from "./connection/connect.js";
export type { BusOptions, BusSettings } from "./connection/options.js";
export { FEATURES, MINIMUM_SERVER, type Feature } from "./connection/server-version.js";
export { HEADER_LAST_JOURNAL_SEQ, type PublishOptions, type PublishResult } from "./publish/publisher.js";
export {
  commandSubject,
  eventSubject,
  filterSubject,
  NO_LOOP,
  parseEventSubject,
  SubjectError,
  type Channel,
  type ParsedSubject,
  type SubjectAddress,
  type SubjectSelector,
} from "./subjects/subjects.js";
export { declaredConsumerTemplates, declaredStreamConfig, defaultStreamName } from "./streams/declared.js";
export { diffStreamConfig, type FieldDrift, type ProvisionReport } from "./streams/provision.js";
export { SessionHandle } from "./session.js";
export type { Delivery, DurableDelivery, DeliveryFailure } from "./subscribe/delivery.js";
export { MANY_FILTER_SUBJECTS, resolveFilter, type EventFilter, type LoopScope, type ResolvedFilter } from "./subscribe/filter.js";
export type { StartPosition, SubscribeOptions, SubscriptionReport } from "./subscribe/options.js";
export type { ReplayRequest } from "./subscribe/replay.js";
export { Subscription, type DurableSubscription, type SubscriptionStats } from "./subscribe/subscription.js";
export { GateServer, type InputAnswer, type InputGate, type PermissionAnswer, type PermissionGate, type StepCoordinates } from "./commands/gate-server.js";
export type { AnswerOptions } from "./commands/answer.js";
export type { Answer, AnswerInput, AnswerOutcome } from "./commands/protocol.js";
export * from "./projection/index.js";
export { ParkedStore, type ParkedSelection } from "./parking/parked-store.js";
export type { ParkedEntry, ParkInput, ParkReason } from "./parking/parked-entry.js";
export type { ConsumerFigures, ConsumersReport } from "./streams/consumer-figures.js";
export { retentionLimits, retentionWarnings, type RetentionLimit, type RetentionWarning } from "./streams/retention.js";
export { defaultParkedStreamName, declaredParkedStreamConfig } from "./streams/declared.js";
export { parkedFilter, parkedSubject, parseParkedSubject, type ParkedState } from "./subjects/subjects.js";
export * from "./gateway/index.js";
