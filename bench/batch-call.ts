// Redis CPU per call of the batch script, this checkout against another
// (--baseline DIR, e.g. `git worktree add /tmp/base <commit>`): the fixed cost
// of a call with no ops, with one op ('x': forget a watch list, a DEL and
// an SREM), and with a reserve over one empty tube, next to `return 1`. A private redis-server (no persistence) on a
// free port; redis-benchmark sends each call one at a time (-c 1); Redis' own
// time per call is read from INFO commandstats (reset before each run). The
// cases are interleaved, round after round, and the median of the rounds printed.
// A checkout whose src/store/redis/scripts.ts has buildLibrary is called with
// FCALL (its functions library); an older one (loadScripts) with EVALSHA.
//   npx tsx bench/batch-call.ts --baseline /tmp/base [--rounds 5] [--calls 20000]
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, loopback, waitUntilAccepting } from '../src/cli/ports.js';
import { median } from './stats.js';

const { values } = parseArgs({ options: {
  baseline: { type: 'string' }, rounds: { type: 'string', default: '5' }, calls: { type: 'string', default: '20000' },
} });
const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

type Loader = { buildLibrary?: (o?: { dir?: string }) => { source: string; functions: Array<{ name: string; fn: string }> };
  loadScripts?: (folder: string, dir?: string) => Array<{ name: string; lua: string }> };

/** The command head of a checkout's batch call: FCALL name, or EVALSHA sha (loaded into Redis here). */
async function batchHead(redis: Redis, dir: string): Promise<{ label: string; head: string[] }> {
  const loader = (await import(path.join(dir, 'src/store/redis/scripts.ts'))) as Loader;
  if (loader.buildLibrary) {
    const lib = loader.buildLibrary({ dir: path.join(dir, 'lua') });
    await redis.call('FUNCTION', 'LOAD', lib.source).catch((err: Error) => { if (!/already exists/.test(err.message)) throw err; });
    return { label: 'FCALL', head: ['FCALL', lib.functions.find((f) => f.name === 'batch')!.fn] };
  }
  const lua = loader.loadScripts!('jobs', path.join(dir, 'lua')).find((s) => s.name === 'batch')!.lua;
  return { label: 'EVALSHA', head: ['EVALSHA', (await redis.script('LOAD', lua)) as string] };
}

const port = await freePort();
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp'], { stdio: 'ignore' });
await waitUntilAccepting(loopback(port), `redis-server port ${port}`, 10_000, () => {});
const redis = new Redis(port, '127.0.0.1');
try {
  const keys = ['jobs', 'tube-names', 'delayed', 'reserved', 'stats', 'tube-order', 'nodes', 'seq', 'ready-tubes'].map((k) => `{b:0}:${k}`);
  const args = ['{b:0}:events', '1', '0', '0'];
  const tubeKeys = ['', ':ready', ':delayed', ':buried', ':refs'].map((k) => `{b:0}:tube:default${k}`);
  await redis.call('FUNCTION', 'LOAD', '#!lua name=bench_floor\nredis.register_function("bench_return_1", function() return 1 end)')
    .catch((err: Error) => { if (!/already exists/.test(err.message)) throw err; });
  const cases: Array<[string, string[]]> = [
    ['EVALSHA return 1', ['EVALSHA', (await redis.script('LOAD', 'return 1')) as string, '0']],
    ['FCALL return 1', ['FCALL', 'bench_return_1', '0']],
  ];
  for (const [who, dir] of [['this checkout', here], ['baseline', values.baseline]] as const) {
    if (!dir) continue;
    const { label, head } = await batchHead(redis, path.resolve(dir));
    cases.push([`${who}: ${label} batch, 0 ops`, [...head, '9', ...keys, ...args]]);
    cases.push([`${who}: ${label} batch, 1 op`, [...head, '9', ...keys, ...args, 'x', 'n:1']]);
    // A reserve of a sidecar's connection over one empty tube: the look a blocked worker's reserve makes.
    cases.push([`${who}: ${label} batch, reserve (empty)`, [...head, '14', ...keys, ...tubeKeys, ...args.slice(0, 3), '1', 'default', 'v', 'n1:1', '1', '1', '1']]);
  }
  const usec = new Map<string, number[]>();
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const [name, cmd] of cases) {
      await redis.config('RESETSTAT');
      execFileSync('redis-benchmark', ['-p', String(port), '-n', values.calls!, '-c', '1', '-q', ...cmd], { stdio: 'ignore' });
      const m = new RegExp(`cmdstat_${cmd[0]!.toLowerCase()}:calls=(\\d+),usec=(\\d+)`).exec(await redis.info('commandstats'))!;
      usec.set(name, [...(usec.get(name) ?? []), Number(m[2]) / Number(m[1])]);
    }
  }
  process.stdout.write(`Redis µs per call (INFO commandstats), median of ${values.rounds} interleaved rounds of ${values.calls} calls:\n`);
  for (const [name, v] of usec) process.stdout.write(`  ${name.padEnd(36)} ${median(v).toFixed(2).padStart(6)}   (${v.map((x) => x.toFixed(1)).join(' ')})\n`);
} finally {
  redis.disconnect();
  server.kill('SIGTERM');
}
