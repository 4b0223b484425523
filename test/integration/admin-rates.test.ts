// A tube's put and delete rates in the admin API: from the sidecar's readings
// of its counts (src/admin/rates.ts), null until it has read the tube twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, putMany } from '../helpers/admin-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool } from '../helpers/wire.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('tube rates in the admin API', () => {
  let redis: TestRedis;
  let sidecar: TestSidecar;
  const pool = new WirePool();
  beforeAll(async () => {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url, http: '127.0.0.1:0' });
  });
  afterAll(async () => {
    pool.closeAll();
    await sidecar.stop();
    await redis.stop();
  });

  it('says how many jobs a second were put and deleted since an earlier reading', async () => {
    const api = new AdminClient(sidecar.server.httpAddress!);
    const w = await pool.dial(sidecar.port);
    await putMany(w, 'rated', ['a']);
    expect((await api.get('/api/tubes/rated')).body.rates).toBeNull();
    await putMany(w, 'rated', Array.from({ length: 20 }, () => 'x'));
    await w.cmd('watch rated');
    for (let i = 0; i < 5; i++) {
      const id = /^RESERVED (\d+)/.exec(await w.cmd('reserve-with-timeout 0'))![1];
      expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
    }
    await sleep(1100);
    const { rates } = (await api.get('/api/tubes/rated')).body as { rates: { put: number; deleted: number; overSeconds: number } };
    expect(rates.overSeconds).toBeGreaterThanOrEqual(1);
    // Since this test's first reading: 20 puts; or 21 when the sidecar's history sampler read
    // the tube before (`use` makes it, before its first job).
    expect([20, 21]).toContain(Math.round(rates.put * rates.overSeconds));
    expect(rates.deleted * rates.overSeconds).toBeCloseTo(5, 5);
    // The listing carries them too.
    const listed = (await api.get('/api/tubes?filter=rated')).body.tubes as Array<{ name: string; rates: unknown }>;
    expect(listed.find((t) => t.name === 'rated')!.rates).not.toBeNull();
  });
});
