// The composition root: a Sidecar over the Redis backend, with its HTTP
// endpoint when --http is set, started. The public API (index.ts), the command
// line and the tests that look inside a sidecar all open one here.
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from './config/settings.js';
import type { OpsServer } from './http/server.js';
import type { Listener } from './server/listener.js';
import { authDigest, Sidecar } from './server/sidecar.js';
import { tokenDigest } from './commands/auth.js';
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
  // prom-client is loaded only when metrics are asked for.
  const ops = config.http ? await Promise.all([import('./http/metrics.js'), import('./http/server.js'), import('./http/admin-routes.js'),
    import('./admin/api.js'), import('./http/live.js'), import('./http/dashboard.js')]) : null;
  const metrics = ops ? new ops[0].Metrics() : null;
  const sidecar = new Sidecar(config, backend, log, metrics ? [metrics] : []);
  let http: OpsServer | null = null;
  try {
    if (ops && metrics) {
      metrics.observe({
        jobs: backend.jobs, rooms: backend.rooms, counters: sidecar.counters,
        seriesLimit: config.metricsTubes, draining: () => sidecar.isDraining,
      });
      // Up before the sidecar, so that /healthz answers and /readyz says "starting" meanwhile.
      // Changes need the admin token, else the auth token; with neither the API is read-only.
      const admin = config.httpAdminToken ? tokenDigest(config.httpAdminToken) : authDigest(config);
      const api = new ops[3].AdminApi(backend.jobs, backend.rooms, createHash('sha256').update('bulk-confirm').update(admin ?? randomBytes(32)).digest());
      http = await ops[1].startOpsServer(config.http, {
        readiness: () => sidecar.readiness(),
        metrics: async () => ({ contentType: metrics.contentType, body: await metrics.render() }),
      }, log, [
        new ops[4].LiveFeed(api, (err) => log.warn({ err }, 'dashboard live feed: reading the store failed')),
        ops[2].adminRoutes(api, admin),
        ...(config.dashboard ? [ops[5].dashboardRoutes()] : []),
      ]);
      sidecar.closeWith(http.close);
    }
    await sidecar.start(listener);
  } catch (err) {
    await http?.close();
    await backend.close();
    throw err;
  }
  return { sidecar, backend, http };
}
