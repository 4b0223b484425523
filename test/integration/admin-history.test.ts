// The dashboard's history in Redis: every sidecar with --http offers a
// sample as it starts and every 10 s; Redis keeps one per slot (the first)
// and a bounded number, so every sidecar shows the same samples.
import { afterEach, describe, expect, it } from 'vitest';
import { AdminApi } from '../../src/admin/api.js';
import { sampleNow } from '../../src/admin/history.js';
import { AdminClient, putMany } from '../helpers/admin-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startInside, startRedstalk, uniquePrefix, type InsideSidecar, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool } from '../helpers/wire.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the dashboard history', () => {
  let redis: TestRedis | undefined;
  const sidecars: Array<TestSidecar | InsideSidecar> = [];
  const wires = new WirePool();
  afterEach(async () => {
    wires.closeAll();
    for (const s of sidecars.splice(0)) await s.stop();
    await redis?.stop();
    redis = undefined;
  });

  it('is the same on every sidecar: one sample a slot, whoever offers it', async () => {
    redis = await startRedis();
    const prefix = uniquePrefix();
    for (let i = 0; i < 2; i++) sidecars.push(await startRedstalk({ redisUrl: redis.url, prefix, http: '127.0.0.1:0' }));
    const [a, b] = sidecars.map((s) => new AdminClient((s as TestSidecar).server.httpAddress!));
    // Both offered one as they started, in the same 10-second slot (or two slots, at a boundary).
    await expect.poll(async () => (await a!.get('/api/history')).body.length).toBeGreaterThan(0);
    const fromA = (await a!.get('/api/history')).body as Array<{ t: number }>;
    expect(fromA.length).toBeLessThanOrEqual(2);
    expect(new Set(fromA.map((s) => s.t)).size).toBe(fromA.length);
    expect(fromA.every((s) => s.t % 10_000 === 0)).toBe(true);
    expect((await b!.get('/api/history')).body).toEqual(fromA);
  });

  it('samples jobs by state, the commands of every live sidecar, and the oldest ready jobs', async () => {
    redis = await startRedis();
    const inside = await startInside({ redisUrl: redis.url, heartbeatMs: 50 });
    sidecars.push(inside);
    const w = await wires.dial(inside.port, true);
    await putMany(w, 'old', ['a', 'b'], { pri: 9 });
    await putMany(w, 'later', ['c'], { delay: 60 });
    const api = new AdminApi(inside.backend.jobs, inside.backend.rooms, Buffer.alloc(32));
    await sleep(300); // a heartbeat carries the put counts
    const s = await sampleNow(api);
    expect(s).toMatchObject({ ready: 2, delayed: 1, reserved: 0, buried: 0, jobs: 3, put: 3, sidecars: 1, connections: 1 });
    expect(Object.keys(s.oldest)).toEqual(['old']);
    expect(s.oldest.old).toBeGreaterThanOrEqual(0.3);
    expect(s.latency).toEqual({});
    // A job reserved and deleted: the next sample's window holds its wait and run times.
    const c = await wires.dial(inside.port, true);
    await c.cmd('watch old');
    const reserved = await c.cmd('reserve-with-timeout 0');
    const id = /^RESERVED (\d+)/.exec(reserved)![1];
    await sleep(100);
    expect(await c.cmd(`delete ${id}`)).toBe('DELETED');
    await sleep(300);
    const next = await sampleNow(api);
    expect(Object.keys(next.latency)).toEqual(['old']);
    expect(next.latency.old!.wait[0]).toBeGreaterThanOrEqual(250);
    expect(next.latency.old!.run[0]).toBeGreaterThanOrEqual(50);
  });

  it('keeps the first sample of a slot and no more than it was told to', async () => {
    redis = await startRedis();
    const inside = await startInside({ redisUrl: redis.url });
    sidecars.push(inside);
    const jobs = inside.backend.jobs;
    const before = (await jobs.history()).length; // the sidecar's own, if any (no --http: none)
    expect(before).toBe(0);
    expect(await jobs.recordHistory('{"n":1}', 200, 3)).toBe(true);
    expect(await jobs.recordHistory('{"n":2}', 200, 3)).toBe(false);
    for (let n = 3; n <= 6; n++) {
      await sleep(210);
      expect(await jobs.recordHistory(`{"n":${n}}`, 200, 3)).toBe(true);
    }
    const kept = (await jobs.history()).map((s) => JSON.parse(s) as { t: number; n: number });
    expect(kept.map((s) => s.n)).toEqual([4, 5, 6]);
    expect(kept.every((s, i) => s.t % 200 === 0 && (i === 0 || s.t > kept[i - 1]!.t))).toBe(true);
  });
});
