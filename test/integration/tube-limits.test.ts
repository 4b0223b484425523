// tube-set (protocol extension): a tube's max-reserved and reserve-rate,
// which every reserve checks in its own Lua call, so they hold across
// sidecars; settings kept in Redis, outliving the tube.
import { describe, expect, it } from 'vitest';
import { sidecarsPerTest } from '../helpers/fixtures.js';
import type { TestSidecar } from '../helpers/redstalk.js';
import { Layout } from '../../src/store/layout.js';
import { dataSetClient, testShards } from '../helpers/topology.js';
import { Wire, yamlMap } from '../helpers/wire.js';

const ctx = sidecarsPerTest();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function putJobs(w: Wire, tube: string, n: number): Promise<void> {
  await w.cmd(`use ${tube}`);
  for (let i = 0; i < n; i++) w.send(`put 0 0 60 1\r\n${i % 10}\r\n`);
  for (let i = 0; i < n; i++) expect(await w.line()).toMatch(/^INSERTED \d+$/);
}

async function watching(w: Wire, tube: string): Promise<Wire> {
  await w.cmd(`watch ${tube}`);
  await w.cmd('ignore default');
  return w;
}

describe('tube-set', () => {
  it('answers OK, BAD_FORMAT for an unknown setting or a rate over 100000, and keeps settings while the tube comes and goes', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const a = await ctx.dial(A);
    for (const bad of ['tube-set ghost speed 1', 'tube-set ghost reserve-rate 100001', 'tube-set ghost max-reserved -1',
      'tube-set ghost max-reserved', 'tube-set -x max-reserved 1', 'tube-set ghost max-reserved 1 2', 'tube-set ghost  max-reserved 1']) {
      expect(await a.cmd(bad), bad).toBe('BAD_FORMAT');
    }
    // A tube that does not exist: set, but not created.
    expect(await a.cmd('tube-set ghost max-reserved 3')).toBe('OK');
    expect(await a.cmd('tube-set ghost reserve-rate 100000')).toBe('OK');
    expect(await a.cmd('stats-tube ghost')).toBe('NOT_FOUND');
    expect(await a.cmd('use ghost')).toBe('USING ghost');
    expect(yamlMap(await a.cmd('stats-tube ghost'))).toMatchObject({ 'max-reserved': '3', 'reserve-rate': '100000', 'dedup-window': '300' });
    // Gone (no job, nobody uses it) and back: the settings stay.
    expect(await a.cmd('use default')).toBe('USING default');
    expect(await a.cmd('stats-tube ghost')).toBe('NOT_FOUND');
    expect(await a.cmd('use ghost')).toBe('USING ghost');
    expect(yamlMap(await a.cmd('stats-tube ghost'))['max-reserved']).toBe('3');
  });
});

