// Redis CPU per job in calls shaped like the mixed scenario's (fcall.ts
// mixedCalls: m puts, reserves and deletes a call, as --shape says), this
// checkout's lua/ against another checkout's (--baseline DIR, as
// full-calls.ts: e.g. `git worktree add /tmp/base <commit>`, or just its lua/
// from `git archive <commit> lua | tar x -C /tmp/base`). A private redis-server (no persistence); Redis'
// own time in FCALL (INFO commandstats); rounds interleaved, the median printed.
//   npx tsx bench/mixed-calls.ts [--baseline DIR] [--shape handed|ready] [--jobs 30000] [--per-call 1,6,20] [--rounds 5]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Layout } from '../src/store/layout.js';
import { RedisJobStore } from '../src/store/redis/job-store.js';
import { bindScripts } from '../src/store/redis/functions.js';
import { luaDir } from '../src/store/redis/scripts.js';
import { startRedis } from '../test/helpers/redis.js';
import { fcallUs, mixedCalls, type MixedShape } from './fcall.js';
import { median } from './stats.js';

const { values } = parseArgs({ options: {
  baseline: { type: 'string' }, shape: { type: 'string', default: 'handed' }, jobs: { type: 'string', default: '30000' }, 'per-call': { type: 'string', default: '1,6,20' }, rounds: { type: 'string', default: '5' },
} });
const jobs = Number(values.jobs);
const sizes = values['per-call']!.split(',').map(Number);
const rounds = Number(values.rounds);
const LIBRARIES: Record<string, string> = { new: luaDir() };
if (values.baseline) LIBRARIES.baseline = path.join(values.baseline, 'lua');

const server = await startRedis();
const redis = new Redis(server.url);
const body = Buffer.alloc(100, 'x');

async function mixed(which: string, m: number, round: number): Promise<number> {
  const store = new RedisJobStore(redis, bindScripts(redis, { dir: LIBRARIES[which] }).jobs, new Layout(`mixed-${which}-${round}`).keys(0));
  const before = await fcallUs(redis);
  await mixedCalls(store, jobs, m, body, values.shape as MixedShape);
  const us = (await fcallUs(redis)) - before;
  await redis.flushall();
  return us / jobs;
}

const results: Record<string, number[]> = {};
for (let round = 0; round < rounds; round++) {
  for (const m of sizes) for (const which of Object.keys(LIBRARIES)) (results[`${which} ${m}`] ??= []).push(await mixed(which, m, round));
  process.stderr.write(`round ${round + 1} of ${rounds}\n`);
}
console.log(`Redis CPU µs per job in FCALL, mixed-shaped calls (${values.shape}; median of ${rounds} rounds, ${jobs} jobs)`);
for (const m of sizes) {
  const row = Object.keys(LIBRARIES).map((w) => `${w} ${median(results[`${w} ${m}`]!).toFixed(2)}`);
  const ratio = LIBRARIES.baseline ? ` (${(median(results[`new ${m}`]!) / median(results[`baseline ${m}`]!)).toFixed(2)}x)` : '';
  console.log(`${m} jobs a call: ${row.join(', ')}${ratio}`);
}
redis.disconnect();
await server.stop();
