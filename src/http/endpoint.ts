// The --http endpoint composed: probes and /metrics, the admin API and its
// live feed, the dashboard with --dashboard, and the history sampler (once
// the sidecar serves). Loaded only when --http is set.
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { AdminApi } from '../admin/api.js';
import { every } from '../admin/every.js';
import { startHistory } from '../admin/history.js';
import pkg from '../../package.json' with { type: 'json' };
import { tokenDigest } from '../commands/auth.js';
import type { Config } from '../config/settings.js';
import { authDigest, type Sidecar } from '../server/sidecar.js';
import type { Backend } from '../store/backend.js';
import { adminRoutes } from './admin-routes.js';
import { hostCheck } from './guard.js';
import { dashboardRoutes } from './dashboard.js';
import { LiveFeed } from './live.js';
import type { Metrics } from './metrics.js';
import { startOpsServer, type OpsServer } from './server.js';

export { Metrics } from './metrics.js';

/** How often a sidecar says what it is (version, batch sizes) for the dashboard. */
const INFO_MS = 5000;

export interface Endpoint { server: OpsServer; /** The sidecar serves: start what reads the store on a timer. */ serving(): void }

export async function openEndpoint(config: Config, backend: Backend, sidecar: Sidecar, metrics: Metrics, log: Logger): Promise<Endpoint> {
  metrics.observe({
    jobs: backend.jobs, rooms: backend.rooms, counters: sidecar.counters,
    seriesLimit: config.metricsTubes, draining: () => sidecar.isDraining,
  });
  // Changes need the admin token, else the auth token; with neither the API is read-only.
  const admin = config.httpAdminToken ? tokenDigest(config.httpAdminToken) : authDigest(config);
  // Bulk confirmations are signed under a key of the token, so any sidecar with it honours them.
  const api = new AdminApi(backend.jobs, backend.rooms, createHash('sha256').update('bulk-confirm').update(admin ?? randomBytes(32)).digest());
  const server = await startOpsServer(config.http, {
    readiness: () => sidecar.readiness(),
    metrics: async () => ({ contentType: metrics.contentType, body: await metrics.render() }),
  }, log, [
    hostCheck(config.httpHosts ? config.httpHosts.split(',') : []),
    new LiveFeed(api, (err) => log.warn({ err }, 'dashboard live feed: reading the store failed')),
    adminRoutes(api, admin, (err) => log.warn({ err }, 'admin API: the store failed')),
    ...(config.dashboard ? [dashboardRoutes()] : []),
  ]);
  sidecar.closeWith(server.close);
  return {
    server,
    serving() {
      const stops = [
        startHistory(api, (err) => log.warn({ err }, 'dashboard history: a sample failed')),
        every(INFO_MS, async () => {
          const batches = await metrics.batchSummary();
          await api.publishInfo(sidecar.nodeId, { version: pkg.version, 'batch-calls': batches.calls, 'batch-ops-mean': batches.meanOps.toFixed(1) }, INFO_MS * 3);
        }, (err) => log.warn({ err }, 'dashboard: publishing this sidecar\'s info failed')),
      ];
      sidecar.closeWith(async () => { for (const stop of stops) stop(); });
    },
  };
}
