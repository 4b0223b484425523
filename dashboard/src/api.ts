// The dashboard's link to the admin API (protocol/admin-api.yaml): reads,
// changes with the admin token as a Bearer header (kept for this tab only,
// never in a cookie), and the live feed of server-sent events.
import { useEffect, useState } from 'preact/hooks';

const TOKEN_KEY = 'redstalk-admin-token';

export const token = {
  get: (): string => sessionStorage.getItem(TOKEN_KEY) ?? '',
  set: (value: string): void => { if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY); },
};

export class ApiError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (method !== 'GET' && token.get()) headers.authorization = `Bearer ${token.get()}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const value = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new ApiError(res.status, value.error ?? `${res.status}`);
  return value;
}

export const get = <T>(path: string): Promise<T> => call<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}): Promise<T> => call<T>('POST', path, body);
export const del = <T>(path: string): Promise<T> => call<T>('DELETE', path);

export const enc = encodeURIComponent;

export interface Totals { urgent: number; ready: number; reserved: number; delayed: number; buried: number; tubes: number; totalJobs: number; jobTimeouts: number }
export interface Sidecar { id: string; counters: Record<string, string>; info: Record<string, string> }
export interface Tube {
  name: string; urgent: number; ready: number; reserved: number; delayed: number; buried: number;
  total: number; deleted: number; paused: boolean; pauseLeft: number; oldestReadyAge: number | null;
  limits: { maxReserved: number; reserveRate: number; dedupWindow: number }; expired: number; duplicatePuts: number;
  /** Jobs put and deleted per second, over the last minute at most (null until the sidecar read the tube twice). */
  rates: { put: number; deleted: number; overSeconds: number } | null;
  /** One tube's page only: how long its jobs waited ready and ran (ms), all live sidecars. */
  latency?: Record<'wait' | 'run', { count: number; p50: number | null; p99: number | null }>;
}

/** A time in ms, shown in its unit. */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  return ms < 1000 ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
export interface Body { bytes: number; base64: string; text: string | null }
export interface Job {
  id: string; tube: string; state: string; pri: number; age: number; delay: number; ttr: number; timeLeft: number;
  reserves: number; timeouts: number; releases: number; buries: number; kicks: number;
}
export interface ListedJob extends Job { holder: string; preview: Body }
export interface JobPage { state: string; jobs: ListedJob[]; next: string; scanned: number }
export interface Room { name: string; capacity: number; participants: number; waiting: number; openPlaces: number; admittedTotal: number; dropoutsTotal: number; paused: boolean; admissionRate: string }

/** What the server pushes (src/http/live.ts): the overview, and the watched tube's counts. */
export interface Live { at: number; totals: Totals; sidecars: Sidecar[]; tube?: Tube | null }

/** The latest push of /api/events (for `tube` too, when given); null until the first. */
export function useLive(tube?: string): Live | null {
  const [live, setLive] = useState<Live | null>(null);
  useEffect(() => {
    const source = new EventSource(`api/events${tube === undefined ? '' : `?tube=${enc(tube)}`}`);
    source.addEventListener('live', (e) => setLive(JSON.parse((e as MessageEvent<string>).data) as Live));
    return () => source.close();
  }, [tube]);
  return live;
}

/** Changes with the pushes, at most once per `ms`: a dependency for what a push should fetch again, not at every push. */
export function pushedEvery(live: Live | null, ms: number): number {
  return live ? Math.floor(live.at / ms) : -1;
}

/** A body's bytes as hex pairs, 16 a line. */
export function hex(base64: string): string {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 16) lines.push(Array.from(bytes.subarray(i, i + 16), (b) => b.toString(16).padStart(2, '0')).join(' '));
  return lines.join('\n');
}
