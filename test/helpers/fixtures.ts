// vitest fixtures (kept apart from redstalk.ts, which scripts outside vitest use too).
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { startRedis, type TestRedis } from './redis.js';
import { startRedstalk, uniquePrefix, type TestOptions, type TestSidecar } from './redstalk.js';
import { WirePool, type Wire } from './wire.js';

interface Started { port: number; prefix: string; stop(): Promise<void> }

export interface SidecarPerTest<S extends Started> {
  readonly redis: TestRedis;
  readonly sidecar: S;
  /** A connection to this test's sidecar, closed after the test. */
  dial(): Promise<Wire>;
  /** Replaces this test's sidecar by one with other options. */
  restart(opts: Partial<TestOptions>): Promise<void>;
}

/**
 * One redis-server for the file, a fresh sidecar (fresh key prefix) for each
 * test: through the public API, or through `start` (e.g. startInside).
 */
export function sidecarPerTest<S extends Started = TestSidecar>(
  start: (opts: TestOptions) => Promise<S> = startRedstalk as unknown as (opts: TestOptions) => Promise<S>,
): SidecarPerTest<S> {
  let redis: TestRedis;
  let sidecar: S;
  const pool = new WirePool();
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis.stop(); });
  beforeEach(async () => { sidecar = await start({ redisUrl: redis.url }); });
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
      sidecar = await start({ ...opts, redisUrl: redis.url });
    },
  };
}

export interface SidecarsPerTest {
  readonly redis: TestRedis;
  /** n sidecars on one fresh data set (key prefix), stopped after the test. */
  sidecars(n: number): Promise<TestSidecar[]>;
  /** A connection to a sidecar, closed after the test. */
  dial(sidecar: { port: number }): Promise<Wire>;
}

/** One redis-server for the file; for each test, the sidecars it asks for, sharing one data set. */
export function sidecarsPerTest(): SidecarsPerTest {
  let redis: TestRedis;
  const started: TestSidecar[] = [];
  const pool = new WirePool();
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis.stop(); });
  afterEach(async () => {
    pool.closeAll();
    for (const s of started.splice(0)) await s.stop();
  });
  return {
    get redis() { return redis; },
    async sidecars(n) {
      const prefix = uniquePrefix();
      const mine: TestSidecar[] = [];
      for (let i = 0; i < n; i++) mine.push(await startRedstalk({ redisUrl: redis.url, prefix }));
      started.push(...mine);
      return mine;
    },
    dial: (sidecar) => pool.dial(sidecar.port),
  };
}
