// A connection watching many tubes (more than 64): its watch list is kept in
// Redis, sent with its first reserve (in each shard, that shard's part) and
// named by version after that, so a reserve does not carry it; it goes when
// the connection closes, and when its sidecar leaves or is reaped.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { startRedstalk, startInside, type InsideSidecar } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';
import { yamlMap, type Wire } from '../helpers/wire.js';

const ctx = sidecarPerTest<InsideSidecar>(startInside);
const TUBES = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function watchMany(a: Wire): Promise<void> {
  let batch = '';
  for (let i = 0; i < TUBES; i++) batch += `watch w${i}\r\n`;
  a.send(batch);
  for (let i = 0; i < TUBES; i++) await a.line();
  expect(await a.cmd('ignore default')).toBe(`WATCHING ${TUBES}`);
}

/** The keys of this test's data set that hold watch lists (and their index), on the test's own Redis. */
async function watchKeys(redis: Redis): Promise<string[]> {
  const keys: string[] = [];
  for (const pattern of [`{${ctx.sidecar.prefix}:*:watch:*`, `{${ctx.sidecar.prefix}:*:watch-lists:*`]) {
    keys.push(...(await redis.keys(pattern)));
  }
  return keys.sort();
}

/** The commands the sidecar sent to the test's Redis while `run` ran (not those of scripts), each as its words. */
async function monitored(run: () => Promise<void>): Promise<string[][]> {
  const monitor = await new Redis(ctx.redis.url, { retryStrategy: () => null }).monitor();
  const log: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => { if (source !== 'lua') log.push(args); });
  await sleep(50);
  await run();
  await sleep(100);
  monitor.disconnect();
  return log;
}

/** A connection whose watch list of TUBES tubes a reserve has stored, and a link to the test's Redis. */
async function stored(): Promise<{ redis: Redis; a: Wire }> {
  const redis = new Redis(ctx.redis.url);
  const a = await ctx.dial();
  await watchMany(a);
  expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
  expect((await watchKeys(redis)).length).toBeGreaterThan(0);
  return { redis, a };
}

// On the test cluster the sidecar's calls and keys are on the cluster's nodes, not on this redis-server.
describe.skipIf(onCluster)(`a connection watching ${TUBES} tubes`, () => {
  it('sends its watch list with its first reserve only; later reserves name it by version', async () => {
    const a = await ctx.dial();
    const b = await ctx.dial();
    await watchMany(a);
    await sleep(100); // the heartbeat with the new counters has gone out
    const log = await monitored(async () => {
      for (let i = 0; i < 3; i++) {
        await b.cmd(`use w${i * 7}`);
        const id = /^INSERTED (\d+)$/.exec(await b.cmd('put 0 0 60 1\r\nx'))![1]!;
        expect(await a.cmd('reserve-with-timeout 0')).toBe(`RESERVED ${id} 1\nx`);
        expect(await a.cmd(`delete ${id}`)).toBe('DELETED');
      }
      expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    });
    // w50 is watched and never used: only the call that stored the list (in w50's shard) names it.
    const naming = log.filter((args) => args[0]!.toLowerCase() === 'fcall' && args.some((x) => x === 'w50' || x.split(/[ :]/).includes('w50')));
    expect(naming).toHaveLength(1);
    // Changing the watch list sends it once more, then again not.
    expect(await a.cmd('watch extra')).toBe(`WATCHING ${TUBES + 1}`);
    const log2 = await monitored(async () => {
      for (let i = 0; i < 3; i++) expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    });
    expect(log2.filter((args) => args[0]!.toLowerCase() === 'fcall' && args.includes('w50'))).toHaveLength(1);
  });

  it('leaves no watch list behind when it closes', async () => {
    const { redis, a } = await stored();
    a.close();
    await expect.poll(() => watchKeys(redis), { timeout: 5000 }).toEqual([]);
    redis.disconnect();
  });

  it('loses its watch lists with its sidecar when that is reaped', async () => {
    const { redis } = await stored();
    // What another sidecar's reaper does once this one's lease has lapsed (a live lease is not reaped: end it
    // first, its beats stopped as a dead sidecar's are, or a beat in between would renew it).
    (ctx.sidecar.sidecar as unknown as { presence: { stop(): void } }).presence.stop();
    await ctx.sidecar.backend.jobs.heartbeat(ctx.sidecar.sidecar.nodeId, 0, []);
    await ctx.sidecar.backend.jobs.forgetNode(ctx.sidecar.sidecar.nodeId);
    expect(await watchKeys(redis)).toEqual([]);
    redis.disconnect();
  });

  it('sends its watch list again to a shard that lost it (a failover to a replica without it)', async () => {
    const { redis, a } = await stored();
    const b = await ctx.dial();
    await redis.del(...(await watchKeys(redis)));
    await b.cmd('use w42');
    const id = /^INSERTED (\d+)$/.exec(await b.cmd('put 0 0 60 1\r\ny'))![1]!;
    expect(await a.cmd('reserve-with-timeout 0')).toBe(`RESERVED ${id} 1\ny`);
    expect((await watchKeys(redis)).some((k) => k.endsWith(`:watch:${ctx.sidecar.sidecar.nodeId}:1`))).toBe(true);
    redis.disconnect();
  });

  it('leaves none behind when its sidecar stops', async () => {
    const { redis } = await stored();
    await ctx.sidecar.stop();
    expect(await watchKeys(redis)).toEqual([]);
    await ctx.restart({ prefix: ctx.sidecar.prefix });
    redis.disconnect();
  });

});

describe(`a connection watching ${TUBES} tubes, on any data set`, () => {
  it('counts as waiting on each of its tubes, on its own sidecar and on another', async () => {
    const other = await startRedstalk({ redisUrl: ctx.redis.url, prefix: ctx.sidecar.prefix });
    try {
      const a = await ctx.dial();
      await watchMany(a);
      a.send('reserve\r\n');
      const here = await ctx.dial();
      const there = await ctx.dial();
      const remote = await (await import('../helpers/wire.js')).Wire.connect(other.port);
      const waiting = async (w: Wire, tube: string) => yamlMap(await w.cmd(`stats-tube ${tube}`))['current-waiting'];
      await expect.poll(() => waiting(here, 'w17')).toBe('1');
      await expect.poll(() => waiting(remote, 'w17')).toBe('1');
      expect(await waiting(remote, 'w99')).toBe('1');
      expect(yamlMap(await remote.cmd('stats'))['current-waiting']).toBe('1');
      await there.cmd('use w3');
      await there.cmd('put 0 0 60 1\r\nz');
      expect((await a.reply()).line).toMatch(/^RESERVED \d+ 1$/);
      await expect.poll(() => waiting(remote, 'w17')).toBe('0');
      expect(await waiting(here, 'w17')).toBe('0');
      remote.close();
    } finally {
      await other.stop();
    }
  });
});
