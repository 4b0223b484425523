// The admin API's JSON shapes of the store's values: ages and times left in
// seconds (as stats-job), bodies as base64 plus their text when they are
// valid UTF-8 (a page escapes that text; it never renders it as markup).
import type { JobInfo, ListedJob, TubeCounts } from '../store/job-store.js';
import { quantile } from '../server/latencies.js';
import type { Rates } from './rates.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface BodyView { bytes: number; base64: string; text: string | null }

export function bodyView(body: Buffer): BodyView {
  let text: string | null;
  try { text = utf8.decode(body); } catch { text = null; }
  return { bytes: body.length, base64: body.toString('base64'), text };
}

export interface JobView {
  id: string; tube: string; state: string; pri: number; age: number; delay: number; ttr: number;
  timeLeft: number; reserves: number; timeouts: number; releases: number; buries: number; kicks: number;
}

export function jobView(j: JobInfo): JobView {
  return {
    id: j.id, tube: j.tube, state: j.state, pri: j.pri, age: Math.floor(j.ageMs / 1000), delay: j.delay, ttr: j.ttr,
    timeLeft: Math.floor(j.timeLeftUs / 1_000_000), reserves: j.reserves, timeouts: j.timeouts, releases: j.releases,
    buries: j.buries, kicks: j.kicks,
  };
}

/** A job of a listing: its body's first bytes only (`preview`). */
export function listedView(j: ListedJob): JobView & { holder: string; preview: BodyView } {
  return { ...jobView(j), holder: j.holder, preview: bodyView(j.body) };
}

export interface TubeView {
  name: string; urgent: number; ready: number; reserved: number; delayed: number; buried: number;
  total: number; deleted: number; paused: boolean; pauseLeft: number;
  /** Jobs put and deleted per second over the last minute at most (rates.ts); null until the tube was read twice. */
  rates: Rates | null;
  /** Seconds since the oldest ready job was put; null when none is ready. */
  oldestReadyAge: number | null;
  /** Its settings (tube-set; 0: no limit) and put-with counts. */
  limits: { maxReserved: number; reserveRate: number; dedupWindow: number };
  expired: number; duplicatePuts: number;
}

/** How long a tube's jobs waited ready and ran (ms), summed over the live sidecars since each started. */
export interface Percentiles { count: number; p50: number | null; p99: number | null }
export interface TubeLatency { wait: Percentiles; run: Percentiles }

export function percentiles(counts: readonly number[] | null): Percentiles {
  if (!counts) return { count: 0, p50: null, p99: null };
  return { count: counts.reduce((a, b) => a + b, 0), p50: quantile(counts, 0.5), p99: quantile(counts, 0.99) };
}

export function tubeView(name: string, c: TubeCounts, oldestReadyMs: number | undefined, rates: Rates | null = null): TubeView {
  const pauseLeft = Math.floor(c.pauseLeftUs / 1_000_000);
  return {
    name, urgent: c.urgent, ready: c.ready, reserved: c.reserved, delayed: c.delayed, buried: c.buried,
    total: c.totalJobs, deleted: c.cmdDelete, paused: c.pauseLeftUs > 0, pauseLeft, rates,
    oldestReadyAge: oldestReadyMs === undefined ? null : oldestReadyMs / 1000,
    limits: { maxReserved: c.maxReserved, reserveRate: c.reserveRate, dedupWindow: c.dedupWindow },
    expired: c.jobsExpired, duplicatePuts: c.duplicatePuts,
  };
}
