// The dashboard's history: every SLOT_MS each sidecar with --http offers a
// sample of the whole server (jobs by state, the commands counted by every
// live sidecar, the oldest ready jobs' ages) and Redis keeps the first of
// each slot, an hour of them (lua/jobs/history.lua): every sidecar then
// charts the same hour. Rates are the differences of the counts between samples.
import type { AdminApi } from './api.js';
import { every } from './every.js';
import { countsSince, LATENCY_KINDS, quantile, type LatencyKind } from '../server/latencies.js';

export const SLOT_MS = 10_000;
/** Tubes whose oldest ready age each sample keeps, the oldest first. */
const OLDEST_TUBES = 5;
/** Tubes whose wait and run percentiles each sample keeps: those that handed out the most jobs in its window. */
const PERCENTILE_TUBES = 5;
/** Counters of the sidecars' snapshots summed into each sample (cumulative). */
const COMMANDS = { put: 'cmd-put', reserve: 'cmd-reserve', delete: 'cmd-delete' } as const;

export interface Sample {
  /** The slot's start, ms since the epoch (the store's clock). */
  t: number;
  ready: number; reserved: number; delayed: number; buried: number; timeouts: number; jobs: number;
  put: number; reserve: number; delete: number; connections: number; sidecars: number;
  /** Seconds since put of the oldest ready jobs, by tube: the OLDEST_TUBES oldest. */
  oldest: Record<string, number>;
  /** Wait and run times (ms, p50 and p99) of the jobs of the window before the sample, by tube: the PERCENTILE_TUBES busiest. */
  latency: Record<string, Record<LatencyKind, [number | null, number | null]>>;
}

/**
 * The percentiles of the window since the last call: the counts every live
 * sidecar publishes are cumulative, so each window is now's less the last's.
 */
export class LatencyWindow {
  private last = new Map<string, number[]>();

  percentiles(now: Map<string, number[]>): Sample['latency'] {
    const windows = new Map<string, { n: number; counts: Partial<Record<LatencyKind, number[]>> }>();
    for (const [field, counts] of now) {
      const colon = field.indexOf(':');
      const kind = field.slice(0, colon) as LatencyKind;
      const tube = field.slice(colon + 1);
      const since = countsSince(counts, this.last.get(field));
      const w = windows.get(tube) ?? { n: 0, counts: {} };
      w.counts[kind] = since;
      if (kind === 'wait') w.n = since.reduce((a, b) => a + b, 0);
      windows.set(tube, w);
    }
    this.last = now;
    const busiest = [...windows].filter(([, w]) => w.n > 0).sort((a, b) => b[1].n - a[1].n).slice(0, PERCENTILE_TUBES);
    const out: Sample['latency'] = {};
    for (const [tube, w] of busiest) {
      const of = (kind: LatencyKind): [number | null, number | null] => {
        const c = w.counts[kind];
        return c ? [quantile(c, 0.5), quantile(c, 0.99)] : [null, null];
      };
      out[tube] = Object.fromEntries(LATENCY_KINDS.map((k) => [k, of(k)])) as Record<LatencyKind, [number | null, number | null]>;
    }
    return out;
  }
}

/** One sample of the server as it is now (without its time: the store adds the slot's). */
export async function sampleNow(api: AdminApi, window = new LatencyWindow()): Promise<Omit<Sample, 't'>> {
  const [{ totals, sidecars }, oldest] = await Promise.all([api.overview(), api.oldestTubes(OLDEST_TUBES)]);
  const latencies = await api.latencyCounts(sidecars.map((s) => s.id));
  const summed = (field: string) => sidecars.reduce((n, s) => n + Number(s.counters[field] ?? 0), 0);
  return {
    ready: totals.ready, reserved: totals.reserved, delayed: totals.delayed, buried: totals.buried,
    timeouts: totals.jobTimeouts, jobs: totals.totalJobs,
    put: summed(COMMANDS.put), reserve: summed(COMMANDS.reserve), delete: summed(COMMANDS.delete),
    connections: summed('current-connections'), sidecars: sidecars.length, oldest, latency: window.percentiles(latencies),
  };
}

/** Offers a sample every SLOT_MS until stopped; a failed one is reported and the next tried. */
export function startHistory(api: AdminApi, onError: (err: unknown) => void, slotMs = SLOT_MS): () => void {
  const window = new LatencyWindow();
  return every(slotMs, async () => {
    await api.recordHistory(await sampleNow(api, window), slotMs);
    await api.readAllTubes(); // every tube's rates stay within a slot of now
  }, onError);
}
