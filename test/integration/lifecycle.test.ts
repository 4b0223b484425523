// The process: CLI flags, embedded Redis, restart with state intact,
// signals, and a Redis that goes away and comes back.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import { ROOT, spawnRedstalk, startRedstalk, type SpawnedSidecar } from '../helpers/redstalk.js';
import { Wire, WirePool, yamlMap } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  pool.closeAll();
  for (const f of cleanup.splice(0).reverse()) await f();
});


const pool = new WirePool();
const dial = (port: number | string) => pool.dial(port);

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-cli-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function spawn(args: string[]): Promise<SpawnedSidecar> {
  const s = await spawnRedstalk(args);
  cleanup.push(() => s.stop());
  return s;
}

describe('CLI', () => {
  it('-v prints the version (as beanstalkd); bad flags exit non-zero with a message', () => {
    const cli = path.join(ROOT, 'src/cli.ts');
    const v = spawnSync(process.execPath, ['--import', 'tsx', cli, '-v'], { cwd: ROOT, encoding: 'utf8' });
    expect(v.status).toBe(0);
    expect(v.stdout.trim()).toMatch(/^redstalk \d+\.\d+\.\d+$/);
    const bad = spawnSync(process.execPath, ['--import', 'tsx', cli, '-p', 'x'], { cwd: ROOT, encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('not a whole number');
    const badUrl = spawnSync(process.execPath, ['--import', 'tsx', cli, '--redis', 'http://x'], { cwd: ROOT, encoding: 'utf8' });
    expect(badUrl.status).toBe(2);
    expect(badUrl.stderr).toContain('invalid configuration');
  });

  it('says clearly when redis-server is missing and no --redis was given', () => {
    const cli = path.join(ROOT, 'src/cli.ts');
    const r = spawnSync(process.execPath, ['--import', 'tsx', cli, '-p', '0', '--data-dir', tempDir()], {
      cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: tempDir() },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('redis-server was not found on PATH');
  });

  it('takes beanstalkd\'s command line as is: -l unix:PATH, -b DIR, -f0, -V, -s', async () => {
    const dir = tempDir();
    const sock = path.join(dir, 'beanstalkd.sock');
    const s = await spawnRedstalk(['-l', `unix:${sock}`, '-b', path.join(dir, 'wal'), '-f0', '-VV', '-s', '1048576'], {}, sock);
    cleanup.push(() => s.stop());
    const a = await dial(sock);
    expect(await a.cmd('put 0 0 60 2\r\nhi')).toBe('INSERTED 1');
    expect(existsSync(path.join(dir, 'wal', 'appendonlydir'))).toBe(true);
    const out = s.output();
    expect(out).toContain('"fsync":"always"');
    expect(out).toContain('"level":20'); // -VV: debug or more
    expect(out).toContain('-s has no effect');
    expect(await s.stop('SIGTERM')).toBe(0);
    expect(existsSync(sock)).toBe(false);
  });

  it.skipIf(process.getuid?.() !== 0)('-u drops to another user once listening', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const s = await spawn(['-u', 'nobody', '--redis', redis.url, '--log-level', 'warn']);
    const a = await dial(s.port);
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    const status = readFileSync(`/proc/${s.child.pid}/status`, 'utf8');
    const uid = /^Uid:\s+(\d+)/m.exec(status)![1];
    expect(uid).toBe(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
  });

  it('reaches a Redis on this machine over its unix socket (--redis unix:///path)', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const s = await spawn(['--redis', redis.socketUrl, '--log-level', 'warn']);
    const a = await dial(s.port);
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    expect(await a.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 1\nx');
    expect(await a.cmd('delete 1')).toBe('DELETED');
    const clients = spawnSync('redis-cli', ['-s', path.join(redis.dir, 'redis.sock'), 'CLIENT', 'LIST'], { encoding: 'utf8' }).stdout;
    // Valkey 9 writes a socket's address in brackets: addr=[/path/redis.sock:0]:0.
    expect(clients.split('\n').filter((l) => / laddr=\[?\/\S*redis\.sock/.test(l) || /addr=\[?\/\S*redis\.sock/.test(l)).length).toBeGreaterThanOrEqual(2);
  });

  it('-z sets the maximum job size', async () => {
    const s = await spawn(['-z', '5', '--data-dir', tempDir(), '--log-level', 'warn']);
    const a = await dial(s.port);
    expect(await a.cmd('put 0 0 1 6\r\n123456')).toBe('JOB_TOO_BIG');
    expect(await a.cmd('put 0 0 1 5\r\n12345')).toBe('INSERTED 1');
    expect(yamlMap(await a.cmd('stats'))['max-job-size']).toBe('5');
  });
});

describe('embedded Redis and restarts', () => {
  it('keeps every job state across a restart; reservations are handed back on SIGTERM', async () => {
    const dir = tempDir();
    let s = await spawnRedstalk(['--data-dir', dir, '--log-level', 'warn']);
    let a = await Wire.connect(s.port);
    await a.cmd('use keep');
    await a.cmd('put 5 0 60 5\r\nready');
    await a.cmd('put 0 3600 60 7\r\ndelayed');
    await a.cmd('put 0 0 60 6\r\nburied');
    await a.cmd('put 0 0 60 8\r\nreserved');
    await a.cmd('watch keep');
    expect(await a.cmd('reserve-job 3')).toBe('RESERVED 3 6\nburied');
    expect(await a.cmd('bury 3 9')).toBe('BURIED');
    expect(await a.cmd('reserve-job 4')).toBe('RESERVED 4 8\nreserved');
    expect(await s.stop('SIGTERM')).toBe(0);
    a.close();
    expect(existsSync(path.join(dir, 'appendonlydir'))).toBe(true);

    s = await spawnRedstalk(['--data-dir', dir, '--log-level', 'warn']);
    cleanup.push(() => s.stop());
    a = await dial(s.port);
    const state = async (id: number) => yamlMap(await a.cmd(`stats-job ${id}`)).state;
    expect([await state(1), await state(2), await state(3), await state(4)]).toEqual(['ready', 'delayed', 'buried', 'ready']);
    expect(yamlMap(await a.cmd('stats-job 3')).pri).toBe('9');
    expect(await a.cmd('peek 2')).toBe('FOUND 2 7\ndelayed');
    expect(await a.cmd('put 0 0 60 1\r\nn')).toBe('INSERTED 5');
    expect(yamlMap(await a.cmd('stats-tube keep'))['total-jobs']).toBe('4');
  }, 30_000);

  it('after a SIGKILL, the next start reuses the orphaned redis-server instead of starting a second one', async () => {
    const dir = tempDir();
    const first = await spawnRedstalk(['--data-dir', dir, '--log-level', 'info']);
    const a = await Wire.connect(first.port);
    expect(await a.cmd('put 0 0 60 4\r\nkept')).toBe('INSERTED 1');
    a.close();
    const orphan = JSON.parse(readFileSync(path.join(dir, 'redstalk-redis.json'), 'utf8')) as { pid: number };
    await first.stop('SIGKILL');
    expect(() => process.kill(orphan.pid, 0)).not.toThrow();

    const second = await spawn(['--data-dir', dir, '--log-level', 'info']);
    const b = await dial(second.port);
    expect(await b.cmd('peek 1')).toBe('FOUND 1 4\nkept');
    expect(second.output()).toContain(`reusing redis-server pid ${orphan.pid}`);
    expect(await second.stop('SIGTERM')).toBe(0);
    expect(() => process.kill(orphan.pid, 0)).toThrow();
    expect(existsSync(path.join(dir, 'redstalk-redis.json'))).toBe(false);
  }, 30_000);

  it('SIGUSR1 turns on drain mode', async () => {
    const s = await spawn(['--data-dir', tempDir(), '--log-level', 'warn']);
    const a = await dial(s.port);
    s.child.kill('SIGUSR1');
    await new Promise((r) => setTimeout(r, 200));
    expect(await a.cmd('put 0 0 1 1\r\nx')).toBe('DRAINING');
    expect(yamlMap(await a.cmd('stats')).draining).toBe('true');
  });
});

describe('Redis outage', () => {
  it.skipIf(onCluster)('answers INTERNAL_ERROR quickly while Redis is down, and recovers by itself', async () => {
    const dir = tempDir();
    let redis = await startRedis({ dir, appendonly: true });
    const port = redis.port;
    const sidecar = await startRedstalk({ redisUrl: redis.url, redisTimeoutMs: 500 });
    cleanup.push(() => sidecar.stop());
    const a = await dial(sidecar.port);
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    const waiter = await dial(sidecar.port);
    // The waiter takes job 1, then blocks before Redis stops (a reserve still on its way to
    // Redis then has an unknown outcome, and its connection is closed: seen once on a busy machine).
    expect(await waiter.cmd('reserve-with-timeout 30')).toBe('RESERVED 1 1\nx');
    waiter.send('reserve-with-timeout 30\r\n');
    for (let i = 0; i < 100 && yamlMap(await a.cmd('stats'))['current-waiting'] !== '1'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(yamlMap(await a.cmd('stats'))['current-waiting']).toBe('1');
    await redis.stop({ keepDir: true });
    const t0 = Date.now();
    expect(await a.cmd('put 0 0 60 1\r\ny')).toBe('INTERNAL_ERROR');
    expect(await a.cmd('peek 1')).toBe('INTERNAL_ERROR');
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(await a.cmd('list-tube-used')).toBe('USING default');
    // New connections are still served; a tube that cannot be created in Redis is not used.
    const late = await dial(sidecar.port);
    expect(await late.cmd('use elsewhere')).toBe('INTERNAL_ERROR');
    expect(await late.cmd('list-tube-used')).toBe('USING default');
    late.close();

    redis = await startRedis({ dir, appendonly: true, port });
    cleanup.push(() => redis.stop());
    let reply = '';
    for (let i = 0; i < 50 && !reply.startsWith('FOUND'); i++) {
      await new Promise((r) => setTimeout(r, 200));
      reply = await a.cmd('peek 1');
    }
    expect(reply).toBe('FOUND 1 1\nx');
    // The blocked reserve was not lost: it is served once Redis is back.
    expect(await a.cmd('put 0 0 60 1\r\nz')).toMatch(/^INSERTED \d+$/);
    const r = await waiter.reply(5000);
    expect(r.line).toMatch(/^RESERVED \d+ 1$/);
  }, 30_000);
});

describe('blocked reserves through Redis restarts', () => {
  it('keep waiting through each restart and are all served after it, never INTERNAL_ERROR (5 restarts, 8 waiters)', async () => {
    const dir = tempDir();
    let redis = await startRedis({ dir, appendonly: true });
    const port = redis.port;
    cleanup.push(() => redis.stop());
    const sidecar = await startRedstalk({ redisUrl: redis.url, redisTimeoutMs: 500 });
    cleanup.push(() => sidecar.stop());
    for (let round = 0; round < 5; round++) {
      const waiters = await Promise.all(Array.from({ length: 8 }, () => dial(sidecar.port)));
      for (const w of waiters) w.send('reserve\r\n');
      await new Promise((r) => setTimeout(r, 100));
      await redis.stop({ keepDir: true });
      await new Promise((r) => setTimeout(r, 300));
      redis = await startRedis({ dir, appendonly: true, port });
      const producer = await dial(sidecar.port);
      let put = '';
      for (let i = 0; i < 50 && !put.startsWith('INSERTED'); i++) {
        put = await producer.cmd('put 0 0 60 1\r\np');
        if (!put.startsWith('INSERTED')) await new Promise((r) => setTimeout(r, 100));
      }
      for (let i = 1; i < waiters.length; i++) expect(await producer.cmd('put 0 0 60 1\r\np')).toMatch(/^INSERTED/);
      for (const w of waiters) expect((await w.reply(5000)).line, `round ${round}`).toMatch(/^RESERVED \d+ 1$/);
      for (const w of waiters) w.close();
      producer.close();
    }
  }, 60_000);
});

describe('SIGTERM', () => {
  it('exits at once with an idle client that keeps its side open, handing its reservation back', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const s = await spawnRedstalk(['--redis', redis.url, '--prefix', 'sigterm', '--log-level', 'warn']);
    const worker = await Wire.connect(s.port);
    await worker.cmd('put 0 0 60 1\r\nx');
    expect(await worker.cmd('reserve')).toBe('RESERVED 1 1\nx');
    // A pooled client that never reacts to the server's FIN.
    const idle = net.connect({ port: s.port, host: '127.0.0.1', allowHalfOpen: true });
    await new Promise((r) => idle.once('connect', r));
    idle.on('error', () => {});
    const t0 = Date.now();
    expect(await s.stop('SIGTERM')).toBe(0);
    expect(Date.now() - t0).toBeLessThan(1500); // the grace period (2 s) is for replies still being written
    idle.destroy();
    worker.close();
    const after = await spawnRedstalk(['--redis', redis.url, '--prefix', 'sigterm', '--log-level', 'warn']);
    cleanup.push(() => after.stop());
    const a = await dial(after.port);
    expect(yamlMap(await a.cmd('stats-job 1')).state).toBe('ready');
  });
});
