export { bearerToken, type Authenticate, type GatewayPrincipal } from "./auth.js";
export { CAPABILITIES_JSON, createGatewayHandler, JETLOOP_CAPABILITIES_JSON, type GatewayHandler } from "./handler.js";
export { isLoopback, startGateway, type ListenOptions, type RunningGateway } from "./listen.js";
export type { GatewayOptions, ServerOptions } from "./options.js";
