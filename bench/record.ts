// Where a body should be kept apart from its job record (lua/includes/jobs.lua
// BODY_APART): Redis CPU per job of each step of a job's life, and memory per
// queued job, with every body in its record against every body apart, by
// body size, on a private redis-server:
//   npx tsx bench/record.ts [--sizes 100,512,1024,4096,16384] [--jobs 20000] [--batch 50] [--rounds 3]
// Both layouts run the same library but for BODY_APART (built from a copy of
// lua/), interleaved round by round; CPU is Redis' own time in FCALL
// (INFO commandstats), so the client's share does not count.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Layout } from '../src/store/layout.js';
import { jobOps, type AnyJobOp, type Reservation } from '../src/store/ops.js';
import { RedisJobStore } from '../src/store/redis/job-store.js';
import { bindScripts } from '../src/store/redis/functions.js';
import { luaDir } from '../src/store/redis/scripts.js';
import { startRedis } from '../test/helpers/redis.js';
import { applyInCalls } from './fcall.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100,512,1024,4096,16384' },
    jobs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
  },
});
const sizes = values.sizes.split(',').map(Number);
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const rounds = Number(values.rounds);

/** A copy of lua/ whose bodies go apart from `threshold` bytes. */
function libraryDir(threshold: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-record-'));
  cpSync(luaDir(), dir, { recursive: true });
  const file = path.join(dir, 'includes/jobs.lua');
  const text = readFileSync(file, 'utf8');
  if (!/^local BODY_APART = \d+$/m.test(text)) throw new Error('BODY_APART not found in includes/jobs.lua');
  writeFileSync(file, text.replace(/^local BODY_APART = \d+$/m, `local BODY_APART = ${threshold}`));
  return dir;
}

const server = await startRedis();
const redis = new Redis(server.url);
const LAYOUTS = { inline: libraryDir(1 << 30), apart: libraryDir(0) } as const;
type LayoutName = keyof typeof LAYOUTS;
const ignore = () => {};
const owner = 'bench:1';

async function usedMemory(): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))![1]);
}

type Steps = Record<'put' | 'reserve' | 'release' | 'delete', number> & { bytes: number };

async function lifeOfJobs(layout: LayoutName, size: number, round: number): Promise<Steps> {
  const keys = new Layout(`rec-${layout}-${size}-${round}`).keys(0);
  const store = new RedisJobStore(redis, bindScripts(redis, { dir: LAYOUTS[layout] }).jobs, keys);
  await store.heartbeat('bench', 600_000, []); // raises the record format: bodies may go apart
  const body = Buffer.alloc(size, 'x');
  const steps = async (make: (i: number) => AnyJobOp, count = jobs): Promise<{ us: number; results: unknown[] }> => {
    const { us, results } = await applyInCalls(redis, store, count, batch, make);
    return { us: us / jobs, results };
  };
  const memBefore = await usedMemory();
  const put = await steps(() => jobOps.put(null, ignore, 'default', 1024, 0, 60, body));
  const bytes = ((await usedMemory()) - memBefore) / jobs;
  const reserveAll = () => steps(() => jobOps.reserve(null, ignore, owner, ['default'], batch), jobs / batch);
  const ids = (r: unknown[]) => (r as Reservation[]).flatMap((x) => x.jobs.map((j) => j.id));
  const first = await reserveAll();
  const held = ids(first.results);
  const release = await steps((i) => jobOps.release(null, ignore, owner, held[i]!, 'default', 1024, 0));
  const again = await reserveAll();
  const taken = ids(again.results);
  if (taken.length !== jobs) throw new Error(`reserved ${taken.length} of ${jobs}`);
  const del = await steps((i) => jobOps.delete(null, ignore, owner, taken[i]!, 'default'));
  await store.heartbeat('bench', 0, ['+']);
  return { put: put.us, reserve: (first.us + again.us) / 2, release: release.us, delete: del.us, bytes };
}

const results = new Map<string, Steps[]>();
for (let round = 0; round < rounds; round++) {
  for (const size of sizes) {
    for (const layout of Object.keys(LAYOUTS) as LayoutName[]) {
      const key = `${size} ${layout}`;
      results.set(key, [...(results.get(key) ?? []), await lifeOfJobs(layout, size, round)]);
    }
  }
  process.stderr.write(`round ${round + 1} of ${rounds}\n`);
}

const cols = ['put', 'reserve', 'release', 'delete'] as const;
console.log(`Redis CPU µs per job in FCALL (median of ${rounds} rounds, ${jobs} jobs, calls of ${batch}), memory per queued job`);
console.log(['body', 'layout', ...cols, 'life (put+2 reserves+release+delete)', 'bytes/job'].join(' | '));
for (const size of sizes) {
  for (const layout of Object.keys(LAYOUTS) as LayoutName[]) {
    const rs = results.get(`${size} ${layout}`)!;
    const m = Object.fromEntries(cols.map((c) => [c, median(rs.map((r) => r[c]))])) as Record<(typeof cols)[number], number>;
    const life = m.put + 2 * m.reserve + m.release + m.delete;
    console.log([size, layout, ...cols.map((c) => m[c].toFixed(2)), life.toFixed(2), median(rs.map((r) => r.bytes)).toFixed(0)].join(' | '));
  }
}
redis.disconnect();
await server.stop();
for (const dir of Object.values(LAYOUTS)) rmSync(dir, { recursive: true, force: true });
