/** What the rest of jetloop calls: the seams into telemetry (README.md here says what each records). */
export { TRACE_HEADER_ROOM } from "./traceparent.js";
export type { TraceEntries } from "./propagation.js";
export { recordPreview, recordReport } from "./metrics.js";
export { deliveryContext, noteFeedMessage, publishedContext, startPublish, tracedDelivery, tracedRequest, tracedServe, withDelivery } from "./spans.js";
export { routeOf, sseFrame, tracedHttp } from "./gateway.js";
export { observeGateway } from "./metrics.js";
export { logConnectionStatus, traceLogFields } from "./logs.js";
export { appendSettled } from "./appends.js";
