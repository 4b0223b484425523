// Replicas: --min-replicas waits for them (one WAIT per batch) and never
// acknowledges what they do not have; with redis-sentinel:// a sidecar follows
// a failover to the promoted replica without a restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../helpers/ports.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

interface Proc { port: number; child: ChildProcess; stop(signal?: NodeJS.Signals): Promise<void> }

async function redisProcess(args: string[], port?: number): Promise<Proc> {
  const p = port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-repl-'));
  const child = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
  await waitForPort(p);
  return {
    port: p, child,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

async function sentinel(primaryPort: number): Promise<Proc> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-sentinel-'));
  const conf = path.join(dir, 'sentinel.conf');
  writeFileSync(conf, [
    `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`,
    `sentinel monitor mymaster 127.0.0.1 ${primaryPort} 2`,
    'sentinel down-after-milliseconds mymaster 1000',
    'sentinel failover-timeout mymaster 3000',
    'sentinel parallel-syncs mymaster 1', '',
  ].join('\n'));
  const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  await waitForPort(port);
  return {
    port, child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function replicaInSync(primaryPort: number): Promise<void> {
  const admin = new Redis(primaryPort, '127.0.0.1');
  try {
    for (let i = 0; i < 100; i++) {
      // A fresh write acknowledged by the replica: it has finished its sync and keeps up (WAIT alone
      // answers at once for a connection that wrote nothing).
      await admin.set('replica-probe', String(i));
      if (/connected_slaves:1/.test(await admin.info('replication')) && (await admin.call('WAIT', 1, 200)) === 1) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the replica never caught up');
  } finally {
    admin.disconnect();
  }
}

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {});
});

// These build their own primary, replica and Sentinels: not on the test cluster.
describe.skipIf(onCluster)('--min-replicas', () => {
  it('acknowledges a put once a replica has it, and closes the connection (unknown) when none confirms in time', async () => {
    const primary: TestRedis = await startRedis();
    cleanup.push(() => primary.stop());
    const replica = await redisProcess(['--replicaof', '127.0.0.1', String(primary.port)]);
    cleanup.push(() => replica.stop());
    await replicaInSync(primary.port);
    const sidecar: TestSidecar = await startRedstalk({ redisUrl: primary.url, minReplicas: 1, minReplicasTimeoutMs: 1000 });
    cleanup.push(() => sidecar.stop());
    const a = await Wire.connect(sidecar.port);
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    await replica.stop();
    a.send('put 0 0 60 1\r\ny\r\n');
    await a.waitClosed(3000);
    expect(await a.silent(0)).toBe(true); // no INSERTED for a job no replica has
    const back = await redisProcess(['--replicaof', '127.0.0.1', String(primary.port)], replica.port);
    cleanup.push(() => back.stop());
    await replicaInSync(primary.port);
    const b = await Wire.connect(sidecar.port);
    expect(await b.cmd('put 0 0 60 1\r\nz')).toMatch(/^INSERTED \d+$/);
  }, 30_000);
});

describe.skipIf(onCluster)('redis-sentinel://', () => {
  it('follows a failover to the promoted replica without a restart, and keeps every job the replica had', async () => {
    const primary = await redisProcess([]);
    cleanup.push(() => primary.stop('SIGKILL'));
    const replica = await redisProcess(['--replicaof', '127.0.0.1', String(primary.port)]);
    cleanup.push(() => replica.stop());
    await replicaInSync(primary.port);
    const sentinels = await Promise.all([0, 1, 2].map(() => sentinel(primary.port)));
    for (const s of sentinels) cleanup.push(() => s.stop());
    const url = `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}?master=mymaster`;
    const sidecar = await startRedstalk({ redisUrl: url, redisTimeoutMs: 500 });
    cleanup.push(() => sidecar.stop());
    const a = await Wire.connect(sidecar.port);
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) acked.push(/^INSERTED (\d+)$/.exec(await a.cmd(`put 0 0 60 2\r\nj${i % 10}`))![1]!);
    await replicaInSync(primary.port);
    await primary.stop('SIGKILL');
    const killed = Date.now();
    let served = 0;
    for (let i = 0; i < 300 && !served; i++) {
      const c = await Wire.connect(sidecar.port);
      const reply = await c.cmd('put 0 0 60 2\r\nok', 3000).catch(() => '');
      c.close();
      if (/^INSERTED/.test(reply)) served = Date.now();
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(served).toBeGreaterThan(0);
    process.stdout.write(`sentinel failover: puts answered again ${served - killed} ms after the primary was killed\n`);
    const check = await Wire.connect(sidecar.port);
    for (const id of acked) expect(await check.cmd(`peek ${id}`)).toMatch(new RegExp(`^FOUND ${id} 2`));
    const promoted = new Redis(replica.port, '127.0.0.1');
    expect(await promoted.info('replication')).toMatch(/role:master/);
    promoted.disconnect();
  }, 60_000);
});
