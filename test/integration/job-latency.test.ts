// How long jobs wait (ready -> reserved, on Redis' clock: batch.lua waited_ms)
// and run (reserved -> deleted, on the reserving sidecar's clock), per tube:
// in /metrics, in the admin API summed over every live sidecar, and in the
// dashboard's history. No Redis call per job: the wait rides on the reserve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';
import { WirePool, type Wire } from '../helpers/wire.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function reserveAndDelete(w: Wire, holdMs: number): Promise<string> {
  const r = await w.cmd('reserve-with-timeout 5');
  const id = /^RESERVED (\d+) /.exec(r)?.[1];
  if (!id) throw new Error(`reserve answered ${r}`);
  await sleep(holdMs);
  expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
  return id;
}

describe.skipIf(onCluster)('job wait and run times', () => {
  let redis: TestRedis;
  const sidecars: TestSidecar[] = [];
  const pool = new WirePool();
  beforeAll(async () => {
    redis = await startRedis();
    const prefix = uniquePrefix();
    for (let i = 0; i < 2; i++) sidecars.push(await startRedstalk({ redisUrl: redis.url, prefix, http: '127.0.0.1:0', heartbeatMs: 100 }));
  });
  afterAll(async () => {
    pool.closeAll();
    for (const s of sidecars) await s.stop();
    await redis.stop();
  });

  it('measures a wait from when the job became ready, and a run until its delete, summed over the sidecars', async () => {
    const [a, b] = sidecars;
    const [p, ca, cb] = [await pool.dial(a!.port), await pool.dial(a!.port), await pool.dial(b!.port)];
    await p.cmd('use timed');
    for (const c of [ca, cb]) await c!.cmd('watch timed');
    // Ready at once, reserved 300 ms later: waited ~300 ms; held 200 ms: ran ~200 ms.
    expect(await p.cmd('put 1 0 60 1\r\na')).toMatch(/^INSERTED/);
    await sleep(300);
    await reserveAndDelete(ca!, 200);
    // Delayed 1 s, reserved as soon as it is ready: its wait counts from then, not from its put.
    expect(await p.cmd('put 1 1 60 1\r\nb')).toMatch(/^INSERTED/);
    await reserveAndDelete(cb!, 50);
    // Released after 100 ms, reserved again 400 ms later: waited ~400 ms since its release.
    expect(await p.cmd('put 1 0 60 1\r\nc')).toMatch(/^INSERTED/);
    const r = await ca!.cmd('reserve-with-timeout 5');
    const id = /^RESERVED (\d+) /.exec(r)![1];
    expect(await ca!.cmd(`release ${id} 1 0`)).toBe('RELEASED');
    await sleep(400);
    await reserveAndDelete(cb!, 0);

    const api = new AdminClient(a!.server.httpAddress!);
    await expect.poll(async () => (await api.get('/api/tubes/timed')).body.latency?.wait.count, { timeout: 5000 }).toBe(4);
    const { latency } = (await api.get('/api/tubes/timed')).body as { latency: Record<'wait' | 'run', { count: number; p50: number; p99: number }> };
    // Waits: ~0 (a reserve already blocked as the job came ready... or not yet), ~300, ~0 (delayed), ~400: none near the 1 s delay.
    expect(latency.wait.p99).toBeGreaterThanOrEqual(250);
    expect(latency.wait.p99).toBeLessThan(1000);
    expect(latency.run.count).toBe(3); // the released one ran no delete
    expect(latency.run.p99).toBeGreaterThanOrEqual(100);
    expect(latency.run.p99).toBeLessThan(1000);

    // /metrics: each sidecar counts what it handed out.
    const metrics = async (s: TestSidecar) => (await fetch(`http://${s.server.httpAddress}/metrics`)).text();
    const count = (text: string, kind: string) => Number(new RegExp(`^redstalk_job_${kind}_seconds_count\\{tube="timed"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const [ma, mb] = [await metrics(a!), await metrics(b!)];
    expect(count(ma, 'wait') + count(mb, 'wait')).toBe(4);
    expect([count(ma, 'run'), count(mb, 'run')]).toEqual([1, 2]);
    expect(ma).toMatch(/^redstalk_job_wait_seconds_bucket\{le="0.5",tube="timed"\} \d+/m);
  });
});
