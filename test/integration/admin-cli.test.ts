// The admin subcommands end to end against a running sidecar, and jobs moved
// from the real beanstalkd into redstalk with drain-to / load.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../../clients/node/src/index.js';
import type { ExportedJob } from '../../src/cli/admin/transfer.js';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, startRedstalk, type TestSidecar } from '../helpers/redstalk.js';

function cli(args: string[], input?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

describe('the admin command line', () => {
  let redis: TestRedis;
  let sidecar: TestSidecar;
  let server: string;
  beforeAll(async () => {
    redis = await startRedis();
    // One shard: the admin commands print real ids, which these tests spell out.
    sidecar = await startRedstalk({ redisUrl: redis.url, shards: 1 });
    server = `127.0.0.1:${sidecar.port}`;
  });
  afterAll(async () => {
    await sidecar?.stop();
    await redis?.stop();
  });

  it('puts, shows stats, tubes, the next job, kicks and pauses, with --json for scripts', async () => {
    expect((await cli(['put', 'jobs', '-', '--pri', '5', '--ttr', '30', '-s', server], 'payload')).stdout).toBe('inserted 1\n');
    const put = JSON.parse((await cli(['put', 'jobs', '--delay', '100', '--json', '-s', server], 'later')).stdout) as { id: number };
    expect(put).toEqual({ tube: 'jobs', id: 2 });
    const tubes = JSON.parse((await cli(['tubes', '--json', '-s', server])).stdout) as Array<Record<string, unknown>>;
    expect(tubes.find((t) => t.name === 'jobs')).toMatchObject({ 'current-jobs-ready': 1, 'current-jobs-delayed': 1 });
    const text = (await cli(['tubes', '-s', server])).stdout;
    expect(text.split('\n')[0]).toMatch(/^tube +ready +urgent +reserved +delayed +buried +total/);
    expect(text).toMatch(/^jobs +1 +1 +0 +1 +0 +2 /m);
    const peek = JSON.parse((await cli(['peek', 'jobs', 'ready', '--json', '-s', server])).stdout) as Record<string, unknown>;
    expect(peek).toMatchObject({ id: 1, pri: 5, ttr: 30, state: 'ready', body: Buffer.from('payload').toString('base64') });
    expect((await cli(['peek', 'jobs', 'delayed', '-s', server])).stdout).toMatch(/later\n$/);
    expect(JSON.parse((await cli(['kick', 'jobs', '10', '--json', '-s', server])).stdout)).toEqual({ tube: 'jobs', kicked: 1 });
    expect((await cli(['pause', 'jobs', '60', '-s', server])).status).toBe(0);
    const stats = JSON.parse((await cli(['stats', '--json', '-s', server])).stdout) as Record<string, unknown>;
    expect(stats).toMatchObject({ 'current-jobs-ready': 2, 'cmd-put': 2, 'cmd-pause-tube': 1 });
    // Limits: set with tube-set, shown by stats-tube and the tubes table.
    expect(JSON.parse((await cli(['limit', 'jobs', '--max-reserved', '5', '--reserve-rate', '100', '--json', '-s', server])).stdout))
      .toEqual({ tube: 'jobs', exists: true, 'max-reserved': 5, 'reserve-rate': 100, 'dedup-window': 300, 'jobs-expired': 0, 'duplicate-puts': 0 });
    expect((await cli(['tubes', '-s', server])).stdout).toMatch(/^jobs +.* 5 at once, 100\/s *$/m);
    expect((await cli(['limit', 'nosuch', '--dedup-window', '60', '-s', server])).stdout).toBe('nosuch does not exist now; its settings are kept for when it does\n');
    expect((await cli(['limit', 'jobs', '--reserve-rate', 'x', '-s', server])).status).not.toBe(0);
    const peekMissing = await cli(['peek', 'jobs', 'buried', '-s', server]);
    expect(peekMissing.status).not.toBe(0);
    expect(peekMissing.stderr).toMatch(/NOT_FOUND/);
  });

  it('shows waiting rooms and one room', async () => {
    const c = await Client.connect({ port: sidecar.port });
    await c.roomConfig('hall', { capacity: 1, checkinTimeout: 30, participantTimeout: 120, grace: 0 });
    await c.enter('hall', 'ann');
    await c.enter('hall', 'bob');
    await c.close();
    expect((await cli(['rooms', '-s', server])).stdout).toMatch(/^hall +1 +1 +0 +1 +0 +1 /m);
    expect(JSON.parse((await cli(['room', 'hall', '--json', '-s', server])).stdout)).toMatchObject({ name: 'hall', participants: 1, waiting: 1 });
  });

  it('top --once prints the tubes with their rates, and the rooms', async () => {
    const c = await Client.connect({ port: sidecar.port });
    await c.enter('arena', 'ann');
    await c.use('busy');
    let done = false;
    const putting = (async () => { while (!done) { await c.put('x'); await new Promise((r) => setTimeout(r, 10)); } })();
    const top = await cli(['top', '--once', '--interval', '0.5', '-s', server]);
    done = true;
    await putting;
    await c.close();
    const lines = top.stdout.split('\n');
    expect(lines[0]).toMatch(/^redstalk top +127\.0\.0\.1:\d+ +\S+ +\(rates over 0\.\d s\)$/);
    expect(top.stdout).toMatch(/^tube +ready .* put\/s +delete\/s$/m);
    const busy = lines.find((l) => l.startsWith('busy '));
    expect(Number(busy!.trim().split(/ +/).at(-2))).toBeGreaterThan(5);
    expect(top.stdout).toMatch(/^room +capacity +inside/m);
    expect(top.stdout).toMatch(/^arena +100 +1 +0 /m);
  });
});

describe.skipIf(!hasBeanstalkd)('drain-to from beanstalkd, load into redstalk', () => {
  it('moves 10,000 jobs with their priorities, TTRs, delays and buried state', async () => {
    const bs = await startBeanstalkd();
    const redis = await startRedis();
    const sidecar = await startRedstalk({ redisUrl: redis.url });
    try {
      const src = await Client.connect({ port: bs.port });
      const want: string[] = [];
      const key = (j: Pick<ExportedJob, 'tube' | 'state' | 'pri' | 'ttr' | 'body'>) => `${j.tube}|${j.state}|${j.pri}|${j.ttr}|${j.body}`;
      await src.use('mig');
      const puts: Array<Promise<number>> = [];
      for (let i = 0; i < 8000; i++) {
        const delayed = i % 4 === 3;
        const j = { tube: 'mig', state: delayed ? 'delayed' : 'ready', pri: i % 7, ttr: 30 + (i % 5), body: Buffer.from(`job ${i}`).toString('base64') } as const;
        puts.push(src.put(Buffer.from(`job ${i}`), { priority: j.pri, ttr: j.ttr, delay: delayed ? 3600 : 0 }));
        want.push(key(j));
      }
      await src.use('graveyard');
      for (let i = 0; i < 2000; i++) {
        puts.push(src.put(Buffer.from(`dead ${i}`), { priority: 100 + (i % 3), ttr: 60 }));
        want.push(key({ tube: 'graveyard', state: 'buried', pri: 9, ttr: 60, body: Buffer.from(`dead ${i}`).toString('base64') }));
      }
      await Promise.all(puts);
      await src.watch('graveyard');
      await src.ignore('default');
      await src.ignore('mig');
      const reserved = await Promise.all(Array.from({ length: 2000 }, () => src.reserveWithTimeout(0)));
      await Promise.all(reserved.map((j) => src.bury(j.id, 9)));
      await src.close();

      const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-migrate-'));
      const file = path.join(dir, 'jobs.jsonl');
      const drain = await cli(['drain-to', file, '-t', 'mig', '-t', 'graveyard', '--json', '-s', `127.0.0.1:${bs.port}`]);
      expect(drain.status, drain.stderr).toBe(0);
      expect(JSON.parse(drain.stdout)).toMatchObject({ ready: 6000, delayed: 2000, buried: 2000, lost: 0 });
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as ExportedJob);
      expect(lines.map(key).sort()).toEqual([...want].sort());
      expect(lines.filter((j) => j.state === 'delayed').every((j) => j.delay > 3500 && j.delay <= 3600)).toBe(true);
      const empty = await Client.connect({ port: bs.port });
      expect(await empty.stats()).toMatchObject({ 'current-jobs-ready': 0, 'current-jobs-delayed': 0, 'current-jobs-buried': 0 });
      await empty.close();

      const load = await cli(['load', file, '--json', '-s', `127.0.0.1:${sidecar.port}`]);
      expect(load.status, load.stderr).toBe(0);
      expect(JSON.parse(load.stdout)).toEqual({ ready: 6000, delayed: 2000, buried: 2000 });
      const dst = await Client.connect({ port: sidecar.port });
      expect(await dst.statsTube('mig')).toMatchObject({ 'current-jobs-ready': 6000, 'current-jobs-delayed': 2000 });
      expect(await dst.statsTube('graveyard')).toMatchObject({ 'current-jobs-buried': 2000, 'current-jobs-reserved': 0 });
      // The most urgent ready job comes first, as it did in beanstalkd.
      await dst.use('mig');
      expect((await dst.peekReady()).body.toString()).toBe('job 0');
      await dst.close();
      // And out of redstalk again: the same jobs, states and times.
      const again = path.join(dir, 'again.jsonl');
      expect((await cli(['drain-to', again, '-s', `127.0.0.1:${sidecar.port}`])).status).toBe(0);
      const back = readFileSync(again, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as ExportedJob);
      expect(back.map(key).sort()).toEqual([...want].sort());
    } finally {
      await sidecar.stop();
      await redis.stop();
      await bs.stop();
    }
  }, 120_000);
});
