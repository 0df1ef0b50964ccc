/**
 * The OpenTelemetry API, if the application has it: `@opentelemetry/api` is an optional
 * peer dependency, loaded once here. Without it (or with `JETLOOP_TELEMETRY=off`) every
 * telemetry call in jetloop is a branch on `api === undefined`. With it but no SDK
 * registered, tracing is skipped by one check of the global tracer provider, and metrics
 * go to the API's no-op instruments (BENCHMARKS.md, benchmark "telemetry").
 */
import type * as Api from "@opentelemetry/api";

export type OtelApi = typeof Api;

async function load(): Promise<OtelApi | undefined> {
  if (process.env.JETLOOP_TELEMETRY === "off") return undefined;
  try {
    return await import("@opentelemetry/api");
  } catch (e) {
    // Not installed: telemetry is off. Installed but broken is the application's to know.
    if ((e as { code?: string }).code === "ERR_MODULE_NOT_FOUND") return undefined;
    throw e;
  }
}

/** The API, or undefined when the application has none (telemetry off). */
export const api: OtelApi | undefined = await load();

/** What a fresh proxy provider delegates to: the API's no-op provider (it exports no name for it). */
const NOOP_TRACER_PROVIDER = api && new api.ProxyTracerProvider().getDelegate();

let tracerOf: { provider: Api.TracerProvider; tracer: Api.Tracer } | undefined;

/**
 * jetloop's tracer when an SDK is registered; undefined without one (no span, no header,
 * no context lookup). The global provider is looked at on each call, so an SDK registered
 * after connect() is used from then on.
 */
export function tracer(): Api.Tracer | undefined {
  if (api === undefined) return undefined;
  const provider = api.trace.getTracerProvider();
  if (provider instanceof api.ProxyTracerProvider && provider.getDelegate() === NOOP_TRACER_PROVIDER) return undefined;
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer("jetloop") };
  return tracerOf.tracer;
}

let meterOf: { provider: Api.MeterProvider; meter: Api.Meter; cache: Map<string, unknown> } | undefined;

/**
 * An instrument of jetloop's meter, made once per meter provider (the metrics API has no
 * proxy: a provider registered later gets new instruments). `make` builds it from the meter.
 */
export function instrument<T>(name: string, make: (meter: Api.Meter) => T): T | undefined {
  if (api === undefined) return undefined;
  const provider = api.metrics.getMeterProvider();
  if (meterOf?.provider !== provider) meterOf = { provider, meter: provider.getMeter("jetloop"), cache: new Map() };
  let made = meterOf.cache.get(name) as T | undefined;
  if (made === undefined) meterOf.cache.set(name, (made = make(meterOf.meter)));
  return made;
}
