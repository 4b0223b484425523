// vitest fixtures (kept apart from redstalk.ts, which scripts outside vitest use too).
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { ServerOptions } from '../../src/index.js';
import { startRedis, type TestRedis } from './redis.js';
import { startRedstalk, type TestSidecar } from './redstalk.js';
import { WirePool, type Wire } from './wire.js';

export interface SidecarPerTest {
  readonly redis: TestRedis;
  readonly sidecar: TestSidecar;
  /** A connection to this test's sidecar, closed after the test. */
  dial(): Promise<Wire>;
  /** Replaces this test's sidecar by one with other options. */
  restart(opts: Partial<ServerOptions>): Promise<void>;
}

/** One redis-server for the file, a fresh sidecar (fresh key prefix) for each test. */
export function sidecarPerTest(): SidecarPerTest {
  let redis: TestRedis;
  let sidecar: TestSidecar;
  const pool = new WirePool();
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis.stop(); });
  beforeEach(async () => { sidecar = await startRedstalk({ redisUrl: redis.url }); });
  afterEach(async () => {
    pool.closeAll();
    await sidecar.stop();
  });
  return {
    get redis() { return redis; },
    get sidecar() { return sidecar; },
    dial: () => pool.dial(sidecar.port),
    async restart(opts) {
      await sidecar.stop();
      sidecar = await startRedstalk({ ...opts, redisUrl: redis.url });
    },
  };
}
