// Thin clients together: a Node producer puts 10,000 jobs through two sidecars
// on one Redis; a Python worker and a Go worker, separate processes on either
// sidecar, process them. None is lost; none is run twice (TTR 60 s never lapses here).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../../clients/node/src/index.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, spawnRedstalk, type SpawnedSidecar } from '../helpers/redstalk.js';

const JOBS = 10_000;
const hasGo = spawnSync('sh', ['-c', 'command -v go'], { stdio: 'ignore' }).status === 0;

/** Collects the `done <id> <body>` lines of a worker process. */
function worker(name: string, child: ChildProcess): { name: string; child: ChildProcess; done: string[]; log: () => string } {
  const done: string[] = [];
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const l of lines) if (l.startsWith('done ')) done.push(l.split(' ')[2]!);
  });
  child.stderr!.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
  return { name, child, done, log: () => err };
}

describe.skipIf(!hasGo)('a Python worker and a Go worker on two sidecars, a Node producer', () => {
  let redis: TestRedis;
  const sidecars: SpawnedSidecar[] = [];
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) sidecars.push(await spawnRedstalk(['--redis', redis.url, '--prefix', 'cross', '--log-level', 'warn']));
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const s of sidecars) await s.stop();
    await redis?.stop();
  });

  it(`process ${JOBS} jobs: every one exactly once`, async () => {
    const bin = path.join(mkdtempSync(path.join(tmpdir(), 'redstalk-go-')), 'redstalk-worker');
    execFileSync('go', ['build', '-o', bin, './cmd/redstalk-worker'], {
      cwd: path.join(ROOT, 'clients/go'), env: { ...process.env, GOFLAGS: '-mod=mod', GOCACHE: path.join(tmpdir(), 'redstalk-gocache') },
    });
    const [a, b] = sidecars as [SpawnedSidecar, SpawnedSidecar];
    const go = worker('go', spawn(bin, ['-addr', `127.0.0.1:${a.port}`, '-tubes', 'cross', '-prefetch', '16', '-concurrency', '4'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    const py = worker('python', spawn('python3', [path.join(ROOT, 'test/clients/cross/worker.py'), '127.0.0.1', String(b.port), 'cross'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    children.push(go.child, py.child);

    const producers = await Promise.all([Client.connect({ port: a.port }), Client.connect({ port: b.port })]);
    for (const p of producers) await p.use('cross');
    const puts: Array<Promise<number>> = [];
    for (let n = 0; n < JOBS; n++) puts.push(producers[n % 2]!.put(`job-${n}`, { ttr: 60 }));
    await Promise.all(puts);
    for (const p of producers) await p.close();

    const seen = () => go.done.length + py.done.length;
    const deadline = Date.now() + 90_000;
    while (seen() < JOBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const probe = await Client.connect({ port: a.port });
    const atDeadline = await probe.statsTube('cross');
    await probe.close();
    // A moment for any duplicate to show up, then a graceful stop of both.
    await new Promise((r) => setTimeout(r, 500));
    for (const w of [go, py]) w.child.kill('SIGTERM');
    await Promise.all([go, py].map((w) => new Promise((r) => (w.child.exitCode !== null ? r(null) : w.child.once('exit', r)))));

    const all = [...go.done, ...py.done];
    const unique = new Set(all);
    const missing = Array.from({ length: JOBS }, (_, n) => `job-${n}`).filter((j) => !unique.has(j));
    process.stdout.write(`cross-language: go ${go.done.length}, python ${py.done.length}, duplicates ${all.length - unique.size}, missing ${missing.length}\n`);
    expect(missing, `tube when the wait ended: ${JSON.stringify(atDeadline)}\ngo: ${go.log()}\npython: ${py.log()}`).toEqual([]);
    expect(all.length - unique.size).toBe(0);
    expect(go.done.length).toBeGreaterThan(0);
    expect(py.done.length).toBeGreaterThan(0);
    const check = await Client.connect({ port: a.port });
    // The workers are gone and the tube with them: nothing left anywhere.
    expect(await check.stats()).toMatchObject({ 'current-jobs-ready': 0, 'current-jobs-reserved': 0, 'total-jobs': JOBS, 'cmd-delete': JOBS });
    await check.close();
  }, 150_000);
});
