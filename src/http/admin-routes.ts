// The admin API over HTTP (protocol/admin-api.yaml): JSON under /api/, reads
// by GET, changes by POST and DELETE behind the guard (guard.ts). Path
// segments are percent-decoded (a tube name may hold '/').
import type http from 'node:http';
import { AdminApi, JOB_STATES, TUBE_SORTS, type TubeSort } from '../admin/api.js';
import { AdminError } from '../admin/errors.js';
import type { JobState } from '../store/job-store.js';
import { allowChange } from './guard.js';
import { isValidName } from '../protocol/spec.js';

/** Largest JSON body a change may carry. */
const MAX_BODY = 64 * 1024;
const MAX_PAGE = 1000;
const MAX_SCAN = 100_000;

type Params = URLSearchParams;
type Body = Record<string, unknown>;
interface Call { segments: string[]; query: Params; body: Body }
type Handler = (api: AdminApi, c: Call) => Promise<unknown>;

function bounded(text: string | null | undefined, name: string, def: number, min: number, max: number): number {
  if (text === null || text === undefined || text === '') return def;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) throw new AdminError(400, `${name} must be a whole number from ${min} to ${max}`);
  return Number(text);
}

function oneOf<T extends string>(text: string | null | undefined, name: string, values: readonly T[], def?: T): T {
  if ((text === null || text === undefined || text === '') && def !== undefined) return def;
  if (!values.includes(text as T)) throw new AdminError(400, `${name} must be one of ${values.join(', ')}`);
  return text as T;
}

const field = (b: Body, name: string): string | undefined => (b[name] === undefined ? undefined : String(b[name]));
const jobId = (text: string): string => {
  if (!/^[1-9]\d{0,19}$/.test(text)) throw new AdminError(400, `not a job id: ${text}`);
  return text;
};

const state = (q: string | null | undefined, def?: JobState) => oneOf(q, 'state', JOB_STATES, def);

/** A tube or room name from the path, as the protocol allows names (beanstalkd's name_is_ok). */
const named = (text: string): string => {
  if (!isValidName(text)) throw new AdminError(400, `not a valid name: ${JSON.stringify(text.slice(0, 220))}`);
  return text;
};

/** [method, path pattern ('*' one segment), handler]. */
const ROUTES: Array<[string, string, Handler]> = [
  ['GET', 'overview', (api) => api.overview()],
  ['GET', 'history', (api) => api.history()],
  ['GET', 'tubes', (api, { query: q }) => api.tubes(q.get('filter') ?? '', oneOf<TubeSort>(q.get('sort'), 'sort', TUBE_SORTS, 'name'),
    oneOf(q.get('order'), 'order', ['asc', 'desc'], 'asc') === 'desc', bounded(q.get('offset'), 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
    bounded(q.get('limit'), 'limit', 100, 1, MAX_PAGE))],
  ['GET', 'tubes/*', (api, { segments }) => api.tube(named(segments[1]!))],
  ['GET', 'tubes/*/jobs', (api, { segments, query: q }) => api.list(named(segments[1]!), state(q.get('state'), 'ready'), q.get('cursor') ?? '',
    bounded(q.get('limit'), 'limit', 50, 1, MAX_PAGE), bounded(q.get('scan'), 'scan', 10_000, 1, MAX_SCAN), q.get('q') ?? '')],
  ['POST', 'tubes/*/kick', (api, { segments, body }) => api.kick(named(segments[1]!), bounded(field(body, 'n'), 'n', 1, 1, 2 ** 32 - 1))],
  ['POST', 'tubes/*/pause', (api, { segments, body }) => api.pause(named(segments[1]!), bounded(field(body, 'seconds'), 'seconds', 0, 0, 2 ** 32 - 1))],
  ['POST', 'tubes/*/bulk', (api, { segments, body }) => api.bulk({
    action: oneOf(field(body, 'action'), 'action', ['kick', 'delete'] as const), tube: named(segments[1]!),
    state: state(field(body, 'state')), q: field(body, 'q') ?? '',
  }, field(body, 'confirm') ?? null)],
  ['GET', 'jobs/*', (api, { segments }) => api.job(jobId(segments[1]!))],
  ['POST', 'jobs/*/kick', (api, { segments }) => api.kickJob(jobId(segments[1]!))],
  ['DELETE', 'jobs/*', (api, { segments }) => api.deleteJob(jobId(segments[1]!))],
  ['GET', 'rooms', (api) => api.roomList()],
  ['POST', 'rooms/*/pause', (api, { segments, body }) => api.pauseRoom(named(segments[1]!), oneOf(field(body, 'paused'), 'paused', ['true', 'false']) === 'true')],
];

/** The routes as `METHOD /api/path` with `*` for a segment (checked against protocol/admin-api.yaml). */
export const ADMIN_ROUTES: readonly string[] = ROUTES.map(([method, pattern]) => `${method} /api/${pattern}`);

function matches(pattern: string, segments: readonly string[]): boolean {
  const parts = pattern.split('/');
  return parts.length === segments.length && parts.every((p, i) => p === '*' || p === segments[i]);
}

async function readBody(req: http.IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new AdminError(400, `a request body is at most ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  let value: unknown;
  try { value = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { throw new AdminError(400, 'the body must be JSON'); }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new AdminError(400, 'the body must be a JSON object');
  return value as Body;
}

export interface AdminRoutes {
  /** Answers a request under /api/ (false for any other path). */
  handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean>;
}

export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(res.req.method === 'HEAD' ? undefined : JSON.stringify(value));
}

/**
 * `digest`: the admin token's, or null for a read-only API. A call the store
 * failed answers 503 with why, and is reported to `onError`.
 */
export function adminRoutes(api: AdminApi, digest: Buffer | null, onError: (err: unknown) => void): AdminRoutes {
  return {
    async handle(req, res) {
      const url = new URL(req.url ?? '/', 'http://x');
      if (!url.pathname.startsWith('/api/')) return false;
      try {
        const segments = url.pathname.slice(5).split('/').map((s) => decodeURIComponent(s));
        const method = req.method === 'HEAD' ? 'GET' : req.method ?? 'GET';
        const found = ROUTES.filter(([, pattern]) => matches(pattern, segments));
        if (found.length === 0) throw new AdminError(404, `no such path: ${url.pathname}`);
        const route = found.find(([m]) => m === method);
        if (!route) {
          res.setHeader('allow', found.map(([m]) => m).join(', '));
          sendJson(res, 405, { error: `${method} is not allowed here` });
          return true;
        }
        if (method !== 'GET') allowChange(req, digest);
        const body = method === 'POST' ? await readBody(req) : {};
        sendJson(res, 200, await route[2](api, { segments, query: url.searchParams, body }));
      } catch (err) {
        if (err instanceof AdminError || err instanceof URIError) sendJson(res, err instanceof AdminError ? err.status : 400, { error: err.message });
        else {
          onError(err);
          sendJson(res, 503, { error: `the store did not answer: ${(err as Error).message}` });
        }
      }
      return true;
    },
  };
}
