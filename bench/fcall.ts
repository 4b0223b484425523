// Shared by the Lua benchmarks (record.ts, full-calls.ts): Redis' own time in
// FCALL, and ops applied in calls of a given size.
import type { Redis } from 'ioredis';
import type { AnyJobOp } from '../src/store/ops.js';
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
