// The --http endpoint: /healthz, /readyz (flips with Redis) and /metrics in the
// Prometheus text format, parsed strictly.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseExposition, valueOf } from '../helpers/prometheus.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

/** `redstalk healthcheck` in a child process (asynchronously: the sidecar it asks runs in this one). */
const healthcheck = (address: string, ...args: string[]) => new Promise<{ status: number; stdout: string }>((resolve) => {
  execFile(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'healthcheck', '--http', address, ...args], { cwd: ROOT },
    (err, stdout) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout }));
});

const get = async (address: string, path: string) => {
  const res = await fetch(`http://${address}${path}`);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
};

describe('the HTTP endpoint', () => {
  let redis: TestRedis | undefined;
  let sidecar: TestSidecar | undefined;
  afterEach(async () => {
    await sidecar?.stop();
    await redis?.stop();
  });

  async function start(): Promise<string> {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url, http: '127.0.0.1:0', redisTimeoutMs: 500 });
    return sidecar.server.httpAddress!;
  }

  it('is off unless asked for', async () => {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url });
    expect(sidecar.server.httpAddress).toBeNull();
  });

  it('answers /healthz and /readyz, 404 elsewhere, and 503 with the reason in drain mode', async () => {
    const http = await start();
    expect(await get(http, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get(http, '/readyz')).toMatchObject({ status: 200, body: 'ready\n' });
    expect((await get(http, '/nope')).status).toBe(404);
    expect((await fetch(`http://${http}/healthz`, { method: 'POST' })).status).toBe(405);
    expect((await healthcheck(http)).status).toBe(0);
    sidecar!.server.drain();
    expect(await get(http, '/readyz')).toMatchObject({ status: 503, body: 'not ready: draining\n' });
    // `redstalk healthcheck` (the image's HEALTHCHECK) asks the same endpoint.
    expect((await healthcheck(http)).status).toBe(0);
    expect(await healthcheck(http, '--ready')).toMatchObject({ status: 1, stdout: '503 not ready: draining\n' });
  });

  it('serves /metrics in the exposition format: commands by result, latency, batches, connections, jobs by tube, rooms, process', async () => {
    const http = await start();
    const a = await Wire.connect(sidecar!.port);
    await a.cmd('put 0 0 60 1\r\na');
    await a.cmd('put 0 100 60 1\r\nb');
    await a.cmd('use other');
    await a.cmd('put 0 0 60 1\r\nc');
    await a.cmd('put-with k 0 delete 0 0 60 1\r\nd');
    await a.cmd('put-with k 0 delete 0 0 60 1\r\nd');
    await a.cmd('tube-set other max-reserved 7');
    await a.cmd('reserve-with-timeout 0');
    await a.cmd('delete 999');
    await a.cmd('enter lobby ann');
    await a.cmd('bogus');
    const m = await get(http, '/metrics');
    expect(m.status).toBe(200);
    expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const f = parseExposition(m.body);
    expect(valueOf(f, 'redstalk_commands_total', { command: 'put', result: 'INSERTED' })).toBe(3);
    expect(valueOf(f, 'redstalk_commands_total', { command: 'reserve-with-timeout', result: 'RESERVED' })).toBe(1);
    expect(valueOf(f, 'redstalk_commands_total', { command: 'delete', result: 'NOT_FOUND' })).toBe(1);
    expect(valueOf(f, 'redstalk_command_duration_seconds_count', { command: 'put' })).toBe(3);
    expect(valueOf(f, 'redstalk_batch_ops_count')).toBeGreaterThanOrEqual(4);
    expect(valueOf(f, 'redstalk_batch_call_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(4);
    expect(valueOf(f, 'redstalk_connections')).toBe(1);
    expect(valueOf(f, 'redstalk_jobs', { state: 'delayed' })).toBe(1);
    expect(valueOf(f, 'redstalk_jobs', { state: 'reserved' })).toBe(1);
    expect(valueOf(f, 'redstalk_tube_jobs', { tube: 'default', state: 'reserved' })).toBe(1);
    expect(valueOf(f, 'redstalk_tube_jobs', { tube: 'other', state: 'ready' })).toBe(2);
    expect(valueOf(f, 'redstalk_tube_jobs_created', { tube: 'other' })).toBe(2);
    expect(valueOf(f, 'redstalk_tube_duplicate_puts', { tube: 'other' })).toBe(1);
    expect(valueOf(f, 'redstalk_tube_jobs_expired', { tube: 'other' })).toBe(0);
    expect(valueOf(f, 'redstalk_tube_limit', { tube: 'other', limit: 'max-reserved' })).toBe(7);
    expect(valueOf(f, 'redstalk_tube_limit', { tube: 'default', limit: 'reserve-rate' })).toBe(0);
    expect(valueOf(f, 'redstalk_room_participants', { room: 'lobby' })).toBe(1);
    expect(valueOf(f, 'redstalk_room_admitted', { room: 'lobby' })).toBe(1);
    expect(valueOf(f, 'redstalk_process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(f.has('redstalk_nodejs_eventloop_lag_seconds')).toBe(true);
    // Unknown commands are not a label value an attacker could multiply: they are counted under the spec's names only.
    expect([...f.get('redstalk_commands_total')!.samples].every((s) => s.labels.command !== 'bogus')).toBe(true);
    a.close();
  });

  it.skipIf(onCluster)('flips /readyz to 503 within 2 s of Redis going away, and back within 2 s of its return', async () => {
    const http = await start();
    const port = redis!.port;
    await redis!.stop();
    const t0 = Date.now();
    await expect.poll(async () => (await get(http, '/readyz')).status, { timeout: 2000, interval: 50 }).toBe(503);
    const down = Date.now() - t0;
    expect((await get(http, '/readyz')).body).toMatch(/^not ready: redis: /);
    expect((await get(http, '/healthz')).status).toBe(200);
    redis = await startRedis({ port });
    const t1 = Date.now();
    await expect.poll(async () => (await get(http, '/readyz')).status, { timeout: 2000, interval: 50 }).toBe(200);
    process.stdout.write(`/readyz: 503 after ${down} ms, 200 again after ${Date.now() - t1} ms\n`);
  });
});
