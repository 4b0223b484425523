// Redis out of memory (maxmemory, noeviction): only what grows memory is
// refused (put: OUT_OF_MEMORY); everything that frees or moves jobs keeps
// working, so workers drain a full queue and it recovers by itself, as
// beanstalkd does when malloc fails.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ownRedisEachTest, type TestSidecar } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

// It sets maxmemory on its own redis-server: not on the test cluster.
describe.skipIf(onCluster)('Redis out of memory', () => {
  const own = ownRedisEachTest();
  let admin: Redis;
  let sidecar: TestSidecar;

  /** A sidecar on a Redis filled by puts of 1 KiB until it refuses them; returns the ids stored. */
  async function full(): Promise<{ a: Wire; ids: string[] }> {
    ({ admin, sidecar } = await own.start({ heartbeatMs: 200 }, async (link) => {
      await link.config('SET', 'maxmemory', '16mb');
      await link.config('SET', 'maxmemory-policy', 'noeviction');
    }));
    const a = await Wire.connect(sidecar.port);
    const body = 'x'.repeat(1024);
    const ids: string[] = [];
    for (;;) {
      a.send(`put 0 0 60 1024\r\n${body}\r\n`.repeat(50));
      let refused = false;
      for (let k = 0; k < 50; k++) {
        const r = await a.line();
        if (r === 'OUT_OF_MEMORY') refused = true;
        else ids.push(/^INSERTED (\d+)$/.exec(r)![1]!);
      }
      if (refused) break;
    }
    await overLimit();
    return { a, ids };
  }

  /** maxmemory a little below what Redis holds now: over the limit until well drained. */
  async function overLimit(): Promise<void> {
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory', String(used - (2 << 20)));
  }

  it('refuses puts but reserves, deletes, releases, buries, touches, kicks, uses new tubes and answers stats', async () => {
    const { a } = await full();
    expect(await a.cmd('put 0 0 60 1\r\nz')).toBe('OUT_OF_MEMORY');
    expect(await a.cmd('reserve-with-timeout 0')).toMatch(/^RESERVED \d+ 1024\n/);
    const held = async () => /^RESERVED (\d+)/.exec(await a.cmd('reserve-with-timeout 0'))![1]!;
    const x = await held();
    expect(await a.cmd(`touch ${x}`)).toBe('TOUCHED');
    expect(await a.cmd(`release ${x} 5 0`)).toBe('RELEASED');
    const y = await held();
    expect(await a.cmd(`bury ${y} 0`)).toBe('BURIED');
    expect(await a.cmd('kick 1')).toBe('KICKED 1');
    expect(await a.cmd(`delete ${await held()}`)).toBe('DELETED');
    expect(await a.cmd('use a-new-tube')).toBe('USING a-new-tube');
    expect(await a.cmd('watch another-new-tube')).toBe('WATCHING 2');
    expect(await a.cmd('stats')).toMatch(/^OK \d+\n---\ncurrent-jobs-urgent: /);
    expect(await a.cmd('stats-tube default')).toMatch(/^OK \d+\n/);
    expect(await a.cmd('reserve-many 5 0')).toMatch(/^RESERVED-MANY 5$/);
  });

  it('still expires reservations and promotes delayed jobs', async () => {
    const { a, ids } = await full();
    // Room for exactly one more small job: delete one, then put a delayed and a short-TTR one.
    expect(await a.cmd(`delete ${ids[0]}`)).toBe('DELETED');
    expect(await a.cmd(`delete ${ids[1]}`)).toBe('DELETED');
    await admin.config('SET', 'maxmemory', '0');
    const delayed = /^INSERTED (\d+)$/.exec(await a.cmd('put 0 1 60 1\r\nd'))![1]!;
    const short = /^INSERTED (\d+)$/.exec(await a.cmd('put 0 0 2 1\r\ns'))![1]!;
    await overLimit();
    expect(await a.cmd('put 0 0 60 1\r\nz')).toBe('OUT_OF_MEMORY');
    const b = await Wire.connect(sidecar.port);
    await b.cmd('use other');
    await b.cmd('watch other');
    await b.cmd('ignore default');
    // The short job is the most urgent ready one of default only once taken by id.
    expect(await b.cmd(`reserve-job ${short}`)).toMatch(/^RESERVED /);
    await expect.poll(async () => yamlMap(await a.cmd(`stats-job ${short}`)).state, { timeout: 6000, interval: 200 }).toBe('ready');
    await expect.poll(async () => yamlMap(await a.cmd(`stats-job ${delayed}`)).state, { timeout: 4000, interval: 200 }).toBe('ready');
  });

  it('lets workers drain a full queue (at least 90 % of attempts succeed), then takes puts again', async () => {
    const { a, ids } = await full();
    let ok = 0;
    let attempts = 0;
    const w = await Wire.connect(sidecar.port);
    for (let i = 0; i < Math.min(ids.length, 2000); i++) {
      attempts += 2;
      const r = await w.cmd('reserve-with-timeout 0');
      const id = /^RESERVED (\d+)/.exec(r)?.[1];
      if (id) ok++;
      if (id && (await w.cmd(`delete ${id}`)) === 'DELETED') ok++;
    }
    expect(ok / attempts).toBeGreaterThanOrEqual(0.9);
    // 2000 KiB of jobs gone: below the limit again, so puts are taken without anyone's help.
    await expect.poll(async () => a.cmd('put 0 0 60 1\r\nz'), { timeout: 5000 }).toMatch(/^INSERTED \d+$/);
  }, 60_000);
});
