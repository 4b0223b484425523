// Redis memory and CPU per job, measured on a private redis-server:
//   npx tsx bench/memory.ts [--jobs 1000000] [--payload 100] [--batch 100]
// Fills the queue through the same batch script the sidecar uses (one call
// per --batch jobs), then reserves and deletes them all, and reports
// `used_memory` per queued job, MEMORY USAGE of each key per job, and Redis
// CPU (used_cpu_user + used_cpu_sys) per put, per reserve and per delete.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type { BatchOp, BatchResult, OpCode, ReservedJob } from '../src/store/batcher.js';
import { Keys } from '../src/store/keys.js';
import { Store } from '../src/store/store.js';
import { startRedis } from '../test/helpers/redis.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000000' },
    payload: { type: 'string', default: '100' },
    batch: { type: 'string', default: '100' },
  },
});
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const body = Buffer.alloc(Number(values.payload), 'x');

const server = await startRedis();
const redis = new Redis(server.url);
const keys = new Keys('bench');
const store = new Store(redis, keys);
const owner = 'bench:1';

function op(code: OpCode, fields: Partial<BatchOp> = {}): BatchOp {
  return { code, owner, id: '', tube: 'default', tubes: ['default'], pri: 1024, delay: 0, ttr: 60, body: null, ctx: null, done: () => {}, ...fields };
}

async function info(section: string, field: string): Promise<number> {
  const text = await redis.info(section);
  return Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(text)![1]);
}

async function cpuSeconds(): Promise<number> {
  return (await info('cpu', 'used_cpu_user')) + (await info('cpu', 'used_cpu_sys'));
}

/** Runs `count` ops in calls of `batch`, returning Redis CPU µs per op and all results. */
async function measure(count: number, make: (i: number) => BatchOp): Promise<{ cpuUs: number; results: BatchResult[] }> {
  const results: BatchResult[] = [];
  const before = await cpuSeconds();
  for (let i = 0; i < count; i += batch) {
    const ops: BatchOp[] = [];
    for (let k = i; k < Math.min(count, i + batch); k++) ops.push(make(k));
    results.push(...(await store.applyBatch(ops)));
  }
  return { cpuUs: ((await cpuSeconds()) - before) * 1e6 / count, results };
}

const write = (s: string) => process.stderr.write(s);
await store.applyBatch([op('p', { body })]); // creates the tube and the global keys
const memBefore = await info('memory', 'used_memory');
write(`putting ${jobs} jobs of ${body.length} bytes in calls of ${batch}...\n`);
const put = await measure(jobs, () => op('p', { body }));
const memAfter = await info('memory', 'used_memory');
const perKey: Record<string, number> = {};
for (const key of [keys.globals[0]!, keys.tube('default')[1]!]) {
  perKey[key] = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) / jobs;
}
write('reserving them...\n');
const reserve = await measure(jobs, () => op('v'));
const reserved = reserve.results.filter((r): r is ReservedJob => typeof r === 'object');
write('deleting them...\n');
const del = await measure(reserved.length, (i) => op('d', { id: reserved[i]!.id }));
const left = await redis.hlen(keys.globals[0]!);

const report = {
  jobs, payload: body.length, batch,
  bytesPerQueuedJob: Math.round((memAfter - memBefore) / jobs),
  memoryUsagePerJob: Object.fromEntries(Object.entries(perKey).map(([k, v]) => [k, Math.round(v)])),
  redisCpuUsPerJob: { put: +put.cpuUs.toFixed(2), reserve: +reserve.cpuUs.toFixed(2), delete: +del.cpuUs.toFixed(2) },
  reserved: reserved.length,
  jobsLeft: left - 1,
};
console.log(JSON.stringify(report, null, 2));
redis.disconnect();
await server.stop();
if (reserved.length !== jobs || left !== 1) process.exitCode = 1;
