// Cross-connection batching against a real Redis: batches form under load,
// each connection's replies keep its command order, a reply leaves only once
// Redis applied the command, and a failed call answers all of its commands
// with INTERNAL_ERROR without losing anything acknowledged.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { startInside } from '../helpers/redstalk.js';
import { yamlMap, type Wire } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

const ctx = sidecarPerTest(startInside);
/** The job store's batch calls and ops so far, over all its shards. */
const batcher = () => {
  const { calls, ops, pending } = ctx.sidecar.backend.jobs;
  return { calls, ops, pending };
};

/** Reads n replies (a RESERVED/FOUND line brings its body with it). */
async function replies(w: Wire, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await w.reply();
    out.push(r.body ? `${r.line}\n${r.body.toString()}` : r.line);
  }
  return out;
}

describe('batching', () => {
  it('sends a lone command in a call of its own', async () => {
    const a = await ctx.dial();
    const before = batcher().calls;
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    expect(batcher().calls - before).toBe(1);
  });

  it('combines commands of many connections, and of one pipelining connection, into few calls', async () => {
    const conns = await Promise.all(Array.from({ length: 20 }, () => ctx.dial()));
    const { calls, ops } = batcher();
    const put = 'put 0 0 60 3\r\nabc\r\n';
    for (const c of conns) c.send(put.repeat(25));
    const ids = new Set<string>();
    for (const c of conns) {
      for (const line of await replies(c, 25)) {
        expect(line).toMatch(/^INSERTED \d+$/);
        ids.add(line);
      }
    }
    expect(ids.size).toBe(500);
    expect(batcher().ops - ops).toBe(500);
    expect(batcher().calls - calls).toBeLessThan(100);
  });

  it('keeps each connection\'s replies in command order across batched and other commands', async () => {
    const a = await ctx.dial();
    for (const body of ['a', 'b', 'c', 'd']) await a.cmd(`put 0 0 60 1\r\n${body}`);
    for (let i = 1; i <= 3; i++) expect(await a.cmd('reserve')).toBe(`RESERVED ${i} 1\n${'abc'[i - 1]}`);
    a.send([
      'delete 1', 'release 2 5 0', 'bury 3 7', 'touch 3', 'put 0 0 60 1', 'e',
      'use other', 'put 0 0 60 1', 'f', 'stats-job 2', 'bogus', 'delete 99', 'peek-ready', 'list-tube-used',
      'touch 2', 'put 0 0 60 1', 'g', 'reserve-with-timeout 0', 'delete 2', 'release 2 0 0',
    ].join('\r\n') + '\r\n');
    const got = await replies(a, 16);
    expect(got.slice(0, 6)).toEqual(['DELETED', 'RELEASED', 'BURIED', 'NOT_FOUND', 'INSERTED 5', 'USING other']);
    expect(got[6]).toBe('INSERTED 6');
    expect(got[7]).toMatch(/^OK \d+\n---\nid: 2\ntube: "?default"?\nstate: ready\npri: 5\n/);
    expect(got.slice(8)).toEqual([
      'UNKNOWN_COMMAND', 'NOT_FOUND', 'FOUND 6 1\nf', 'USING other', 'NOT_FOUND', 'INSERTED 7',
      'RESERVED 4 1\nd', 'DELETED', // job 4 (pri 0) beats job 2 (released with pri 5), which anyone may delete
    ]);
    expect(await a.cmd('release 2 0 0')).toBe('NOT_FOUND');
  });

  it.skipIf(onCluster)('answers a put only once Redis holds the job', async () => {
    const admin = new Redis(ctx.redis.url);
    try {
      const a = await ctx.dial();
      await admin.call('CLIENT', 'PAUSE', '400', 'WRITE');
      const sent = Date.now();
      expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
      expect(Date.now() - sent).toBeGreaterThanOrEqual(300);
      const b = await ctx.dial();
      expect(await b.cmd('peek 1')).toBe('FOUND 1 1\nx');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  });

  it.skipIf(onCluster)('closes the connections whose commands have an unknown outcome (no reply claims a failure that later takes effect), keeps serving, and loses nothing acknowledged', async () => {
    await ctx.restart({ redisTimeoutMs: 300 });
    const admin = new Redis(ctx.redis.url);
    try {
      const conns = await Promise.all(Array.from({ length: 5 }, () => ctx.dial()));
      const acknowledged: string[] = [];
      for (const c of conns) acknowledged.push(await c.cmd('put 0 0 60 2\r\nok'));
      // Redis stops executing writes for longer than the sidecar waits: the puts are sent, their answer does not come.
      await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
      for (const c of conns) c.send('put 0 0 60 2\r\nno\r\nput 0 0 60 2\r\nno\r\n');
      for (const c of conns) {
        await c.waitClosed(3000);
        expect(await c.silent(0)).toBe(true); // closed without a reply: "unknown"
      }
      await admin.call('CLIENT', 'UNPAUSE');
      // Serving again, and every acknowledged job is there (the unknown puts did, in fact, take effect).
      const checker = await ctx.dial();
      expect(await checker.cmd('put 0 0 60 3\r\nnew')).toMatch(/^INSERTED \d+$/);
      for (const line of acknowledged) {
        const id = /^INSERTED (\d+)$/.exec(line)![1]!;
        expect(await checker.cmd(`peek ${id}`)).toBe(`FOUND ${id} 2\nok`);
      }
      expect(yamlMap(await checker.cmd('stats-tube default'))['current-jobs-ready']).toBe('16');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  });

  it.skipIf(onCluster)('hands back, within 3 s of Redis answering again, a job reserved by a command whose outcome was unknown', async () => {
    await ctx.restart({ redisTimeoutMs: 300 });
    const admin = new Redis(ctx.redis.url);
    try {
      const a = await ctx.dial();
      const b = await ctx.dial();
      await b.cmd('put 0 0 600 1\r\nj');
      await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
      a.send('reserve-with-timeout 0\r\n');
      await a.waitClosed(3000);
      expect(await a.silent(0)).toBe(true);
      await new Promise((r) => setTimeout(r, 1500));
      const resumed = Date.now();
      // The reserve ran when Redis resumed (the job was reserved for the closed connection), then went back.
      await expect.poll(async () => yamlMap(await b.cmd('stats-job 1')).state, { timeout: 3000, interval: 100 }).toBe('ready');
      expect(Date.now() - resumed).toBeLessThan(3000);
      expect(await b.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\nj');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  });

  it.skipIf(onCluster)('stops reading from a client once 1024 of its commands wait for Redis, then catches up in order', async () => {
    const admin = new Redis(ctx.redis.url);
    try {
      const a = await ctx.dial();
      await admin.call('CLIENT', 'PAUSE', '700', 'WRITE');
      a.send('put 0 0 60 1\r\nx\r\n'.repeat(3000));
      await new Promise((r) => setTimeout(r, 300));
      expect(batcher().pending).toBe(1024);
      const got = await replies(a, 3000);
      expect(got).toEqual(Array.from({ length: 3000 }, (_, i) => `INSERTED ${i + 1}`));
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  });

  it('takes a pipelined run of reserve-with-timeout 0 in one call, answering each in turn', async () => {
    const a = await ctx.dial();
    for (const body of 'cab') a.send(`put ${body.charCodeAt(0)} 0 60 1\r\n${body}\r\n`);
    await replies(a, 3);
    const w = await ctx.dial();
    const before = { ...batcher(), stats: yamlMap(await w.cmd('stats'))['cmd-reserve-with-timeout'] };
    w.send('reserve-with-timeout 0\r\n'.repeat(5));
    const got = await replies(w, 5);
    expect(got.map((r) => r.replace(/^RESERVED \d+ 1\n/, ''))).toEqual(['a', 'b', 'c', 'TIMED_OUT', 'TIMED_OUT']);
    expect(batcher().calls - before.calls).toBe(1);
    expect(batcher().ops - before.ops).toBe(1);
    expect(Number(yamlMap(await w.cmd('stats'))['cmd-reserve-with-timeout']) - Number(before.stats)).toBe(5);
  });

  it('hands a put to a consumer blocked on this sidecar in the put\'s own call: two calls a job, no wake-up sent', async () => {
    const producer = await ctx.dial();
    const consumer = await ctx.dial();
    const waiting = () => expect.poll(async () => yamlMap(await producer.cmd('stats'))['current-waiting'], { interval: 5 }).toBe('1');
    const publishes = async () => {
      const admin = new Redis(ctx.redis.url);
      const stats = await admin.info('commandstats').finally(() => admin.disconnect());
      return [...stats.matchAll(/^cmdstat_s?publish:calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    consumer.send('reserve-with-timeout 60\r\n');
    await waiting();
    const before = { calls: batcher().calls, publishes: await publishes() };
    for (let i = 0; i < 20; i++) {
      expect(await producer.cmd(`put 0 0 60 2\r\nj${i % 10}`)).toMatch(/^INSERTED \d+$/);
      const { line, body } = await consumer.reply();
      expect(body?.toString()).toBe(`j${i % 10}`);
      expect(await consumer.cmd(`delete ${line.split(' ')[1]}`)).toBe('DELETED');
      consumer.send('reserve-with-timeout 60\r\n'); // the tube was drained by its last reserve: no look
      await waiting();
    }
    expect(batcher().calls - before.calls).toBe(40);
    // (On the test cluster the sidecar's wake-ups go to the cluster's nodes, not this test's Redis.)
    if (onCluster) return;
    expect(await publishes() - before.publishes).toBe(0);
    // A job left ready (no consumer of this sidecar waits) still wakes the others.
    expect(await producer.cmd('put 0 0 60 1\r\nx')).toMatch(/^INSERTED/);
    expect(await producer.cmd('put 0 0 60 1\r\ny')).toMatch(/^INSERTED/);
    await consumer.reply();
    expect(await publishes() - before.publishes).toBe(1);
  });

  it('serves waiting reserves first come, first served, with the most urgent job first', async () => {
    const waiters = await Promise.all(Array.from({ length: 4 }, () => ctx.dial()));
    for (const w of waiters) {
      w.send('reserve\r\n');
      await new Promise((r) => setTimeout(r, 20)); // arrival order
    }
    const p = await ctx.dial();
    p.send('put 5 0 60 1\r\nc\r\nput 1 0 60 1\r\na\r\nput 5 0 60 1\r\nd\r\nput 2 0 60 1\r\nb\r\n');
    expect(await replies(p, 4)).toEqual(['INSERTED 1', 'INSERTED 2', 'INSERTED 3', 'INSERTED 4']);
    const got = await Promise.all(waiters.map(async (w) => (await w.reply()).body!.toString()));
    // As beanstalkd hands each put to the reserve waiting longest: the first two
    // puts to the first two waiters (beanstalkd 1.12 then gives b and d, as its
    // queue happens to run), every job to one waiter.
    expect(got.slice(0, 2)).toEqual(['c', 'a']);
    expect([...got].sort().join('')).toBe('abcd');
    // Jobs already ready go most urgent first, to waiters in their arrival order.
    p.send('put 5 0 60 1\r\nc\r\nput 1 0 60 1\r\na\r\nput 5 0 60 1\r\nd\r\nput 2 0 60 1\r\nb\r\n');
    expect(await replies(p, 4)).toEqual(['INSERTED 5', 'INSERTED 6', 'INSERTED 7', 'INSERTED 8']);
    const later: string[] = [];
    for (const w of waiters) later.push((await w.cmd('reserve')).split('\n')[1]!);
    expect(later.join('')).toBe('abcd');
  });
});
