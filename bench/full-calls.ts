// Redis CPU per job in full batch calls, this checkout's lua/ against another
// checkout's (--baseline DIR, e.g. `git worktree add /tmp/base <commit>`):
// puts, then reserves of one job each (as busy consumers send them: one op per
// connection), then deletes, in calls of --batch ops, on a private
// redis-server (no persistence). Redis' own time in FCALL (INFO commandstats),
// rounds interleaved, the median printed:
//   npx tsx bench/full-calls.ts --baseline /tmp/base [--jobs 60000] [--batch 300] [--rounds 5]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Layout } from '../src/store/layout.js';
import { jobOps, type Reservation } from '../src/store/ops.js';
import { RedisJobStore } from '../src/store/redis/job-store.js';
import { bindScripts } from '../src/store/redis/functions.js';
import { luaDir } from '../src/store/redis/scripts.js';
import { startRedis } from '../test/helpers/redis.js';
import { applyInCalls } from './fcall.js';
import { median } from './stats.js';

const { values } = parseArgs({ options: {
  baseline: { type: 'string' }, jobs: { type: 'string', default: '60000' }, batch: { type: 'string', default: '300' }, rounds: { type: 'string', default: '5' },
} });
if (!values.baseline) throw new Error('--baseline DIR: the checkout to compare with');
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const rounds = Number(values.rounds);
const LIBRARIES = { new: luaDir(), baseline: path.join(values.baseline, 'lua') } as const;
type Which = keyof typeof LIBRARIES;
const STEPS = ['put', 'reserve', 'delete'] as const;
type Steps = Record<(typeof STEPS)[number], number>;

const server = await startRedis();
const redis = new Redis(server.url);
const ignore = () => {};
const body = Buffer.alloc(100, 'x');

async function lifeOfJobs(which: Which, round: number): Promise<Steps> {
  const store = new RedisJobStore(redis, bindScripts(redis, { dir: LIBRARIES[which] }).jobs, new Layout(`full-${which}-${round}`).keys(0));
  const step = (make: Parameters<typeof applyInCalls>[4]) => applyInCalls(redis, store, jobs, batch, make);
  const put = await step(() => jobOps.put(null, ignore, 'default', 1024, 0, 60, body));
  const reserve = await step((i) => jobOps.reserve(null, ignore, `bench:${i % batch}`, ['default'], 1));
  const ids = (reserve.results as Reservation[]).flatMap((r) => r.jobs.map((j) => j.id));
  if (ids.length !== jobs) throw new Error(`${which}: reserved ${ids.length} of ${jobs}`);
  const del = await step((i) => jobOps.delete(null, ignore, `bench:${i % batch}`, ids[i]!, 'default'));
  await redis.flushall();
  return { put: put.us / jobs, reserve: reserve.us / jobs, delete: del.us / jobs };
}

const results: Record<Which, Steps[]> = { new: [], baseline: [] };
for (let round = 0; round < rounds; round++) {
  for (const which of Object.keys(LIBRARIES) as Which[]) results[which].push(await lifeOfJobs(which, round));
  process.stderr.write(`round ${round + 1} of ${rounds}\n`);
}
console.log(`Redis CPU µs per job in FCALL (median of ${rounds} rounds, ${jobs} jobs, calls of ${batch} ops)`);
console.log(['library', ...STEPS, 'put + reserve + delete'].join(' | '));
const row = (which: Which) => STEPS.map((s) => median(results[which].map((r) => r[s])));
for (const which of Object.keys(LIBRARIES) as Which[]) {
  const m = row(which);
  console.log([which, ...m.map((x) => x.toFixed(2)), m.reduce((a, b) => a + b, 0).toFixed(2)].join(' | '));
}
const [n, b] = [row('new'), row('baseline')];
console.log(['new / baseline', ...n.map((x, i) => `${(x / b[i]!).toFixed(2)}x`), `${(n.reduce((x, y) => x + y, 0) / b.reduce((x, y) => x + y, 0)).toFixed(2)}x`].join(' | '));
redis.disconnect();
await server.stop();
