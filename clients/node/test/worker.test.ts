// The worker helper against a live redstalk.
import net from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client } from '../src/client.js';
import type { Job } from '../src/commands.js';
import { ConnectionError } from '../src/errors.js';
import { backoffSeconds, Worker, type WorkerOptions } from '../src/worker.js';
import { hasBeanstalkd, startBeanstalkd } from '../../../test/helpers/beanstalkd.js';
import { Servers, type Sidecar } from './harness.js';

const servers = new Servers();
const clients: Client[] = [];
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(() => servers.stopAll());

async function setup(): Promise<{ server: Sidecar; c: Client }> {
  const server = await servers.fresh();
  const c = await Client.connect({ port: server.port });
  clients.push(c);
  await c.use('work');
  return { server, c };
}

async function start(server: Sidecar, handler: (job: Job) => unknown, options: WorkerOptions = {}): Promise<Worker> {
  const w = await Worker.start(handler, { port: server.port, tubes: ['work'], ...options });
  workers.push(w);
  return w;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Worker', () => {
  it('takes jobs with reserve-many, runs the handler, deletes each', async () => {
    const { server, c } = await setup();
    const n = 100;
    for (let i = 0; i < n; i++) await c.put(`job ${i}`);
    const seen: string[] = [];
    let running = 0;
    let most = 0;
    await start(server, async (job) => {
      most = Math.max(most, ++running);
      await sleep(1);
      seen.push(job.body.toString());
      running--;
    }, { prefetch: 16, concurrency: 4 });
    await until('all are handled', () => seen.length === n);
    await until('all are deleted', async () => (await c.statsTube('work'))['cmd-delete'] === n);
    expect(new Set(seen).size).toBe(n);
    expect(most).toBe(4);
    const stats = await c.stats();
    expect(stats['current-jobs-ready'] + stats['current-jobs-reserved']).toBe(0);
    expect(stats['cmd-reserve'] + stats['cmd-reserve-with-timeout']).toBe(0); // all by reserve-many
  });

  it('a failing job is released with backoff, then buried after maxAttempts', async () => {
    const { server, c } = await setup();
    const id = await c.put('fails', { priority: 42 });
    const errors: unknown[] = [];
    await start(server, () => { throw new Error('boom'); }, {
      maxAttempts: 3, backoff: { baseMs: 1000, maxMs: 2000 }, onError: (err) => errors.push(err),
    });
    await until('released once', async () => (await c.statsJob(id)).releases === 1);
    const first = await c.statsJob(id);
    expect(first).toMatchObject({ state: 'delayed', pri: 42, delay: 1 }); // 500..1000 ms: 1 s
    await until('buried', async () => (await c.statsJob(id)).state === 'buried', 10_000);
    expect(await c.statsJob(id)).toMatchObject({ releases: 2, buries: 1, pri: 42 });
    expect(errors).toHaveLength(3);
    expect((errors[0] as Error).message).toBe('boom');
  });

  it('backoff doubles per release, is capped, and jitters within [half, all] of the delay', () => {
    expect(backoffSeconds(0, 1000, 60_000, () => 1)).toBe(1);
    expect(backoffSeconds(3, 1000, 60_000, () => 1)).toBe(8);
    expect(backoffSeconds(3, 1000, 60_000, () => 0)).toBe(4);
    expect(backoffSeconds(20, 1000, 60_000, () => 1)).toBe(60);
    expect(backoffSeconds(5, 0, 60_000)).toBe(0);
  });

  it('touches jobs in hand, running and buffered, so a long handler keeps them past their TTR', async () => {
    const { server, c } = await setup();
    const ids = [await c.put('a', { ttr: 2 }), await c.put('b', { ttr: 2 }), await c.put('c', { ttr: 2 })];
    const handled: number[] = [];
    await start(server, async (job) => {
      await sleep(1600);
      handled.push(job.id);
    }, { prefetch: 4, concurrency: 1 });
    // The third job waits about 3.2 s in the buffer and runs for 1.6 s: more than twice its TTR.
    await until('all are handled', () => handled.length >= 3, 15_000);
    await until('all are deleted', async () => (await c.statsTube('work'))['cmd-delete'] === 3);
    expect(handled).toEqual(ids);
    const stats = await c.stats();
    expect(stats['job-timeouts']).toBe(0);
    expect(stats['cmd-touch']).toBeGreaterThanOrEqual(3);
  }, 20_000);

  it('stop() finishes the running handler, releases the prefetched with their priority, and quits', async () => {
    const { server, c } = await setup();
    for (let i = 0; i < 10; i++) await c.put(`job ${i}`, { priority: 77 });
    let finish = () => {};
    const handled: number[] = [];
    const w = await start(server, async (job) => {
      await new Promise<void>((r) => { finish = r; });
      handled.push(job.id);
    }, { prefetch: 10, concurrency: 1 });
    await until('the first job runs and the rest are buffered', async () => (await c.statsTube('work'))['current-jobs-reserved'] === 10);
    const stopped = w.stop();
    await until('the buffered jobs are released', async () => (await c.statsTube('work'))['current-jobs-ready'] === 9);
    expect(handled).toEqual([]);
    finish();
    await stopped;
    expect(handled).toEqual([1]);
    const tube = await c.statsTube('work');
    expect(tube).toMatchObject({ 'current-jobs-ready': 9, 'current-jobs-reserved': 0, 'cmd-delete': 1 });
    for (let id = 2; id <= 10; id++) expect(await c.statsJob(id)).toMatchObject({ state: 'ready', pri: 77, releases: 1 });
  });

  it('stop() while blocked in reserve-many on an empty tube returns at once', async () => {
    const { server } = await setup();
    const w = await start(server, () => {}, { reserveTimeoutSec: 30 });
    await sleep(100);
    const t0 = Date.now();
    await w.stop();
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('a job put while the worker is idle is picked up by its blocking reserve-many', async () => {
    const { server, c } = await setup();
    const handled: string[] = [];
    await start(server, (job) => { handled.push(job.body.toString()); }, { reserveTimeoutSec: 30 });
    await sleep(100);
    await c.put('late');
    await until('handled', () => handled.length === 1, 3000);
    expect(handled).toEqual(['late']);
  });

  it('stops, and says why, when its connection is lost', async () => {
    const { server } = await setup();
    const errors: unknown[] = [];
    const w = await start(server, () => {}, { onError: (err) => errors.push(err) });
    await server.stop();
    await w.stopped;
    expect(errors[0]).toBeInstanceOf(ConnectionError);
  });

  it('stops when its connection is reset, with no busy loop between the reset and the close', async () => {
    // A server that resets the connection at the first reserve-many: the socket errors, then closes a tick later.
    const server = net.createServer((socket) => {
      socket.on('data', (d: Buffer) => {
        if (d.includes('reserve-many')) socket.resetAndDestroy();
        else socket.write('WATCHING 1\r\n'.repeat(d.toString().split('\r\n').length - 1));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const errors: unknown[] = [];
      const w = await Worker.start(() => {}, { port: (server.address() as net.AddressInfo).port, onError: (err) => errors.push(err) });
      await w.stopped;
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(ConnectionError);
    } finally {
      server.close();
    }
  });

  it.runIf(hasBeanstalkd)('stops, and says why, against a server without reserve-many (beanstalkd)', async () => {
    const bs = await startBeanstalkd();
    try {
      const errors: unknown[] = [];
      const w = await Worker.start(() => {}, { port: bs.port, onError: (err) => errors.push(err) });
      await w.stopped;
      expect(String(errors[0])).toMatch(/does not take reserve-many/);
    } finally {
      await bs.stop();
    }
  });
});
