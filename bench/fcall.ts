// Shared by the Lua benchmarks (record.ts, full-calls.ts, mixed-calls.ts,
// lua-lines.ts): Redis' own time in FCALL, and ops applied in calls of a given
// size or shaped as the mixed scenario's.
import type { Redis } from 'ioredis';
import { jobOps, type AnyJobOp, type Reservation } from '../src/store/ops.js';
import type { RedisJobStore } from '../src/store/redis/job-store.js';

/** µs Redis has spent in FCALL and FCALL_RO so far (INFO commandstats). */
export async function fcallUs(redis: Redis): Promise<number> {
  let us = 0;
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_fcall(?:_ro)?:calls=\d+,usec=(\d+)/gm)) us += Number(m[1]);
  return us;
}

/** Applies make(0..count-1) in calls of `batch` ops: the µs Redis spent in them, and every result. */
export async function applyInCalls(redis: Redis, store: RedisJobStore, count: number, batch: number, make: (i: number) => AnyJobOp): Promise<{ us: number; results: unknown[] }> {
  const before = await fcallUs(redis);
  const results: unknown[] = [];
  for (let i = 0; i < count; i += batch) {
    const ops: AnyJobOp[] = [];
    for (let k = i; k < Math.min(count, i + batch); k++) ops.push(make(k));
    results.push(...(await store.apply(ops)));
  }
  return { us: (await fcallUs(redis)) - before, results };
}

/**
 * How the mixed scenario's calls look (bench/README.md, "A put handed over skips the ready set"):
 * - handed: each put followed by the reserve it is handed to (a consumer waiting on an empty tube),
 *   then the deletes of the jobs the call before reserved;
 * - ready (what the scenario's calls are): jobs stay ready (a backlog of `perCall`), and a call is
 *   half its lone reserves, then put and delete pairs, then the other half (`v v p d p d v v`).
 */
export type MixedShape = 'handed' | 'ready';

/** Calls of `perCall` puts, reserves (one job, one tube, an owner each) and deletes, shaped as `shape` says. */
export async function mixedCalls(store: RedisJobStore, jobs: number, perCall: number, body: Buffer, shape: MixedShape = 'handed'): Promise<void> {
  const ignore = () => {};
  const put = () => jobOps.put(null, ignore, 'default', 1024, 0, 60, body);
  const reserve = (k: number) => jobOps.reserve(null, ignore, `bench:${k}`, ['default'], 1);
  let held: string[] = [];
  if (shape === 'ready') await store.apply(Array.from({ length: perCall }, put));
  for (let i = 0; i < jobs + perCall; i += perCall) {
    const deletes = held.map((id, k) => jobOps.delete(null, ignore, `bench:${k}`, id, 'default'));
    const putting = Math.max(0, Math.min(perCall, jobs - i)); // the last call only deletes
    const ops: AnyJobOp[] = [];
    if (shape === 'handed') {
      ops.push(...deletes);
      for (let k = 0; k < putting; k++) ops.push(put(), reserve(k));
    } else {
      const half = Math.floor(putting / 2);
      for (let k = 0; k < half; k++) ops.push(reserve(k));
      for (let k = 0; k < Math.max(putting, deletes.length); k++) {
        if (k < putting) ops.push(put());
        if (k < deletes.length) ops.push(deletes[k]!);
      }
      for (let k = half; k < putting; k++) ops.push(reserve(k));
    }
    if (ops.length === 0) break;
    const results = await store.apply(ops);
    held = results.flatMap((r) => (r && typeof r === 'object' && 'jobs' in r ? (r as Reservation).jobs.map((j) => j.id) : []));
    if (held.length !== putting) throw new Error(`reserved ${held.length} of the ${putting} jobs wanted`);
  }
}
