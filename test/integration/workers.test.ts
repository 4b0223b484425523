// --workers N: one primary process (node:cluster) and N worker processes, each
// a full sidecar sharing the listening socket. The real command line, spawned.
import { Layout } from '../../src/store/layout.js';
import { onCluster, testShards } from '../helpers/topology.js';
import { execFileSync, spawn as spawnChild } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, spawnRedstalk, uniquePrefix, type SpawnedSidecar } from '../helpers/redstalk.js';
import { WirePool, yamlMap, type Wire } from '../helpers/wire.js';

// Generous: a loaded 2-core machine starts 3 node processes per test.
const TEST_MS = 90_000;
const POLL = { timeout: 45_000, interval: 200 };

let redis: TestRedis;
let db: Redis;
beforeAll(async () => {
  redis = await startRedis();
  db = new Redis(redis.url);
});
afterAll(async () => {
  db?.disconnect();
  await redis?.stop();
});

const pool = new WirePool();
const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  pool.closeAll();
  for (const f of cleanup.splice(0).reverse()) await f();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-workers-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Worker pids seen through `stats`, killed at the end should a test leave any behind. */
const workerPids = new Set<number>();
afterEach(() => {
  for (const pid of workerPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  workerPids.clear();
});

/** redstalk --workers 2 (and `args`), once every worker serves. */
async function spawnWorkers(args: string[]): Promise<SpawnedSidecar> {
  const s = await spawnRedstalk(['--workers', '2', '--log-level', 'info', ...args]);
  cleanup.push(() => s.stop());
  // The port accepts as soon as one worker serves.
  await expect.poll(() => s.output().includes('all workers ready'), POLL).toBe(true);
  return s;
}

/** The pid and node id of the worker that serves a connection. */
async function whoServes(w: Wire): Promise<{ pid: number; id: string }> {
  const stats = yamlMap(await w.cmd('stats', 15_000));
  const pid = Number(stats.pid);
  workerPids.add(pid);
  return { pid, id: stats.id! };
}

/** Connections until two of them are served by different workers. */
async function twoWorkers(port: number | string): Promise<Array<{ w: Wire; pid: number; id: string }>> {
  const seen = new Map<number, { w: Wire; pid: number; id: string }>();
  for (let i = 0; i < 40 && seen.size < 2; i++) {
    const w = await pool.dial(port);
    const who = await whoServes(w);
    if (!seen.has(who.pid)) seen.set(who.pid, { w, ...who });
    else w.close();
  }
  expect(seen.size).toBe(2);
  return [...seen.values()];
}

/** The sidecars registered under a prefix (not the tombstones of those gone, below 0), and which of them hold a live lease. */
async function registry(prefix: string): Promise<{ all: string[]; live: string[] }> {
  const [[, time], [, entries]] = (await db.multi().time().zrangebyscore(new Layout(prefix, testShards).keys(0).nodes, 0, '+inf', 'WITHSCORES').exec())! as [
    [null, [string, string]], [null, string[]],
  ];
  const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const all: string[] = [];
  const live: string[] = [];
  for (let i = 0; i < entries.length; i += 2) {
    all.push(entries[i]!);
    if (Number(entries[i + 1]) > now) live.push(entries[i]!);
  }
  return { all, live };
}

/** The parent's pid of a process (Linux). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Runs the command line to its end (no port to wait for: it is not expected to start). */
function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnChild(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...args], {
      cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr }); });
  });
}

