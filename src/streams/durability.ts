/**
 * The durability profile: what the stream can be told (replicas, file storage) and what
 * only the server decides, read back. nats-server acknowledges an append once it is
 * written, and fsyncs every `sync_interval` (2 minutes by default) unless
 * `jetstream { sync_interval: always }`: an operating-system crash or power loss of a
 * quorum within the interval loses acknowledged appends. A client cannot read that
 * setting (neither INFO nor JetStream account info carry it); the monitoring endpoint's
 * /varz does (`jetstream.config.sync_always`, `sync_interval`), so the caller names it.
 */
import { OptionsError } from "../errors.js";

/** How durable the journal's writes must be: `default` takes the server's setting; `strict` also warns of a journal with fewer than three replicas and of a server whose sync setting is unread or not `always`. */
export type Durability = "default" | "strict";

/** A server's sync setting as its monitoring endpoint reports it. */
export interface SyncSetting {
  /** The /varz the setting was read from. */
  readonly monitorUrl: string;
  readonly serverName: string | undefined;
  readonly syncAlways: boolean;
  /** Nanoseconds between fsyncs when not always. */
  readonly syncIntervalNs: number;
}

/** A warning that a server syncs writes to disk on an interval, so a power loss can lose acknowledged events. */
export interface DurabilityWarning {
  readonly monitorUrl: string | undefined;
  readonly message: string;
}

export function checkDurability(value: unknown): Durability {
  if (value === undefined) return "default";
  if (value !== "default" && value !== "strict") throw new OptionsError("durability", 'must be "default" or "strict"');
  return value;
}

/** Monitoring URLs (`http://host:8222`), checked before anything is sent. */
export function checkMonitorUrls(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new OptionsError("monitor", "must be a list of monitoring URLs (http://host:8222)");
  return value.map((u) => {
    let url: URL;
    try {
      url = new URL(String(u));
    } catch {
      throw new OptionsError("monitor", `${JSON.stringify(u)} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new OptionsError("monitor", `${JSON.stringify(u)} is not an http(s) URL`);
    return url.href.replace(/\/+$/, "");
  });
}

/** Reads one node's sync setting from its /varz. */
export async function readSyncSetting(monitorUrl: string, timeoutMs = 5000): Promise<SyncSetting> {
  const res = await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`${monitorUrl}/varz answered HTTP ${res.status}`);
  const v = (await res.json()) as { server_name?: unknown; jetstream?: { config?: { sync_always?: unknown; sync_interval?: unknown } } };
  const config = v.jetstream?.config;
  if (!config) throw new Error(`${monitorUrl}/varz has no jetstream configuration (JetStream not enabled there?)`);
  return {
    monitorUrl,
    serverName: typeof v.server_name === "string" ? v.server_name : undefined,
    syncAlways: config.sync_always === true,
    syncIntervalNs: typeof config.sync_interval === "number" ? config.sync_interval : 0,
  };
}

/**
 * Warnings for the journal's durability: a node that acknowledges before syncing, a node
 * whose setting could not be read, no monitoring URL at all, and — strict — a journal
 * with fewer than 3 replicas.
 */
export async function durabilityWarnings(stream: string, monitorUrls: readonly string[], replicas: number, durability: Durability): Promise<{ settings: SyncSetting[]; warnings: DurabilityWarning[] }> {
  const warnings: DurabilityWarning[] = [];
  const settings: SyncSetting[] = [];
  if (durability === "strict" && replicas < 3) {
    warnings.push({ monitorUrl: undefined, message: `stream ${stream} has ${replicas} replica(s): the loss of one machine can lose acknowledged events (strict wants 3, on a cluster)` });
  }
  if (monitorUrls.length === 0) {
    if (durability === "strict") warnings.push({ monitorUrl: undefined, message: `the server's sync setting was not read (give the monitoring URL of every node, e.g. --monitor http://host:8222): it may acknowledge appends before syncing them to disk` });
    return { settings, warnings };
  }
  const read = await Promise.allSettled(monitorUrls.map((u) => readSyncSetting(u)));
  read.forEach((r, i) => {
    const url = monitorUrls[i]!;
    if (r.status === "rejected") {
      warnings.push({ monitorUrl: url, message: `the sync setting of ${url} could not be read (${(r.reason as Error).message})` });
      return;
    }
    settings.push(r.value);
    if (!r.value.syncAlways) {
      const name = r.value.serverName ?? url;
      warnings.push({
        monitorUrl: url,
        message: `server ${name} acknowledges appends before syncing them to disk (sync_interval ${r.value.syncIntervalNs / 1e9}s, not always): an OS crash or power loss can lose up to that much acknowledged journal; set jetstream { sync_interval: always } (deploy/nats/cluster-strict.conf)`,
      });
    }
  });
  return { settings, warnings };
}
