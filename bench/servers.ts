// The servers under test, each a child process of the benchmark on a free
// loopback port: redis-server (with the persistence asked for, data in a
// temporary folder) plus one or two redstalk sidecars, or the real beanstalkd.
// Every process started here is remembered so that it is stopped, by its own
// PID, when the run ends or is interrupted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, loopback, waitUntilAccepting } from '../src/cli/ports.js';

export { hasBeanstalkd } from '../test/helpers/beanstalkd.js';

export type Target = 'redstalk' | 'beanstalkd';
/** everysec: redis AOF fsync every second / beanstalkd binlog (fsync every 50 ms); always: fsync each write; memory: neither. */
export type Persistence = 'everysec' | 'always' | 'memory';

export interface RunningTarget {
  /** Where clients connect: one port per sidecar (beanstalkd: one). */
  ports: number[];
  /** The command lines started, for the report. */
  commands: string[];
  stop(): Promise<void>;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;
const OUTPUT_KEPT = 4096;

interface Launched { child: ChildProcess; command: string; output(): string }

const alive = new Set<ChildProcess>();
const tempDirs = new Set<string>();

/** Extra redstalk flags for tuning runs, e.g. REDSTALK_BENCH_FLAGS='--batch-inflight 2'. */
const SIDECAR_FLAGS = (process.env.REDSTALK_BENCH_FLAGS ?? '').split(' ').filter(Boolean);

async function launch(binary: string, args: string[], port: number): Promise<Launched> {
  const child = spawn(binary, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  alive.add(child);
  child.once('exit', () => alive.delete(child));
  let output = '';
  const keep = (d: Buffer) => { output = (output + d.toString('utf8')).slice(-OUTPUT_KEPT); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const command = [path.basename(binary), ...args].map((a) => (a === '' ? '""' : a)).join(' ');
  try {
    await waitUntilAccepting(loopback(port), `port ${port}`, START_TIMEOUT_MS, () => {
      if (child.exitCode !== null) throw new Error(`exited with code ${child.exitCode}`);
    });
  } catch (err) {
    await stopProcess(child);
    throw new Error(`${command} did not start (${(err as Error).message}): ${output}`);
  }
  return { child, command, output: () => output };
}

/** SIGTERM, then SIGKILL if it has not exited in time; only ever our own child. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function tempDir(kind: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `redstalk-bench-${kind}-`));
  tempDirs.add(dir);
  return dir;
}

function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

const REDIS_PERSISTENCE: Record<Persistence, string[]> = {
  everysec: ['--appendonly', 'yes', '--appendfsync', 'everysec'],
  always: ['--appendonly', 'yes', '--appendfsync', 'always'],
  memory: ['--appendonly', 'no'],
};

const BEANSTALKD_PERSISTENCE: Record<Persistence, (dir: string) => string[]> = {
  everysec: (dir) => ['-b', dir],
  always: (dir) => ['-b', dir, '-f', '0'],
  memory: () => [],
};

async function startRedstalk(persistence: Persistence, sidecars: number, replica: boolean): Promise<RunningTarget> {
  const dir = tempDir('redis');
  const redisPort = await freePort();
  const redisArgs = (port: number, folder: string) => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', folder, '--save', '',
    ...REDIS_PERSISTENCE[persistence], '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
  ];
  const redis = await launch('redis-server', redisArgs(redisPort, dir), redisPort);
  const started: Launched[] = [];
  const replicaFlags: string[] = [];
  if (replica) {
    const replicaPort = await freePort();
    started.push(await launch('redis-server', [...redisArgs(replicaPort, tempDir('replica')), '--replicaof', '127.0.0.1', String(redisPort)], replicaPort));
    await replicaInSync(redisPort);
    replicaFlags.push('--min-replicas', '1');
  }
  const ports: number[] = [];
  try {
    for (let i = 0; i < sidecars; i++) {
      const port = await freePort();
      started.push(await launch(process.execPath, [
        '--import', 'tsx', 'src/cli.ts', '--redis', `redis://127.0.0.1:${redisPort}`,
        '-l', '127.0.0.1', '-p', String(port), '--prefix', 'bench', '--log-level', 'warn', ...replicaFlags, ...SIDECAR_FLAGS,
      ], port));
      ports.push(port);
    }
  } catch (err) {
    await Promise.all(started.map((s) => stopProcess(s.child)));
    await stopProcess(redis.child);
    removeDir(dir);
    throw err;
  }
  return {
    ports,
    commands: [redis.command, ...started.map((s) => s.command)],
    async stop() {
      await Promise.all(started.map((s) => stopProcess(s.child)));
      await stopProcess(redis.child);
      removeDir(dir);
    },
  };
}

/** Waits until the replica of the Redis at `port` has everything (WAIT 1 answers 1). */
async function replicaInSync(port: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const admin = new Redis(port, '127.0.0.1');
  try {
    for (let i = 0; i < 100; i++) {
      if ((await admin.call('WAIT', 1, 200)) === 1) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the replica never caught up');
  } finally {
    admin.disconnect();
  }
}

async function startBeanstalkd(persistence: Persistence): Promise<RunningTarget> {
  const dir = tempDir('binlog');
  const port = await freePort();
  const server = await launch('beanstalkd', ['-l', '127.0.0.1', '-p', String(port), ...BEANSTALKD_PERSISTENCE[persistence](dir)], port);
  return {
    ports: [port],
    commands: [server.command],
    async stop() {
      await stopProcess(server.child);
      removeDir(dir);
    },
  };
}

/** A fresh server (empty, private data folder) for one measurement. */
export function startTarget(target: Target, persistence: Persistence, sidecars = 1, replica = false): Promise<RunningTarget> {
  return target === 'redstalk' ? startRedstalk(persistence, sidecars, replica) : startBeanstalkd(persistence);
}

/** Stops whatever is still running and removes the data folders: for Ctrl-C and errors. */
export async function stopEverything(): Promise<void> {
  await Promise.all([...alive].map(stopProcess));
  for (const dir of [...tempDirs]) removeDir(dir);
}
