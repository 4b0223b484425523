// The Lua functions library on a real Redis (7.0 here): it loads, two versions
// live side by side, and no call sees the state another left in the library's
// module-level locals (which outlive calls).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/store/layout.js';
import { jobOps, type Reservation } from '../../src/store/ops.js';
import { bindScripts, FunctionLibrary } from '../../src/store/redis/functions.js';
import { RedisJobStore } from '../../src/store/redis/job-store.js';
import { buildLibrary, luaDir } from '../../src/store/redis/scripts.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { uniquePrefix } from '../helpers/redstalk.js';

let server: TestRedis;
let redis: Redis;
const dirs: string[] = [];
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A copy of lua/ with one file edited. */
function luaCopy(file: string, edit: (text: string) => string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-lua-'));
  dirs.push(dir);
  cpSync(luaDir(), dir, { recursive: true });
  writeFileSync(path.join(dir, file), edit(readFileSync(path.join(dir, file), 'utf8')));
  return dir;
}

const none = () => {};

describe('the functions library', () => {
  it('loads with FUNCTION LOAD on Redis 7.0 or newer, once per version', async () => {
    const version = /^redis_version:(\d+)\.(\d+)/m.exec(await redis.info('server'))!;
    expect(Number(version[1])).toBeGreaterThanOrEqual(7);
    const library = new FunctionLibrary(redis);
    await library.open();
    await library.open(); // the same version again: "already exists" is fine
    const libs = (await redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', library.library.name)) as unknown[][];
    expect(libs.map((l) => l[1])).toEqual([library.library.name]);
    expect(library.library.name).toBe(`redstalk_${library.library.version}`);
    for (const f of library.library.functions) expect(f.fn.startsWith(`redstalk_${library.library.version}_`)).toBe(true);
  });

  it('builds another version from other code, and both serve the same data side by side (a rolling upgrade)', async () => {
    const newer = luaCopy('jobs/batch.lua', (t) => t.replace('--- @call\n', '--- @call\n-- (a newer version)\n'));
    const [oldLib, newLib] = [buildLibrary(), buildLibrary({ dir: newer })];
    expect(newLib.version).not.toBe(oldLib.version);
    expect(buildLibrary().version).toBe(oldLib.version); // the same code, the same version
    const keys = new Layout(uniquePrefix()).keys(0);
    const oldStore = new RedisJobStore(redis, bindScripts(redis).jobs, keys);
    const newStore = new RedisJobStore(redis, bindScripts(redis, { dir: newer }).jobs, keys);
    const [a] = await oldStore.apply([jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('from old'))]);
    const [b] = await newStore.apply([jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('from new'))]);
    const [byNew] = (await newStore.apply([jobOps.reserve(null, none, 'n', ['t'], 1)])) as Reservation[];
    const [byOld] = (await oldStore.apply([jobOps.reserve(null, none, 'o', ['t'], 1)])) as Reservation[];
    expect([byNew!.jobs[0]!.id, byOld!.jobs[0]!.id]).toEqual([a, b]);
    expect([byNew!.jobs[0]!.body.toString(), byOld!.jobs[0]!.body.toString()]).toEqual(['from old', 'from new']);
    const names = ((await redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'redstalk_*')) as unknown[][]).map((l) => l[1]);
    expect(names).toEqual(expect.arrayContaining([oldLib.name, newLib.name]));
  });

  it('starts every call with empty state: a call that failed half-way leaves nothing for the next one', async () => {
    const layout = new Layout(uniquePrefix());
    const keys = layout.keys(0);
    const store = new RedisJobStore(redis, bindScripts(redis).jobs, keys);
    // A tube whose keys are of the wrong type: the put into it fails in Redis, after the put before it
    // filled the call's write-back cache (its job, its queued ZADD, the counts) and before write_back.
    await redis.set(keys.tube('bad')[0]!, 'not a hash');
    const burnt = await store.apply([jobOps.put(null, none, 'a', 0, 0, 60, Buffer.from('x'))]);
    await store.apply([jobOps.delete(null, none, 'o', burnt[0] as string, 'a')]);
    await expect(store.apply([
      jobOps.put(null, none, 'a', 0, 0, 60, Buffer.from('half-way')),
      jobOps.put(null, none, 'bad', 0, 0, 60, Buffer.from('y')),
    ])).rejects.toThrow(/WRONGTYPE/);
    const lost = String(Number(burnt[0]) + 1); // the id the failed call gave its first put
    // The next calls see Redis only: no such job, nothing queued, nothing counted.
    const [deleted, reserved] = await store.apply([
      jobOps.delete(null, none, 'o', lost, 'a'),
      jobOps.reserve(null, none, 'o', ['a'], 1),
    ]);
    expect(deleted).toBe(false);
    expect(typeof reserved).toBe('number'); // nothing to reserve: ms until something may be, or -1
    expect(await store.jobInfo(lost)).toBeNull();
    expect(await redis.hlen(keys.globals[0]!)).toBe(0);
    expect(await redis.zcard(keys.tube('a')[1]!)).toBe(0);
    expect(await redis.hmget(keys.stats, 'jobs-ready', 'total-jobs')).toEqual(['0', '1']);
    // And the calls after that work as ever.
    const [id] = await store.apply([jobOps.put(null, none, 'a', 0, 0, 60, Buffer.from('z'))]);
    const [got] = (await store.apply([jobOps.reserve(null, none, 'o', ['a'], 1)])) as Reservation[];
    expect(got!.jobs.map((j) => [j.id, j.body.toString()])).toEqual([[id, 'z']]);
  });

  it('refuses a library whose helpers change a module-level local that their begin_<name> does not set', () => {
    const forgot = luaCopy('includes/jobs.lua', (t) => t.replace('  touched, touched_tube, net_ready, freed = {}, {}, {}, nil\n', '  touched_tube, net_ready, freed = {}, {}, nil\n'));
    expect(() => buildLibrary({ dir: forgot })).toThrow(/includes\/jobs\.lua: the module-level local 'touched' .* begin_jobs\(\) does not set it/);
    const kept = luaCopy('jobs/batch.lua', (t) => t.replace(/^local put_here$/m, 'local put_here = {}').replace('  put_here = {}\n', ''));
    expect(() => buildLibrary({ dir: kept })).toThrow(/jobs\/batch\.lua: the module-level local 'put_here' is changed within calls, and begin_batch\(\) does not set it/);
  });
});
