// redstalk's Lua runs as one Redis Functions library (src/store/redis/functions.ts):
// loaded on every primary at start, loaded again when Redis has lost it, and a
// start refused, with its cause, on a Redis that cannot keep jobs.
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { buildLibrary } from '../../src/store/redis/scripts.js';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { startRedis } from '../helpers/redis.js';
import { startRedstalk } from '../helpers/redstalk.js';
import { onCluster, testClusterUrl } from '../helpers/topology.js';

const ctx = sidecarPerTest();
const dial = () => ctx.dial();

/** Admin links to the primaries the sidecar uses: this file's Redis, or every primary of the shared test cluster. */
async function primaries(): Promise<Redis[]> {
  if (!onCluster) return [new Redis(ctx.redis.url)];
  const links = testClusterUrl.replace('redis-cluster://', '').split(',').map((hp) => new Redis(Number(hp.split(':')[1]), hp.split(':')[0]!));
  const roles = await Promise.all(links.map(async (l) => ((await l.call('ROLE')) as [string])[0]));
  for (const [i, l] of links.entries()) if (roles[i] !== 'master') l.disconnect();
  return links.filter((_, i) => roles[i] === 'master');
}

type FunctionList = Array<[string, string, string, string, string, Array<[string, string, string, string | null, string, string[]]>]>;

/** FUNCTION LIST of one library: function name -> flags. */
async function listed(link: Redis, library: string): Promise<Map<string, string[]>> {
  const libs = (await link.call('FUNCTION', 'LIST', 'LIBRARYNAME', library)) as FunctionList;
  const lib = libs.find((l) => l[1] === library);
  return new Map((lib?.[5] ?? []).map((f) => [f[1], f[5]]));
}

it('loads its library on every primary at start: one function per script, with its flags', async () => {
  const library = buildLibrary({ shardedPubSub: onCluster });
  const links = await primaries();
  try {
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) {
      const functions = await listed(link, library.name);
      expect(functions.size).toBe(library.functions.length);
      for (const f of library.functions) expect([...functions.get(f.fn) ?? []].sort(), f.fn).toEqual([...f.flags].sort());
    }
  } finally {
    for (const l of links) l.disconnect();
  }
});

it('calls the no-writes scripts with FCALL_RO and the others with FCALL', async () => {
  const links = await primaries();
  const counts = async () => {
    let ro = 0;
    let rw = 0;
    for (const l of links) {
      const stats = await l.info('commandstats');
      ro += Number(/cmdstat_fcall_ro:calls=(\d+)/.exec(stats)?.[1] ?? 0);
      rw += Number(/cmdstat_fcall:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    }
    return { ro, rw };
  };
  try {
    const a = await dial();
    expect(await a.cmd('put 0 0 60 1\r\nx')).toMatch(/^INSERTED \d+$/);
    const before = await counts();
    expect(await a.cmd('peek-ready')).toMatch(/^FOUND \d+ 1\nx$/);
    const after = await counts();
    expect(after.ro - before.ro).toBeGreaterThanOrEqual(1);
  } finally {
    for (const l of links) l.disconnect();
  }
});

// FUNCTION FLUSH on the shared test cluster would disturb the other files' sidecars: the cluster's own case is in cluster.test.ts.
it.skipIf(onCluster)('loses and doubles nothing when Redis loses its functions while jobs come and go (FUNCTION FLUSH)', async () => {
  const admin = new Redis(ctx.redis.url);
  try {
    const producers = await Promise.all(Array.from({ length: 4 }, () => dial()));
    const rounds = 10;
    const perRound = 5;
    // Between rounds the functions are flushed: each round's first calls find none. During them,
    // more flushes come at random moments, while calls are in flight.
    let putting = true;
    const flusher = (async () => {
      while (putting) {
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 20));
        await admin.function('FLUSH');
      }
    })();
    const ids: string[] = [];
    for (let round = 0; round < rounds; round++) {
      await admin.function('FLUSH');
      ids.push(...(await Promise.all(producers.map(async (p, k) => {
        for (let i = 0; i < perRound; i++) p.send(`put 0 0 60 3\r\n${k}-${i}\r\n`);
        const got: string[] = [];
        for (let i = 0; i < perRound; i++) got.push(/^INSERTED (\d+)$/.exec(await p.line())![1]!);
        return got;
      }))).flat());
    }
    putting = false;
    await flusher;
    const total = rounds * producers.length * perRound;
    expect(new Set(ids).size).toBe(total);
    // The sidecar loaded its library again after each round's flush (FUNCTION LOAD: at start, then at least once a round).
    expect(Number(/cmdstat_function\|load:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1])).toBeGreaterThan(rounds);
    const c = await dial();
    await admin.function('FLUSH');
    const stats = await c.cmd('stats');
    expect(stats).toContain(`total-jobs: ${total}\n`);
    expect(stats).toContain(`current-jobs-ready: ${total}\n`);
    const reserved = new Set<string>();
    for (let i = 0; i < total; i++) {
      if (i % 50 === 0) await admin.function('FLUSH');
      const id = /^RESERVED (\d+) 3\n/.exec(await c.cmd('reserve-with-timeout 0'))![1]!;
      reserved.add(id);
      expect(await c.cmd(`delete ${id}`)).toBe('DELETED');
    }
    expect([...reserved].sort()).toEqual([...ids].sort());
    expect(await c.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    expect(await c.cmd('stats')).toContain('current-jobs-ready: 0\n');
    expect((await listed(admin, buildLibrary().name)).size).toBe(buildLibrary().functions.length);
  } finally {
    admin.disconnect();
  }
});

it.skipIf(onCluster)('refuses to start on a Redis whose maxmemory-policy evicts keys, read from INFO (CONFIG renamed away)', async () => {
  const redis = await startRedis({ args: ['--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', ''] });
  try {
    await expect(startRedstalk({ redisUrl: redis.url })).rejects.toThrow(/maxmemory-policy allkeys-lru: when full it would evict keys, and jobs with them.*noeviction/);
  } finally {
    await redis.stop();
  }
});

// No Lua engine is simulated by a Redis without the FUNCTION command: FUNCTION LOAD answers an
// error (unknown command), as a Valkey built without Lua answers one (no engine for "#!lua").
it.skipIf(onCluster)('refuses to start, naming the cause, on a Redis that cannot load Lua functions', async () => {
  const redis = await startRedis({ args: ['--rename-command', 'FUNCTION', ''] });
  try {
    await expect(startRedstalk({ redisUrl: redis.url })).rejects.toThrow(/this Redis cannot run Lua functions.*FUNCTION LOAD redstalk_[0-9a-f]+ answered: ERR unknown command/);
  } finally {
    await redis.stop();
  }
});
