// The command line listens before it connects to Redis (a quick start); a
// client that connects and talks in that window is served once the sidecar is ready.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkConfig } from '../../src/config/check.js';
import { createLogger } from '../../src/log.js';
import { openSidecar } from '../../src/open.js';
import { Listener } from '../../src/server/listener.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { freePort } from '../helpers/ports.js';
import { ROOT, uniquePrefix } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';

describe('listening before the store is ready', () => {
  let redis: TestRedis;
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => { await redis?.stop(); });

  it('holds the commands of early connections and answers them in order once ready', async () => {
    const listener = await Listener.open('127.0.0.1', 0);
    const early = await Wire.connect(listener.port);
    early.send('put 0 0 60 5\r\nhello\r\nlist-tube-used\r\n');
    const quitter = await Wire.connect(listener.port);
    quitter.close();
    expect(await early.silent(100)).toBe(true);
    const { config } = checkConfig({ redisUrl: redis.url, prefix: uniquePrefix(), port: 0, logLevel: 'silent' });
    const { sidecar } = await openSidecar(config, createLogger('silent'), listener);
    try {
      expect(sidecar.port).toBe(listener.port);
      expect(await early.line()).toBe('INSERTED 1');
      expect(await early.line()).toBe('USING default');
      const later = await Wire.connect(listener.port);
      expect(await later.cmd('peek 1')).toBe('FOUND 1 5\nhello');
      // The one that left before the sidecar was ready is noticed gone once it reads its EOF.
      await expect.poll(async () => (await sidecar.stats.server())['current-connections']).toBe(2);
      later.close();
    } finally {
      early.close();
      await sidecar.close();
    }
  });

  it("counts a reserve's timeout from when it arrived, not from when the store was ready", async () => {
    const listener = await Listener.open('127.0.0.1', 0);
    const early = await Wire.connect(listener.port);
    const sent = performance.now();
    early.send('reserve-with-timeout 1\r\n');
    // The store is ready only after the timeout has run out: a timeout counted from
    // then would answer a second later; counted from the send, at once.
    await new Promise((r) => setTimeout(r, 1200));
    const { config } = checkConfig({ redisUrl: redis.url, prefix: uniquePrefix(), port: 0, logLevel: 'silent' });
    const { sidecar } = await openSidecar(config, createLogger('silent'), listener);
    const ready = performance.now();
    try {
      expect(await early.line()).toBe('TIMED_OUT');
      const answered = performance.now();
      expect(answered - sent).toBeGreaterThanOrEqual(1000);
      expect(answered - ready).toBeLessThan(1000);
      // A connection's later commands count from their own arrival.
      const t = performance.now();
      expect(await early.cmd('reserve-with-timeout 1')).toBe('TIMED_OUT');
      expect(performance.now() - t).toBeGreaterThanOrEqual(1000);
    } finally {
      early.close();
      await sidecar.close();
    }
  });

  it("counts a put's delay from when it arrived: a put whose delay ran out before the store was ready is ready", async () => {
    const listener = await Listener.open('127.0.0.1', 0);
    const early = await Wire.connect(listener.port);
    early.send('put 0 1 60 1\r\nx\r\nput 0 30 60 1\r\ny\r\n');
    await new Promise((r) => setTimeout(r, 1200));
    const { config } = checkConfig({ redisUrl: redis.url, prefix: uniquePrefix(), port: 0, logLevel: 'silent' });
    const { sidecar } = await openSidecar(config, createLogger('silent'), listener);
    try {
      expect(await early.line()).toBe('INSERTED 1');
      expect(await early.line()).toBe('INSERTED 2');
      expect(await early.cmd('peek-ready')).toBe('FOUND 1 1\nx');
      expect(await early.cmd('stats-job 2')).toMatch(/\nstate: delayed\n[\s\S]*\ndelay: 30\n/);
    } finally {
      early.close();
      await sidecar.close();
    }
  });

  const hasActivate = spawnSync('sh', ['-c', 'command -v systemd-socket-activate'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!hasActivate)('takes the listening socket systemd passes (socket activation), instead of -l/-p', async () => {
    const port = await freePort();
    const unused = await freePort();
    const cmd = process.env.REDSTALK_CMD?.split(' ') ?? [process.execPath, '--import', 'tsx', path.join(ROOT, 'src/cli.ts')];
    // systemd-socket-activate listens, and starts redstalk at the first connection.
    const child = spawn('systemd-socket-activate', ['-l', `127.0.0.1:${port}`, ...cmd, '-l', '127.0.0.1', '-p', String(unused), '--redis', redis.url, '--prefix', uniquePrefix(), '--log-level', 'warn'], { cwd: ROOT, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const ready = async () => { for (;;) { try { return await Wire.connect(port); } catch { await new Promise((r) => setTimeout(r, 20)); } } };
      const w = await ready();
      expect(await w.cmd('put 0 0 60 2\r\nhi', 20_000)).toBe('INSERTED 1');
      expect(await w.cmd('list-tube-used')).toBe('USING default');
      w.close();
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
