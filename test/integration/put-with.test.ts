// put-with (protocol extension): a client key that makes a put safe to
// retry (DUPLICATE <id> of the job put with it), and jobs that expire when
// no reserve took them in time. Against a real Redis, on one sidecar and two.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sidecarsPerTest } from '../helpers/fixtures.js';
import { startRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';
import { yamlMap, type Wire } from '../helpers/wire.js';

const ctx = sidecarsPerTest();

async function dial(s?: TestSidecar): Promise<Wire> {
  return ctx.dial(s ?? (await ctx.sidecars(1))[0]!);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `ok` holds (at most `ms`); returns how long that took. */
async function within(ms: number, ok: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await sleep(20);
  }
  return Date.now() - t0;
}

describe('put-with keys', () => {
  it('stores the first put of a key and answers DUPLICATE with its id after, in any state, without using an id', async () => {
    const a = await dial();
    expect(await a.cmd('use mail')).toBe('USING mail');
    expect(await a.cmd('put-with order-1 0 delete 0 0 60 2\r\nhi')).toBe('INSERTED 1');
    expect(await a.cmd('put-with order-1 0 delete 5 0 60 5\r\nother')).toBe('DUPLICATE 1');
    // Ids stay consecutive: a duplicate took none.
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 2');
    expect(await a.cmd('watch mail')).toBe('WATCHING 2');
    expect(await a.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 2\nhi');
    expect(await a.cmd('put-with order-1 0 delete 0 0 60 2\r\nhi')).toBe('DUPLICATE 1');
    expect(await a.cmd('bury 1 0')).toBe('BURIED');
    expect(await a.cmd('put-with order-1 0 delete 0 0 60 2\r\nhi')).toBe('DUPLICATE 1');
    // Keys are per tube; `-` is no key.
    expect(await a.cmd('use other')).toBe('USING other');
    expect(await a.cmd('put-with order-1 0 delete 0 0 60 2\r\nhi')).toBe('INSERTED 3');
    expect(await a.cmd('put-with - 0 delete 0 0 60 2\r\nhi')).toBe('INSERTED 4');
    expect(await a.cmd('put-with - 0 delete 0 0 60 2\r\nhi')).toBe('INSERTED 5');
    const t = yamlMap(await a.cmd('stats-tube mail'));
    expect(t).toMatchObject({ 'total-jobs': '2', 'duplicate-puts': '3', 'jobs-expired': '0', 'dedup-window': '300', 'max-reserved': '0' });
  });

  it('two puts of one key in one batch store one job', async () => {
    const a = await dial();
    a.send('put-with k 0 delete 0 0 60 1\r\na\r\nput-with k 0 delete 0 0 60 1\r\nb\r\nput-with j 0 delete 0 0 60 1\r\nc\r\n');
    expect([await a.line(), await a.line(), await a.line()]).toEqual(['INSERTED 1', 'DUPLICATE 1', 'INSERTED 2']);
    expect(await a.cmd('peek 1')).toBe('FOUND 1 1\na');
    expect(await a.cmd('peek 3')).toBe('NOT_FOUND');
  });

  it('remembers a deleted job\'s key for the tube\'s dedup-window, then stores it again', async () => {
    const a = await dial();
    expect(await a.cmd('put-with k 0 delete 0 0 60 1\r\na')).toBe('INSERTED 1');
    expect(await a.cmd('delete 1')).toBe('DELETED');
    expect(await a.cmd('put-with k 0 delete 0 0 60 1\r\na')).toBe('DUPLICATE 1');
    expect(await a.cmd('tube-set default dedup-window 1')).toBe('OK');
    expect(await a.cmd('put-with w 0 delete 0 0 60 1\r\na')).toBe('INSERTED 2');
    expect(await a.cmd('delete 2')).toBe('DELETED');
    expect(await a.cmd('put-with w 0 delete 0 0 60 1\r\na')).toBe('DUPLICATE 2');
    await sleep(1100);
    expect(await a.cmd('put-with w 0 delete 0 0 60 1\r\na')).toBe('INSERTED 3');
    // A window of 0 forgets the key with its job.
    expect(await a.cmd('tube-set default dedup-window 0')).toBe('OK');
    expect(await a.cmd('delete 3')).toBe('DELETED');
    expect(await a.cmd('put-with w 0 delete 0 0 60 1\r\na')).toBe('INSERTED 4');
  });

  it('answers DUPLICATE on another sidecar of the same Redis (a retry through another sidecar)', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const [a, b] = [await dial(A), await dial(B)];
    expect(await a.cmd('put-with retry-7 0 delete 0 0 60 3\r\none')).toBe('INSERTED 1');
    expect(await b.cmd('put-with retry-7 0 delete 0 0 60 3\r\none')).toBe('DUPLICATE 1');
    expect(yamlMap(await b.cmd('stats-tube default'))['current-jobs-ready']).toBe('1');
  });

  it('answers BAD_FORMAT for a bad key, a bad on-expiry word, a missing or out-of-range number, and bytes after them', async () => {
    const a = await dial();
    const long = 'k'.repeat(129);
    for (const bad of [`put-with ${long} 0 delete 0 0 60 1`, 'put-with a\x7fb 0 delete 0 0 60 1', 'put-with k 0 maybe 0 0 60 1',
      'put-with k 0 Delete 0 0 60 1', 'put-with k -1 delete 0 0 60 1', 'put-with k 0 delete 0 0 60', 'put-with k 0 delete 0 0 60 1 x',
      'put-with  k 0 delete 0 0 60 1', 'put-with k 0 delete 4294967296 0 60 1', 'put-with k 0  delete 0 0 60 1']) {
      expect(await a.cmd(bad), JSON.stringify(bad)).toBe('BAD_FORMAT');
    }
    expect(await a.cmd(`put-with ${'k'.repeat(128)} 0 delete 0 0 60 1\r\nx`)).toBe('INSERTED 1');
    expect(await a.cmd('put-with k 0 delete 0 0 60 1\r\nxyz')).toBe('EXPECTED_CRLF');
    const b = await dial();
    expect(await b.cmd('put-with q 0 delete 0 0 60 70000\r\n' + 'x'.repeat(70000))).toBe('JOB_TOO_BIG');
  });
});

describe('put-with expiry', () => {
  it('deletes a job no reserve took within its expiry, within a second of its time, and counts it', async () => {
    const a = await dial();
    expect(await a.cmd('use t')).toBe('USING t');
    const t0 = Date.now();
    expect(await a.cmd('put-with e1 1 delete 0 0 60 1\r\na')).toBe('INSERTED 1');
    expect(await a.cmd('put-with e2 1 delete 0 5 60 1\r\nb')).toBe('INSERTED 2'); // delayed past its expiry
    expect(await a.cmd('put-with e3 30 delete 0 0 60 1\r\nc')).toBe('INSERTED 3');
    await within(3000, async () => (await a.cmd('peek 1')) === 'NOT_FOUND' && (await a.cmd('peek 2')) === 'NOT_FOUND');
    expect(Date.now() - t0 - 1000).toBeLessThan(1000);
    expect(await a.cmd('peek 3')).toBe('FOUND 3 1\nc');
    expect(yamlMap(await a.cmd('stats-tube t'))).toMatchObject({ 'jobs-expired': '2', 'current-jobs-ready': '1', 'current-jobs-delayed': '0' });
    // Its key stays remembered as after a delete.
    expect(await a.cmd('put-with e1 1 delete 0 0 60 1\r\na')).toBe('DUPLICATE 1');
  });

  it('buries the job when the put asks, keeping its key', async () => {
    const a = await dial();
    expect(await a.cmd('put-with b 1 bury 7 0 60 1\r\na')).toBe('INSERTED 1');
    await within(3000, async () => (await a.cmd('peek-buried')) === 'FOUND 1 1\na');
    expect(yamlMap(await a.cmd('stats-job 1'))).toMatchObject({ state: 'buried', pri: '7', reserves: '0' });
    expect(await a.cmd('put-with b 1 bury 7 0 60 1\r\na')).toBe('DUPLICATE 1');
    // Kicked, it is an ordinary job: it expires no more.
    expect(await a.cmd('kick 1')).toBe('KICKED 1');
    await sleep(1300);
    expect(await a.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\na');
  });

  it('never expires a job once reserved, released or not', async () => {
    const a = await dial();
    expect(await a.cmd('put-with r 1 delete 0 0 60 1\r\na')).toBe('INSERTED 1');
    expect(await a.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\na');
    expect(await a.cmd('release 1 0 0')).toBe('RELEASED');
    await sleep(1500);
    expect(await a.cmd('peek 1')).toBe('FOUND 1 1\na');
    // No count, no setting: stats-tube is beanstalkd's.
    expect(yamlMap(await a.cmd('stats-tube default'))['jobs-expired']).toBeUndefined();
  });

  it('is done by whatever sidecar is alive: the one that took the put may be gone', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const a = await dial(A);
    const t0 = Date.now();
    expect(await a.cmd('put-with gone 1 delete 0 0 60 1\r\na')).toBe('INSERTED 1');
    a.socket.destroy();
    await A.stop();
    const b = await dial(B);
    await within(3000, async () => (await b.cmd('peek 1')) === 'NOT_FOUND');
    // B holds no timer for it: its promotion timer learns the soonest expiry from the store.
    expect(Date.now() - t0 - 1000).toBeLessThan(1000);
    expect(yamlMap(await b.cmd('stats-tube default'))['jobs-expired']).toBe('1');
  });
});

describe('across a Redis restart', () => {
  it.skipIf(onCluster)('keeps keys, expiries and tube settings: they live in Redis with the jobs', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-put-with-'));
    let redis = await startRedis({ dir, appendonly: true });
    const { port } = redis;
    const sidecar = await startRedstalk({ redisUrl: redis.url });
    try {
      const a = await ctx.dial(sidecar);
      expect(await a.cmd('put-with kept 0 delete 0 0 60 1\r\na')).toBe('INSERTED 1');
      expect(await a.cmd('put-with soon 2 delete 0 0 60 1\r\nb')).toBe('INSERTED 2');
      expect(await a.cmd('tube-set default max-reserved 1')).toBe('OK');
      await redis.stop({ keepDir: true });
      redis = await startRedis({ dir, appendonly: true, port });
      await within(10_000, async () => (await a.cmd('stats-job 1')).startsWith('OK'));
      expect(await a.cmd('put-with kept 0 delete 0 0 60 1\r\na')).toBe('DUPLICATE 1');
      expect(yamlMap(await a.cmd('stats-tube default'))['max-reserved']).toBe('1');
      expect(await a.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\na');
      expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT'); // job 2 waits for the slot
      await within(5000, async () => (await a.cmd('peek 2')) === 'NOT_FOUND'); // and expires
    } finally {
      await sidecar.stop();
      await redis.stop();
    }
  });
});

describe('stats-tube', () => {
  it('prints beanstalkd\'s 14 fields for a tube that uses no extension, and the 5 more once one is set', async () => {
    const a = await dial();
    expect(await a.cmd('put 0 0 60 1\r\na')).toBe('INSERTED 1');
    expect(Object.keys(yamlMap(await a.cmd('stats-tube default')))).toHaveLength(14);
    expect(await a.cmd('tube-set default reserve-rate 50')).toBe('OK');
    const t = yamlMap(await a.cmd('stats-tube default'));
    expect(Object.keys(t).slice(14)).toEqual(['max-reserved', 'reserve-rate', 'dedup-window', 'jobs-expired', 'duplicate-puts']);
    expect(t['reserve-rate']).toBe('50');
    expect(await a.cmd('tube-set default reserve-rate 0')).toBe('OK');
    expect(Object.keys(yamlMap(await a.cmd('stats-tube default')))).toHaveLength(14);
  });
});