describe('max-reserved', () => {
  it('reserves no more of a tube\'s jobs than its cap, passing it over for other watched tubes as a paused one', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const p = await ctx.dial(A);
    await putJobs(p, 'capped', 5);
    await p.cmd('use other');
    expect(await p.cmd('put 100 0 60 1\r\no')).toBe('INSERTED 6');
    expect(await p.cmd('tube-set capped max-reserved 2')).toBe('OK');
    const w = await watching(await ctx.dial(A), 'capped');
    await w.cmd('watch other');
    // Two of the capped tube's (more urgent), then the other tube's.
    expect(await w.cmd('reserve-many 10 0')).toBe('RESERVED-MANY 3');
    expect((await w.reply()).line).toBe('RESERVED 1 1');
    expect((await w.reply()).line).toBe('RESERVED 2 1');
    expect((await w.reply()).line).toBe('RESERVED 6 1');
    expect(await w.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    expect(yamlMap(await p.cmd('stats-tube capped'))).toMatchObject({ 'current-jobs-reserved': '2', 'current-jobs-ready': '3' });
  });

  it('wakes a reserve waiting on another sidecar as soon as a slot is freed (delete, release, bury, a closed connection)', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const p = await ctx.dial(A);
    for (const free of ['delete', 'release', 'bury', 'close'] as const) {
      const tube = `capped-${free}`;
      await putJobs(p, tube, 2);
      await p.cmd(`tube-set ${tube} max-reserved 1`);
      const holder = await watching(await ctx.dial(A), tube);
      const waiter = await watching(await ctx.dial(B), tube);
      const held = /^RESERVED (\d+)/.exec(await holder.cmd('reserve-with-timeout 0'))![1]!;
      waiter.send('reserve-with-timeout 10\r\n');
      expect(await waiter.silent(200)).toBe(true);
      const t0 = Date.now();
      if (free === 'delete') expect(await holder.cmd(`delete ${held}`)).toBe('DELETED');
      if (free === 'release') expect(await holder.cmd(`release ${held} 0 5`)).toBe('RELEASED');
      if (free === 'bury') expect(await holder.cmd(`bury ${held} 0`)).toBe('BURIED');
      if (free === 'close') holder.socket.destroy();
      expect(await waiter.line(5000), free).toMatch(/^RESERVED /);
      expect(Date.now() - t0, `${free}: woken by the freed slot, not by the look a second later`).toBeLessThan(900);
    }
  });

  it('counts a job taken by reserve-job: not held back by the cap, but holding a slot whose freeing wakes a waiter', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const p = await ctx.dial(A);
    await putJobs(p, 'capped-by-id', 3);
    await p.cmd('tube-set capped-by-id max-reserved 1');
    const holder = await watching(await ctx.dial(A), 'capped-by-id');
    expect(await holder.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\n0');
    expect(await holder.cmd('reserve-job 2')).toBe('RESERVED 2 1\n1');
    const waiter = await watching(await ctx.dial(B), 'capped-by-id');
    waiter.send('reserve-with-timeout 10\r\n');
    expect(await holder.cmd('delete 1')).toBe('DELETED');
    // Still at the cap (job 2 holds the slot): the waiter looks again once a second. Half-way to
    // its second look, job 2 goes: its freed slot wakes the waiter, well before that look.
    expect(await waiter.silent(1500), 'still at the cap: job 2 holds the slot').toBe(true);
    const t0 = Date.now();
    expect(await holder.cmd('delete 2')).toBe('DELETED');
    expect(await waiter.line(5000)).toBe('RESERVED 3 1');
    expect(Date.now() - t0, 'woken by the freed slot, not by the look once a second').toBeLessThan(300);
  });

  it('wakes waiting reserves when the cap is raised', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const p = await ctx.dial(A);
    await putJobs(p, 'capped', 2);
    await p.cmd('tube-set capped max-reserved 1');
    const [w1, w2] = [await watching(await ctx.dial(A), 'capped'), await watching(await ctx.dial(A), 'capped')];
    expect(await w1.cmd('reserve-with-timeout 0')).toMatch(/^RESERVED /);
    w2.send('reserve-with-timeout 10\r\n');
    expect(await w2.silent(200)).toBe(true);
    expect(await p.cmd('tube-set capped max-reserved 0')).toBe('OK');
    expect(await w2.line(900)).toMatch(/^RESERVED /);
  });

  it('a cap of 5 never shows 6 reserved, with 16 workers on two sidecars', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const p = await ctx.dial(A);
    const jobs = 300;
    await putJobs(p, 'five', jobs);
    await p.cmd('tube-set five max-reserved 5');
    let holding = 0;
    let mostHeld = 0;
    let done = 0;
    const work = async (w: Wire) => {
      await watching(w, 'five');
      for (;;) {
        const r = await w.cmd('reserve-with-timeout 1');
        if (r === 'TIMED_OUT') return;
        const id = /^RESERVED (\d+)/.exec(r)![1];
        // Held from its RESERVED until its delete is sent: within the store's reservation.
        mostHeld = Math.max(mostHeld, ++holding);
        await sleep(Math.random() * 4);
        holding--;
        expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
        done++;
      }
    };
    // The store's count, read in one script, as often as a connection answers.
    let mostReserved = 0;
    let sampling = true;
    const monitor = await ctx.dial(B);
    const sample = (async () => {
      while (sampling) mostReserved = Math.max(mostReserved, Number(yamlMap(await monitor.cmd('stats-tube five'))['current-jobs-reserved']));
    })();
    const workers = await Promise.all(Array.from({ length: 16 }, (_, i) => ctx.dial(i % 2 ? B : A)));
    await Promise.all(workers.map(work));
    sampling = false;
    await sample;
    expect(done).toBe(jobs);
    expect(mostReserved).toBeLessThanOrEqual(5);
    expect(mostHeld).toBeLessThanOrEqual(5);
    expect(mostReserved, 'the cap was reached').toBe(5);
  });
});

