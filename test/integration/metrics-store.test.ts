// /metrics while Redis is out of reach: still answered, with
// redstalk_store_up 0 (what the Redis-unreachable alert of
// deploy/prometheus watches) and no stale job or room series; the admin
// API answers 503 with why.
import { afterEach, describe, expect, it } from 'vitest';
import { parseExposition, valueOf } from '../helpers/prometheus.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';
import { Wire } from '../helpers/wire.js';

describe.skipIf(onCluster)('/metrics and the store', () => {
  let redis: TestRedis | undefined;
  let sidecar: TestSidecar | undefined;
  afterEach(async () => {
    await sidecar?.stop();
    await redis?.stop();
  });

  const scrape = async (http: string) => {
    const res = await fetch(`http://${http}/metrics`);
    return { status: res.status, families: parseExposition(await res.text()) };
  };

  it('says redstalk_store_up 1 with the job series, then 0 without them once Redis is gone', async () => {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url, http: '127.0.0.1:0', redisTimeoutMs: 300 });
    const http = sidecar.server.httpAddress!;
    const w = await Wire.connect(sidecar.port);
    expect(await w.cmd('put 0 0 60 1\r\na')).toMatch(/^INSERTED/);
    const up = await scrape(http);
    expect(valueOf(up.families, 'redstalk_store_up')).toBe(1);
    expect(valueOf(up.families, 'redstalk_jobs', { state: 'ready' })).toBe(1);
    await redis.stop();
    const down = await scrape(http);
    expect(down.status).toBe(200);
    expect(valueOf(down.families, 'redstalk_store_up')).toBe(0);
    expect(valueOf(down.families, 'redstalk_jobs', { state: 'ready' })).toBeUndefined();
    expect(valueOf(down.families, 'redstalk_connections')).toBe(1);
    expect(valueOf(down.families, 'redstalk_process_cpu_seconds_total')).toBeGreaterThan(0);
    // The admin API says the same, as JSON.
    const api = await fetch(`http://${http}/api/tubes`);
    expect(api.status).toBe(503);
    expect(((await api.json()) as { error: string }).error).toMatch(/^the store did not answer: /);
    w.close();
  });
});
