// Every job the sidecar acknowledges can be delivered: calls get time to move
// the biggest job (-z), and a -z bigger than Redis can hold refuses to start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../../clients/node/src/index.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';

describe('big jobs', () => {
  let redis: TestRedis;
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis?.stop(); });

  it('refuses to start with a -z above what Redis takes in one value (proto-max-bulk-len), saying so', async () => {
    await expect(startRedstalk({ redisUrl: redis.url, maxJobSize: 1073741824 })).rejects.toThrow(
      /maximum job size 1073741824 \(-z\) is more than this Redis can hold in one value \(proto-max-bulk-len 536870912, so at most 536869888\)/);
  });

  it.skipIf(onCluster)('stores and delivers a 100 MB job with a 100 ms base timeout: put, peek, reserve, delete', async () => {
    const size = 100 * 1024 * 1024;
    // Redis runs no other call while a script moves 100 MB (seconds on a slow machine): the lease
    // must outlast that, or the sidecar fences itself (README, Guarantees).
    const sidecar = await startRedstalk({ redisUrl: redis.url, maxJobSize: size, redisTimeoutMs: 100, heartbeatMs: 5000 });
    const c = await Client.connect({ port: sidecar.port });
    try {
      const body = Buffer.alloc(size, 7);
      body.write('first', 0);
      body.write('last', size - 4);
      const id = await c.put(body);
      const peeked = await c.peek(id);
      expect(peeked.body.length).toBe(size);
      const job = await c.reserveWithTimeout(0);
      expect(job.id).toBe(id);
      expect(job.body.subarray(0, 5).toString()).toBe('first');
      expect(job.body.subarray(size - 4).toString()).toBe('last');
      expect((await c.statsJob(id))).toMatchObject({ reserves: 1, timeouts: 0, state: 'reserved' });
      await c.delete(id);
    } finally {
      await c.close();
      await sidecar.stop();
    }
  }, 60_000);
});
