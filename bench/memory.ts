// Redis memory and CPU per job, measured on a private redis-server:
//   npx tsx bench/memory.ts [--jobs 1000000] [--payload 100] [--batch 100]
// Fills the queue through the same batch script the sidecar uses (one call
// per --batch jobs), then reserves and deletes them all, and reports
// `used_memory` per queued job, MEMORY USAGE of each key per job, and Redis
// CPU (used_cpu_user + used_cpu_sys) per put, per reserve and per delete.
// Then the same through the floor scripts below, in calls of the same size:
// the least Redis CPU any design that keeps a job in one record and one index
// entry can use (--aof: with appendonly everysec, as the benchmark's Redis).
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Layout } from '../src/store/layout.js';
import { jobOps, type AnyJobOp, type OpResult, type Reservation } from '../src/store/ops.js';
import { RedisJobStore } from '../src/store/redis/job-store.js';
import { bindScripts } from '../src/store/redis/functions.js';
import { startRedis } from '../test/helpers/redis.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000000' },
    payload: { type: 'string', default: '100' },
    batch: { type: 'string', default: '100' },
    aof: { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const body = Buffer.alloc(Number(values.payload), 'x');

const server = await startRedis({ appendonly: values.aof });
const redis = new Redis(server.url);
const keys = new Layout('bench').keys(0);
const store = new RedisJobStore(redis, bindScripts(redis).jobs, keys);
const owner = 'bench:1';
const ignore = () => {};
const put = () => jobOps.put(null, ignore, 'default', 1024, 0, 60, body);

async function info(section: string, field: string): Promise<number> {
  const text = await redis.info(section);
  return Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(text)![1]);
}

async function cpuSeconds(): Promise<number> {
  return (await info('cpu', 'used_cpu_user')) + (await info('cpu', 'used_cpu_sys'));
}

/** Runs `count` ops in calls of `batch`, returning Redis CPU µs per op and all results. */
async function measure(count: number, make: (i: number) => AnyJobOp): Promise<{ cpuUs: number; results: Array<OpResult | Error> }> {
  const results: Array<OpResult | Error> = [];
  const before = await cpuSeconds();
  for (let i = 0; i < count; i += batch) {
    const ops: AnyJobOp[] = [];
    for (let k = i; k < Math.min(count, i + batch); k++) ops.push(make(k));
    results.push(...(await store.apply(ops)));
  }
  return { cpuUs: ((await cpuSeconds()) - before) * 1e6 / count, results };
}

const write = (s: string) => process.stderr.write(s);
await store.apply([put()]); // creates the tube and the global keys
const memBefore = await info('memory', 'used_memory');
write(`putting ${jobs} jobs of ${body.length} bytes in calls of ${batch}...\n`);
const puts = await measure(jobs, put);
const memAfter = await info('memory', 'used_memory');
const perKey: Record<string, number> = {};
for (const key of [keys.globals[0]!, keys.tube('default')[1]!]) {
  perKey[key] = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) / jobs;
}
write('reserving them...\n');
const reserve = await measure(jobs, () => jobOps.reserve(null, ignore, owner, ['default'], 1));
const reserved = reserve.results.flatMap((r) => (typeof r === 'object' && 'jobs' in r ? (r as Reservation).jobs : []));
write('deleting them...\n');
const del = await measure(reserved.length, (i) => jobOps.delete(null, ignore, owner, reserved[i]!.id, 'default'));
const left = await redis.hlen(keys.globals[0]!);

// The floor: per put an HSET of the body and a ZADD; per reserve (one job
// each, as the sidecar's reserves from different clients) a ZPOPMIN, an HGET
// and a ZADD of the reservation; per delete an HDEL and a ZREM.
const FLOOR = {
  put: `local last = redis.call('INCRBY', KEYS[3], #ARGV) - #ARGV
    for i = 1, #ARGV do
      redis.call('HSET', KEYS[1], last + i, ARGV[i])
      redis.call('ZADD', KEYS[2], 1024, last + i)
    end
    return last`,
  reserve: `local out = {}
    for i = 1, tonumber(ARGV[1]) do
      local id = redis.call('ZPOPMIN', KEYS[2])[1]
      out[i] = redis.call('HGET', KEYS[1], id)
      redis.call('ZADD', KEYS[4], 60000, id)
    end
    return out`,
  delete: `for i = 1, #ARGV do
      redis.call('HDEL', KEYS[1], ARGV[i])
      redis.call('ZREM', KEYS[4], ARGV[i])
    end
    return #ARGV`,
};
const FLOOR_KEYS = ['floor:{f}:jobs', 'floor:{f}:ready', 'floor:{f}:seq', 'floor:{f}:reserved'];

/** Redis CPU µs per job of `count` jobs through a floor script, in calls of `batch`. */
async function floor(script: string, args: (from: number, n: number) => Array<string | Buffer>): Promise<number> {
  const before = await cpuSeconds();
  for (let i = 0; i < jobs; i += batch) {
    await redis.eval(script, FLOOR_KEYS.length, ...FLOOR_KEYS, ...args(i, Math.min(batch, jobs - i)));
  }
  return ((await cpuSeconds()) - before) * 1e6 / jobs;
}

write('the same through the floor scripts...\n');
const floorPut = await floor(FLOOR.put, (_, n) => Array.from({ length: n }, () => body));
const floorReserve = await floor(FLOOR.reserve, (_, n) => [String(n)]);
const floorDelete = await floor(FLOOR.delete, (i, n) => Array.from({ length: n }, (_, k) => String(i + k + 1)));
const floorLeft = await redis.hlen(FLOOR_KEYS[0]!);

const report = {
  jobs, payload: body.length, batch,
  bytesPerQueuedJob: Math.round((memAfter - memBefore) / jobs),
  memoryUsagePerJob: Object.fromEntries(Object.entries(perKey).map(([k, v]) => [k, Math.round(v)])),
  redisCpuUsPerJob: { put: +puts.cpuUs.toFixed(2), reserve: +reserve.cpuUs.toFixed(2), delete: +del.cpuUs.toFixed(2) },
  floorRedisCpuUsPerJob: { put: +floorPut.toFixed(2), reserve: +floorReserve.toFixed(2), delete: +floorDelete.toFixed(2) },
  reserved: reserved.length,
  jobsLeft: left - 1,
  floorJobsLeft: floorLeft,
};
console.log(JSON.stringify(report, null, 2));
redis.disconnect();
await server.stop();
if (reserved.length !== jobs || left !== 1 || floorLeft !== 0) process.exitCode = 1;