describe('reserve-rate', () => {
  it('hands out at most the rate in a second, and a waiting reserve gets the next when a token comes back', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const p = await ctx.dial(A);
    await putJobs(p, 'slow', 8);
    await p.cmd('tube-set slow reserve-rate 5');
    const w = await watching(await ctx.dial(A), 'slow');
    const t0 = Date.now();
    expect(await w.cmd('reserve-many 10 0')).toBe('RESERVED-MANY 5');
    for (let k = 0; k < 5; k++) await w.reply();
    expect(await w.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    expect(await w.cmd('reserve-with-timeout 5')).toMatch(/^RESERVED /);
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(2000);
  });

  it('counts a reserve-job: it takes its job whatever the rate, and spends a token', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const w = await watching(await ctx.dial(A), 'by-id');
    await putJobs(w, 'by-id', 3);
    expect(await w.cmd('tube-set by-id reserve-rate 1')).toBe('OK');
    expect(await w.cmd('reserve-job 2')).toBe('RESERVED 2 1\n1');
    expect(await w.cmd('reserve-with-timeout 0'), 'the second\'s token went to reserve-job').toBe('TIMED_OUT');
    expect(await w.cmd('reserve-job 3')).toBe('RESERVED 3 1\n2');
  });

  it('counts every reserve, also of one job reserved again within the second', async () => {
    const [A] = (await ctx.sidecars(1)) as [TestSidecar];
    const w = await watching(await ctx.dial(A), 'again');
    await putJobs(w, 'again', 1);
    expect(await w.cmd('tube-set again reserve-rate 2')).toBe('OK');
    for (let k = 0; k < 2; k++) {
      expect(await w.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\n0');
      expect(await w.cmd('release 1 0 0')).toBe('RELEASED');
    }
    expect(await w.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
  });

  it('a rate of 100/s never lets more than 100 reserves into any second, with 10 workers on two sidecars', async () => {
    const [A, B] = (await ctx.sidecars(2)) as [TestSidecar, TestSidecar];
    const p = await ctx.dial(A);
    await putJobs(p, 'hundred', 400);
    await p.cmd('tube-set hundred reserve-rate 100');
    // When each reserve ran, on Redis' clock: its reservation's deadline less the TTR (60 s).
    // (The workers' own clocks see replies late by varying ms: a few reserves would seem to bunch.)
    const reservations = new Layout(A.prefix, testShards).keys(new Layout(A.prefix, testShards).shardOf('hundred')).reserved;
    const db = dataSetClient(ctx.redis.url);
    const reservedAt: number[] = [];
    const until = Date.now() + 2500;
    const work = async (w: Wire) => {
      await watching(w, 'hundred');
      while (Date.now() < until) {
        const r = await w.cmd('reserve-with-timeout 1');
        if (r === 'TIMED_OUT') continue;
        const id = /^RESERVED (\d+)/.exec(r)![1]!;
        reservedAt.push(Number(await db.zscore(reservations, `${String.fromCharCode(48 + id.length)}${id}hundred`)) - 60_000);
        expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
      }
    };
    const workers = await Promise.all(Array.from({ length: 10 }, (_, i) => Wire.connect((i % 2 ? B : A).port, '127.0.0.1', true)));
    try {
      await Promise.all(workers.map(work));
    } finally {
      for (const w of workers) w.socket.destroy();
      db.disconnect();
    }
    reservedAt.sort((x, y) => x - y);
    let most = 0;
    for (let i = 0, j = 0; i < reservedAt.length; i++) {
      while (reservedAt[i]! - reservedAt[j]! >= 1000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(100);
    // The rate is used, not just capped: about 100 a second, for at least 2.5 s.
    expect(reservedAt.length).toBeGreaterThanOrEqual(200);
  });

});
