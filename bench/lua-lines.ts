// Where the batch function spends its Lua VM instructions, line by line:
//   npx tsx bench/lua-lines.ts [--jobs 2000] [--batch 1] [--shape apart|handed|ready] [--every 7] [--top 40]
// Puts --jobs jobs, reserves them and deletes them through the batch script, in
// calls of --batch ops (--shape apart), or in calls of --batch jobs shaped as
// the mixed scenario's (--shape handed or ready: fcall.ts mixedCalls), with a count hook that notes the library line running
// every --every VM instructions. Instructions, unlike time, do not move with
// the machine's noise: an A/B of a Lua change is two runs of this.
// Redis' function engine deletes the `debug` library the hook needs, so the
// redis-server first on PATH must be one built without that line, e.g.:
//   git archive 7.0.15 | tar x -C /tmp/redis && cd /tmp/redis
//   sed -i 's/"debug = nil\\n"/"\\n"/' src/function_lua.c && make
//   PATH=/tmp/redis/src:$PATH npx tsx bench/lua-lines.ts
// It counts only instructions of Lua code: what C functions (redis.call,
// cmsgpack, string.*) and Lua's GC cost needs `perf` (bench/README.md).
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Layout } from '../src/store/layout.js';
import { jobOps, type Reservation } from '../src/store/ops.js';
import { RedisJobStore } from '../src/store/redis/job-store.js';
import { bindScripts } from '../src/store/redis/functions.js';
import { buildLibrary } from '../src/store/redis/scripts.js';
import { startRedis } from '../test/helpers/redis.js';
import { applyInCalls, mixedCalls, type MixedShape } from './fcall.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '1' },
    shape: { type: 'string', default: 'apart' },
    every: { type: 'string', default: '7' },
    top: { type: 'string', default: '40' },
  },
});
const jobs = Number(values.jobs);
const batch = Number(values.batch);

// The library as the sidecar loads it, with a hook set at each call's start (bind_globals,
// the first thing every entry does) and a function that hands the counts over.
const library = buildLibrary();
const BIND = 'local function bind_globals()';
if (!library.source.includes(BIND)) throw new Error(`the library has no '${BIND}' to hook into`);
const source = `${library.source.replace(BIND, `local line_counts = {}
local function count_line()
  local info = _G.debug.getinfo(2, 'l')
  local line = info and info.currentline or -1
  line_counts[line] = (line_counts[line] or 0) + 1
end
${BIND}
  if not _G.rawget(_G, 'debug') then _G.error('this redis-server deletes the debug library from its functions: see bench/lua-lines.ts') end
  _G.debug.sethook(count_line, '', ${Number(values.every)})`)}
register_function{ function_name = 'lua_lines', callback = function()
  local out = {}
  for line, n in _G.pairs(line_counts) do out[#out + 1] = line .. ' ' .. n end
  line_counts = {}
  return out
end }
`;

const server = await startRedis();
const redis = new Redis(server.url);
try {
  await redis.call('FUNCTION', 'LOAD', source);
  const store = new RedisJobStore(redis, bindScripts(redis).jobs, new Layout('bench').keys(0));
  const ignore = () => {};
  const body = Buffer.alloc(100, 'x');
  const run = async (count: number, make: Parameters<typeof applyInCalls>[4]) => (await applyInCalls(redis, store, count, batch, make)).results;
  await store.apply([jobOps.put(null, ignore, 'default', 1024, 0, 60, body)]); // the tube and the global keys
  await store.apply([jobOps.reserve(null, ignore, 'bench:0', ['default'], 1)]);
  await redis.call('FCALL', 'lua_lines', 0); // counts from here on
  if (values.shape !== 'apart') await mixedCalls(store, jobs, batch, body, values.shape as MixedShape);
  else {
    await run(jobs, () => jobOps.put(null, ignore, 'default', 1024, 0, 60, body));
    const reserved = (await run(jobs, (i) => jobOps.reserve(null, ignore, `bench:${i % 50}`, ['default'], 1)))
      .flatMap((r, i) => (r && typeof r === 'object' && 'jobs' in r ? (r as Reservation).jobs.map((j) => ({ id: j.id, owner: `bench:${i % 50}` })) : []));
    await run(reserved.length, (i) => jobOps.delete(null, ignore, reserved[i]!.owner, reserved[i]!.id, 'default'));
  }
  const counts = ((await redis.call('FCALL', 'lua_lines', 0)) as string[]).map((s) => s.split(' ').map(Number) as [number, number]);
  counts.sort((a, b) => b[1] - a[1]);
  const total = counts.reduce((sum, [, n]) => sum + n, 0);
  const lines = source.split('\n');
  const every = Number(values.every);
  console.log(`${jobs} jobs put, reserved and deleted in calls of ${batch}${values.shape !== 'apart' ? ` jobs (${values.shape})` : ''}: ~${Math.round(total * every / jobs)} Lua VM instructions per job`
    + ` (${total} samples, one every ${every} instructions)`);
  for (const [line, n] of counts.slice(0, Number(values.top))) {
    console.log(`${(100 * n / total).toFixed(1).padStart(5)}%  ${String(line).padStart(5)}  ${(lines[line - 1] ?? '?').trim().slice(0, 100)}`);
  }
} finally {
  redis.disconnect();
  await server.stop();
}
