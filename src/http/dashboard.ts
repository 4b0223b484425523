// The dashboard's static files (built by scripts/build-dashboard.ts into
// dist/dashboard) at / of --http, read once at start. Served with a content
// security policy that allows only this origin's own scripts and styles, so
// even a job body that slipped into markup could run nothing.
import { readdirSync, readFileSync } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.map': 'application/json',
};

const HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** dist/dashboard: next to the bundle (dist/), or, run from src/, in the checkout's dist/. */
export function dashboardDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, 'dashboard'), path.resolve(here, '../../dist/dashboard')]) {
    try {
      readFileSync(path.join(candidate, 'index.html'));
      return candidate;
    } catch { /* try the next layout */ }
  }
  throw new Error('redstalk: the dashboard is not built (npm run build makes dist/dashboard)');
}

export interface StaticRoutes { handle(req: http.IncomingMessage, res: http.ServerResponse): boolean }

export function dashboardRoutes(dir = dashboardDir()): StaticRoutes {
  const files = new Map<string, { type: string; body: Buffer }>();
  const add = (url: string, file: string) => files.set(url, { type: TYPES[path.extname(file)] ?? 'application/octet-stream', body: readFileSync(file) });
  add('/', path.join(dir, 'index.html'));
  for (const name of readdirSync(path.join(dir, 'assets'))) add(`/assets/${name}`, path.join(dir, 'assets', name));
  return {
    handle(req, res) {
      const file = files.get((req.url ?? '/').split('?')[0]!);
      if (!file || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
      res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache', ...HEADERS });
      res.end(req.method === 'HEAD' ? undefined : file.body);
      return true;
    },
  };
}
