// The operations endpoint (--http ADDR:PORT), plain node:http: /healthz (the
// process serves), /readyz (Redis answers, scripts loaded, not draining or
// stopping: else 503 and the reason), /metrics (Prometheus text format), and
// the admin API under /api/ (admin-routes.ts, live.ts) and the dashboard at /
// (dashboard.ts) when asked for.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

/** Paths served beside the probes (the admin API, its live feed, the dashboard): true when answered. */
export interface HttpRoutes { handle(req: http.IncomingMessage, res: http.ServerResponse): boolean | Promise<boolean> }

export interface Probes {
  /** null when ready, else why not. */
  readiness(): Promise<string | null>;
  metrics(): Promise<{ contentType: string; body: string }>;
}

export interface OpsServer { readonly address: string; close(): Promise<void> }

function send(res: http.ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

async function route(req: http.IncomingMessage, res: http.ServerResponse, probes: Probes, routes: readonly HttpRoutes[]): Promise<void> {
  for (const r of routes) if (await r.handle(req, res)) return;
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed\n');
  const path = (req.url ?? '/').split('?')[0];
  switch (path) {
    case '/healthz':
      return send(res, 200, 'ok\n');
    case '/readyz': {
      const why = await probes.readiness();
      return why === null ? send(res, 200, 'ready\n') : send(res, 503, `not ready: ${why}\n`);
    }
    case '/metrics': {
      const m = await probes.metrics();
      return send(res, 200, m.body, m.contentType);
    }
    default:
      return send(res, 404, 'not found: try /healthz, /readyz, /metrics or /api/\n');
  }
}

/** `addr:port` (port 0: any free one); `[v6]:port` for IPv6. */
export async function startOpsServer(address: string, probes: Probes, log: Logger, routes: readonly HttpRoutes[] = []): Promise<OpsServer> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(colon + 1));
  const server = http.createServer((req, res) => {
    route(req, res, probes, routes).catch((err: unknown) => {
      log.warn({ err, url: req.url }, 'http endpoint failed');
      if (!res.headersSent) send(res, 500, `error: ${(err as Error).message}\n`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve(); });
  });
  const bound = server.address() as AddressInfo;
  const shown = `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  log.info({ http: shown }, 'http endpoint listening');
  return {
    address: shown,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
