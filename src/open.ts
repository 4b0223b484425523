// The composition root: a Sidecar over the Redis backend, with its HTTP
// endpoint when --http is set, started. The public API (index.ts), the command
// line and the tests that look inside a sidecar all open one here.
import type { Logger } from 'pino';
import type { Config } from './config/settings.js';
import type { OpsServer } from './http/server.js';
import type { Listener } from './server/listener.js';
import { Sidecar } from './server/sidecar.js';
import { RedisBackend } from './store/redis/backend.js';

export interface OpenSidecar { sidecar: Sidecar; backend: RedisBackend; http: OpsServer | null }

/** `listener`: one the caller opened early (the command line listens first); else the sidecar opens its own. */
export async function openSidecar(config: Config, log: Logger, listener?: Listener): Promise<OpenSidecar> {
  const backend = new RedisBackend({
    url: config.redisUrl, prefix: config.prefix, shards: config.shards, timeoutMs: config.redisTimeoutMs, maxJobSize: config.maxJobSize, log,
    minReplicas: { count: config.minReplicas, timeoutMs: config.minReplicas > 0 ? config.minReplicasTimeoutMs : 0 },
    batch: { maxOps: config.batchOps, maxBytes: config.batchBytes, maxInFlight: config.batchInFlight },
    roomDefaults: {
      capacity: config.roomCapacity, checkinTimeout: config.roomCheckinTimeout,
      participantTimeout: config.roomParticipantTimeout, grace: config.roomGrace,
    },
  });
  // prom-client and the admin API are loaded only when --http asks for them.
  const endpoint = config.http ? await import('./http/endpoint.js') : null;
  const metrics = endpoint ? new endpoint.Metrics() : null;
  const sidecar = new Sidecar(config, backend, log, metrics ? [metrics] : []);
  let http: OpsServer | null = null;
  try {
    // Up before the sidecar, so that /healthz answers and /readyz says "starting" meanwhile.
    const opened = endpoint && metrics ? await endpoint.openEndpoint(config, backend, sidecar, metrics, log) : null;
    http = opened?.server ?? null;
    await sidecar.start(listener);
    opened?.serving();
  } catch (err) {
    await http?.close();
    await backend.close();
    throw err;
  }
  return { sidecar, backend, http };
}
