// The dashboard's history: every SLOT_MS each sidecar with --http offers a
// sample of the whole server (jobs by state, the commands counted by every
// live sidecar, the oldest ready jobs' ages) and Redis keeps the first of
// each slot, an hour of them (lua/jobs/history.lua): every sidecar then
// charts the same hour. Rates are the differences of the counts between samples.
import type { AdminApi } from './api.js';
import { every } from './every.js';

export const SLOT_MS = 10_000;
/** Tubes whose oldest ready age each sample keeps, the oldest first. */
const OLDEST_TUBES = 5;
/** Counters of the sidecars' snapshots summed into each sample (cumulative). */
const COMMANDS = { put: 'cmd-put', reserve: 'cmd-reserve', delete: 'cmd-delete' } as const;

export interface Sample {
  /** The slot's start, ms since the epoch (the store's clock). */
  t: number;
  ready: number; reserved: number; delayed: number; buried: number; timeouts: number; jobs: number;
  put: number; reserve: number; delete: number; connections: number; sidecars: number;
  /** Seconds since put of the oldest ready jobs, by tube: the OLDEST_TUBES oldest. */
  oldest: Record<string, number>;
}

/** One sample of the server as it is now (without its time: the store adds the slot's). */
export async function sampleNow(api: AdminApi): Promise<Omit<Sample, 't'>> {
  const [{ totals, sidecars }, oldest] = await Promise.all([api.overview(), api.oldestTubes(OLDEST_TUBES)]);
  const summed = (field: string) => sidecars.reduce((n, s) => n + Number(s.counters[field] ?? 0), 0);
  return {
    ready: totals.ready, reserved: totals.reserved, delayed: totals.delayed, buried: totals.buried,
    timeouts: totals.jobTimeouts, jobs: totals.totalJobs,
    put: summed(COMMANDS.put), reserve: summed(COMMANDS.reserve), delete: summed(COMMANDS.delete),
    connections: summed('current-connections'), sidecars: sidecars.length, oldest,
  };
}

/** Offers a sample every SLOT_MS until stopped; a failed one is reported and the next tried. */
export function startHistory(api: AdminApi, onError: (err: unknown) => void, slotMs = SLOT_MS): () => void {
  return every(slotMs, async () => api.recordHistory(await sampleNow(api), slotMs), onError);
}