// It reads the registry in its own redis-server: not on the test cluster (the shards run covers it).
describe.skipIf(onCluster)('--workers 2', () => {
  it('runs two sidecars on one port: two live nodes in the registry, global stats, a job crosses workers', async () => {
    const prefix = uniquePrefix();
    const s = await spawnWorkers(['--redis', redis.url, '--prefix', prefix]);
    const [a, b] = await twoWorkers(s.port);
    // Each worker is a sidecar of its own, a child of the primary.
    for (const { pid } of [a!, b!]) expect(parentOf(pid)).toBe(s.child.pid);
    expect((await registry(prefix)).live.sort()).toEqual([a!.id, b!.id].sort());

    const more = await Promise.all(Array.from({ length: 18 }, () => pool.dial(s.port)));
    const pids = new Set(await Promise.all(more.map(async (w) => (await whoServes(w)).pid)));
    expect([...pids].every((pid) => pid === a!.pid || pid === b!.pid)).toBe(true);
    // 20 connections, whichever worker holds them: stats add up every live sidecar.
    await expect.poll(async () => yamlMap(await a!.w.cmd('stats'))['current-connections'], POLL).toBe('20');
    await expect.poll(async () => yamlMap(await b!.w.cmd('stats'))['current-connections'], POLL).toBe('20');

    expect(await a!.w.cmd('use crossing')).toBe('USING crossing');
    expect(await a!.w.cmd('put 0 0 60 5\r\nhello')).toMatch(/^INSERTED \d+$/);
    expect(await b!.w.cmd('watch crossing')).toBe('WATCHING 2');
    expect(await b!.w.cmd('reserve-with-timeout 10', 15_000)).toMatch(/^RESERVED \d+ 5\nhello$/);
    // SIGUSR1 to the primary: every worker drains.
    s.child.kill('SIGUSR1');
    for (const { w } of [a!, b!]) await expect.poll(() => w.cmd('put 0 0 60 1\r\nz'), POLL).toBe('DRAINING');
  }, TEST_MS);

  it('SIGTERM: every worker stops gracefully, the primary exits 0 and leaves no process and no registry entry behind', async () => {
    const prefix = uniquePrefix();
    const s = await spawnWorkers(['--redis', redis.url, '--prefix', prefix]);
    const [a, b] = await twoWorkers(s.port);
    expect(await a!.w.cmd('put 0 0 60 1\r\nx')).toMatch(/^INSERTED/);
    expect(await b!.w.cmd('reserve', 15_000)).toMatch(/^RESERVED \d+ 1\nx$/);
    expect(await s.stop('SIGTERM')).toBe(0);
    for (const { pid } of [a!, b!]) await expect.poll(() => alive(pid), POLL).toBe(false);
    expect((await registry(prefix)).all).toEqual([]);
    expect(s.output()).toContain('redstalk stopped');
    // The reservation went back to ready.
    const again = await spawnWorkers(['--redis', redis.url, '--prefix', prefix]);
    const c = await pool.dial(again.port);
    expect(await c.cmd('reserve-with-timeout 10', 15_000)).toMatch(/^RESERVED \d+ 1\nx$/);
  }, TEST_MS);

  it('replaces a worker killed with SIGKILL, and keeps serving meanwhile', async () => {
    const prefix = uniquePrefix();
    const s = await spawnWorkers(['--redis', redis.url, '--prefix', prefix, '--heartbeat-ms', '200']);
    const [victim, survivor] = await twoWorkers(s.port);
    process.kill(victim!.pid, 'SIGKILL');
    await victim!.w.waitClosed(15_000);
    // The other worker's connection goes on.
    expect(await survivor!.w.cmd('put 0 0 60 4\r\nkept')).toMatch(/^INSERTED \d+$/);
    await expect.poll(() => s.output().includes('worker died: starting another'), POLL).toBe(true);
    // A new worker serves in its place: a new pid, a new node in the registry, the dead one's lease lapses.
    let replacement = 0;
    await expect.poll(async () => {
      const w = await pool.dial(s.port);
      const { pid } = await whoServes(w);
      if (pid !== survivor!.pid) replacement = pid;
      w.close();
      return replacement !== 0 && replacement !== victim!.pid;
    }, POLL).toBe(true);
    expect(alive(victim!.pid)).toBe(false);
    expect(parentOf(replacement)).toBe(s.child.pid);
    await expect.poll(async () => (await registry(prefix)).live.length, POLL).toBe(2);
    expect((await registry(prefix)).live).not.toContain(victim!.id);
    const [x, y] = await twoWorkers(s.port);
    expect(await x!.w.cmd('reserve-with-timeout 10', 15_000)).toMatch(/^RESERVED \d+ 4\nkept$/);
    expect(await y!.w.cmd('put 0 0 60 1\r\ny')).toMatch(/^INSERTED/);
    expect(alive(s.child.pid!)).toBe(true);
  }, TEST_MS);

  it('exits 1 with the reason when the workers cannot start (Redis out of reach)', async () => {
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const common = ['-l', '127.0.0.1', '-p', '0', '--redis', closed, '--redis-timeout-ms', '300', '--log-level', 'fatal'];
    const one = await run(common);
    expect(one.code).toBe(1);
    const reason = /^redstalk: (.+)$/m.exec(one.stderr)![1]!;
    const two = await run([...common, '--workers', '2']);
    expect(two.code).toBe(1);
    expect(two.stderr).toMatch(/^redstalk: worker \d could not start: /m);
    expect(two.stderr).toContain(reason);
  }, TEST_MS);

  it('starts one embedded redis-server for all workers, and stops it on SIGTERM', async () => {
    const dir = tempDir();
    const s = await spawnWorkers(['--data-dir', dir]);
    const embedded = JSON.parse(readFileSync(path.join(dir, 'redstalk-redis.json'), 'utf8')) as { pid: number; port: number };
    expect(parentOf(embedded.pid)).toBe(s.child.pid);
    expect(s.output().match(/started embedded redis-server/g)).toHaveLength(1);
    const [a, b] = await twoWorkers(s.port);
    expect(await a!.w.cmd('put 0 0 60 3\r\nabc')).toMatch(/^INSERTED \d+$/);
    expect(await b!.w.cmd('reserve-with-timeout 10', 15_000)).toMatch(/^RESERVED \d+ 3\nabc$/);
    expect(await s.stop('SIGTERM')).toBe(0);
    for (const pid of [a!.pid, b!.pid, embedded.pid]) await expect.poll(() => alive(pid), POLL).toBe(false);
    expect(existsSync(path.join(dir, 'redstalk-redis.json'))).toBe(false);
    expect(existsSync(path.join(dir, 'appendonlydir'))).toBe(true);
  }, TEST_MS);

  it('serves TLS and --http from every worker', async () => {
    const certs = certificates(tempDir());
    const http = `127.0.0.1:${await freePort()}`;
    const s = await spawnWorkers(['--redis', redis.url, '--prefix', uniquePrefix(), '--tls-cert', certs.cert, '--tls-key', certs.key, '--http', http]);
    const pids = new Set<number>();
    for (let i = 0; i < 40 && pids.size < 2; i++) {
      const stats = await tlsTalk(s.port, certs.cert, 'stats\r\n', /\r\n---[\s\S]*\r\n$/);
      pids.add(Number(/^pid: (\d+)$/m.exec(stats)![1]));
    }
    expect(pids.size).toBe(2);
    for (const pid of pids) workerPids.add(pid);
    expect(await tlsTalk(s.port, certs.cert, 'use tls\r\nput 0 0 60 2\r\nhi\r\n', /INSERTED \d+\r\n$/)).toMatch(/^USING tls\r\nINSERTED \d+\r\n$/);
    expect(await tlsTalk(s.port, certs.cert, 'watch tls\r\nreserve\r\n', /hi\r\n$/)).toMatch(/RESERVED \d+ 2\r\nhi\r\n$/);
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`http://${http}/readyz`);
      expect([res.status, await res.text()]).toEqual([200, 'ready\n']);
    }
    // Each worker's HTTP server joined the shared port.
    expect(s.output().match(/"http endpoint listening"/g)).toHaveLength(2);
  }, TEST_MS);

  it.skipIf(process.getuid?.() !== 0)('-u: each worker drops to the user once it serves; the primary keeps its own', async () => {
    const s = await spawnWorkers(['--redis', redis.url, '--prefix', uniquePrefix(), '-u', 'nobody']);
    const uid = (pid: number) => /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];
    const nobody = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
    const [a, b] = await twoWorkers(s.port);
    expect([uid(a!.pid), uid(b!.pid)]).toEqual([nobody, nobody]);
    expect(uid(s.child.pid!)).toBe(String(process.getuid!()));
    expect(await a!.w.cmd('put 0 0 60 1\r\nu')).toMatch(/^INSERTED/);
    expect(await s.stop('SIGTERM')).toBe(0);
  }, TEST_MS);

  it('serves a UNIX socket (-l unix:PATH) from every worker, and removes it on SIGTERM', async () => {
    const sock = path.join(tempDir(), 'redstalk.sock');
    const s = await spawnRedstalk(['--workers', '2', '--log-level', 'info', '-l', `unix:${sock}`, '--redis', redis.url, '--prefix', uniquePrefix()], {}, sock);
    cleanup.push(() => s.stop());
    await expect.poll(() => s.output().includes('all workers ready'), POLL).toBe(true);
    const [a, b] = await twoWorkers(sock);
    expect(await a!.w.cmd('put 0 0 60 4\r\nunix')).toMatch(/^INSERTED \d+$/);
    expect(await b!.w.cmd('reserve-with-timeout 10', 15_000)).toMatch(/^RESERVED \d+ 4\nunix$/);
    expect(await s.stop('SIGTERM')).toBe(0);
    expect(existsSync(sock)).toBe(false);
  }, TEST_MS);
});

/** A self-signed certificate for 127.0.0.1. */
function certificates(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'server.pem');
  const key = path.join(dir, 'server.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'pipe' });
  return { cert, key };
}

/** Sends bytes over a fresh TLS connection; resolves with what came back once `until` matches. */
function tlsTalk(port: number, ca: string, send: string, until: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const s = tls.connect({ port, host: '127.0.0.1', ca: readFileSync(ca) }, () => s.write(send));
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`timed out; have ${JSON.stringify(got)}`)); }, 15_000);
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (until.test(got)) { clearTimeout(timer); s.destroy(); resolve(got); }
    });
    s.on('error', (err) => { clearTimeout(timer); reject(err); });
  });
}
