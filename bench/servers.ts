// The servers under test, each a child process of the benchmark on a free
// loopback port: redis-server (with the persistence asked for, data in a
// temporary folder; or a Redis Cluster) plus one or more redstalk sidecars,
// the real beanstalkd, or a redis-server alone for BullMQ; `baseline` is
// redstalk again, from another checkout (an old commit, --baseline). Every process
// started here is remembered so that it is stopped, by its own PID, when the
// run ends or is interrupted; each is also named with its PIDs for the CPU
// meter (cpu.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, loopback, waitUntilAccepting } from '../src/cli/ports.js';
import { staleBuild } from '../scripts/build-fresh.js';
import { Wire, yamlMap } from '../test/helpers/wire.js';
import type { Watched } from './cpu.js';

import { hasBeanstalkd as beanstalkdOnPath } from '../test/helpers/beanstalkd.js';

/**
 * baseline: redstalk from the checkout given to useBaseline (run.ts --baseline), started as redstalk is.
 * floor: bench/floor-server.ts, a Node server answering from memory (the least a Node sidecar can cost).
 * floor-redis: the same server keeping its jobs in its own Redis (bench/floor-redis.ts: the least a Node sidecar and its Redis can cost).
 */
export type Target = 'redstalk' | 'baseline' | 'beanstalkd' | 'bullmq' | 'floor' | 'floor-redis';
/** In the order they play and are listed: the baseline right after the redstalk it is compared with. */
export const TARGETS: readonly Target[] = ['redstalk', 'baseline', 'beanstalkd', 'bullmq', 'floor', 'floor-redis'];
/** The floors: measured only when named in --targets. */
export const FLOORS: readonly Target[] = ['floor', 'floor-redis'];
/** everysec: redis AOF fsync every second / beanstalkd binlog (fsync every 50 ms); always: fsync each write; memory: neither. */
export type Persistence = 'everysec' | 'always' | 'memory';

export interface TargetOptions {
  persistence: Persistence;
  /** redstalk sidecars on the one data set, clients spread across them. */
  sidecars?: number;
  /** redstalk's Redis gets a local replica, and the sidecars --min-replicas 1. */
  replica?: boolean;
  /** redstalk on a Redis Cluster of this many primaries (no replicas, no persistence) instead of one redis-server. */
  clusterPrimaries?: number;
  /** --shards of each sidecar. */
  shards?: number;
  /** --workers of each sidecar. */
  workers?: number;
  /** The sidecars serve --http with --dashboard (the admin API, its live feed, /metrics). */
  dashboard?: boolean;
}

export interface RunningTarget {
  /** Where clients connect: one port per sidecar (beanstalkd: one; bullmq: none). */
  ports: number[];
  /** The primary redis-servers (bullmq: its Redis). */
  redisPorts: number[];
  /** The sidecars' --http addresses (host:port), when they have one. */
  http?: string[];
  /** The processes whose CPU is measured. */
  watched: Watched[];
  /** The command lines started, for the report. */
  commands: string[];
  stop(): Promise<void>;
}

/** This checkout: redstalk's sidecars run from it. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;
const OUTPUT_KEPT = 4096;

interface Launched { child: ChildProcess; command: string; output(): string }

const alive = new Set<ChildProcess>();
const tempDirs = new Set<string>();
const clusters = new Set<{ stop(): Promise<void> }>();

/** Extra redstalk flags for tuning runs, e.g. REDSTALK_BENCH_FLAGS='--batch-inflight 2'. */
const SIDECAR_FLAGS = (process.env.REDSTALK_BENCH_FLAGS ?? '').split(' ').filter(Boolean);
/** Extra Node flags for every sidecar, e.g. REDSTALK_BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile it. */
const SIDECAR_NODE_FLAGS = (process.env.REDSTALK_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

/** The beanstalkd binary the beanstalkd target runs: the one on PATH unless useBeanstalkd named another. */
export let beanstalkdBinary = 'beanstalkd';
let beanstalkdChosen = false;

/** Whether there is a beanstalkd to measure against. */
export const hasBeanstalkd = (): boolean => beanstalkdChosen || beanstalkdOnPath;

/** Makes `binary` (e.g. a beanstalkd 1.13 built from source) the beanstalkd target's. */
export function useBeanstalkd(binary: string): void {
  if (!existsSync(binary)) throw new Error(`--beanstalkd ${binary}: no such file`);
  beanstalkdBinary = path.resolve(binary);
  beanstalkdChosen = true;
}

/**
 * How redstalk's sidecars run: `dist`, as users run them (`node dist/cli.js`,
 * the bundle `npm run build` makes), or `src` through tsx (bench/README.md,
 * "The sidecar as users run it").
 */
export type SidecarBuild = 'dist' | 'src';
export const SIDECAR_BUILDS: readonly SidecarBuild[] = ['dist', 'src'];
let sidecarBuild: SidecarBuild = 'dist';

/** Runs redstalk's sidecars from `build` in every checkout measured (ROOT's and the baseline's, once one is chosen). */
export function useSidecarBuild(build: SidecarBuild): void {
  sidecarBuild = build;
}

/** The checkouts whose build was found fresh (each is looked at once a run). */
const builtCheckouts = new Set<string>();

/** A checkout's build, refused when missing or older than its sources (a stale build would measure old code). */
export function checkBuilt(checkout: string): void {
  if (sidecarBuild !== 'dist' || builtCheckouts.has(checkout)) return;
  const stale = staleBuild(checkout);
  if (stale) throw new Error(`${stale}: run \`npm run build\` in ${checkout}, or measure from source with --sidecar src`);
  builtCheckouts.add(checkout);
}

/** The sidecar's entry in a checkout: the bundle, or its source through tsx. */
const sidecarEntry = (): string[] => (sidecarBuild === 'dist' ? ['dist/cli.js'] : ['--import', 'tsx', 'src/cli.ts']);

/** The checkout the baseline target's sidecars run from (useBaseline). */
let baselineCheckout: string | undefined;

/** Makes `dir`, another redstalk checkout with its node_modules, the baseline target's. */
export function useBaseline(dir: string): void {
  const checkout = path.resolve(dir);
  for (const needed of ['src/cli.ts', 'node_modules']) {
    if (!existsSync(path.join(checkout, needed))) {
      throw new Error(`--baseline ${dir}: no ${needed} there; it must be a redstalk checkout with node_modules (git worktree add DIR COMMIT; ln -s "$PWD/node_modules" DIR/node_modules)`);
    }
  }
  baselineCheckout = checkout;
}

async function launch(binary: string, args: string[], port: number, cwd = ROOT): Promise<Launched> {
  const child = spawn(binary, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  alive.add(child);
  child.once('exit', () => alive.delete(child));
  let output = '';
  const keep = (d: Buffer) => { output = (output + d.toString('utf8')).slice(-OUTPUT_KEPT); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  // The folder is part of the command when it is not this checkout: redstalk and baseline differ only in it.
  const command = [...(cwd === ROOT ? [] : ['cd', cwd, '&&']), path.basename(binary), ...args].map((a) => (a === '' ? '""' : a)).join(' ');
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

/** The Redis a target keeps its data in: one redis-server (and its replica) or a cluster. */
interface RedisUnderTest {
  url: string;
  primaries: number[];
  watched: Watched[];
  commands: string[];
  stop(): Promise<void>;
}

/** A fresh redis-server (redstalk's or BullMQ's: the same settings), with a local replica when asked. */
async function startRedis(persistence: Persistence, replica: boolean): Promise<RedisUnderTest> {
  const args = (port: number, dir: string) => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    ...REDIS_PERSISTENCE[persistence], '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
  ];
  const started: Array<Launched & { dir: string; port: number; label: string }> = [];
  const stop = async () => {
    for (const s of [...started].reverse()) {
      await stopProcess(s.child);
      removeDir(s.dir);
    }
  };
  const start = async (label: string, extra: string[] = []) => {
    const port = await freePort();
    const dir = tempDir(label.replace(' ', '-'));
    started.push({ ...(await launch('redis-server', [...args(port, dir), ...extra], port)), dir, port, label });
    return port;
  };
  try {
    const port = await start('redis');
    if (replica) {
      await start('redis replica', ['--replicaof', '127.0.0.1', String(port)]);
      await replicaInSync(port);
    }
    return {
      url: `redis://127.0.0.1:${port}`,
      primaries: [port],
      watched: started.map((s) => ({ role: 'redis', label: s.label, pids: [s.child.pid!], redisPort: s.port })),
      commands: started.map((s) => s.command),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
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

/** A private Redis Cluster (test/helpers/cluster.ts: no replicas, no persistence, slots split evenly); its primaries in slot order. */
async function startRedisCluster(primaries: number): Promise<RedisUnderTest> {
  const { startCluster } = await import('../test/helpers/cluster.js');
  const cluster = await startCluster({ primaries });
  clusters.add(cluster);
  const stop = async () => {
    await cluster.stop();
    clusters.delete(cluster);
  };
  try {
    const ports = (await cluster.nodes()).filter((n) => n.slots.length).sort((a, b) => a.slots[0]![0] - b.slots[0]![0]).map((n) => n.port);
    const pids = await Promise.all(ports.map(async (p) => Number(/^process_id:(\d+)/m.exec(String(await cluster.call(p, 'INFO', 'server')))?.[1])));
    return {
      url: cluster.url,
      primaries: ports,
      watched: ports.map((port, i) => ({ role: 'redis', label: `redis ${i + 1}`, pids: [pids[i]!], redisPort: port })),
      commands: [`redis-server x${primaries} --cluster-enabled yes --appendonly no --save "" (test/helpers/cluster.ts), ${cluster.url}`],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The PIDs of a sidecar's workers, as `stats` tells them, once each of the `workers` has taken a connection. */
async function workerPids(port: number, workers: number): Promise<number[]> {
  const pids = new Set<number>();
  const until = Date.now() + START_TIMEOUT_MS;
  while (pids.size < workers) {
    if (Date.now() > until) throw new Error(`only ${pids.size} of ${workers} workers on port ${port} took a connection`);
    const wire = await Wire.connect(port);
    try {
      pids.add(Number(yamlMap(await wire.cmd('stats')).pid));
    } finally {
      wire.close();
    }
    if (pids.size < workers) await new Promise((r) => setTimeout(r, 20));
  }
  return [...pids];
}

/**
 * Waits for a sidecar's first reply (`list-tube-used` needs the store): it listens before
 * it has loaded its Redis client and connected, and the load must not start before that,
 * or the first jobs wait for the start-up and count as the scenario's latency.
 */
async function answering(port: number): Promise<void> {
  const wire = await Wire.connect(port);
  try {
    const reply = await wire.cmd('list-tube-used', START_TIMEOUT_MS);
    if (!reply.startsWith('USING')) throw new Error(`port ${port} answered ${JSON.stringify(reply)} to list-tube-used`);
  } finally {
    wire.close();
  }
}

/** redstalk from `checkout`: its sidecar (sidecarEntry) run in it, so with its own lua/ and node_modules. */
async function startRedstalk(o: TargetOptions, checkout: string): Promise<RunningTarget> {
  checkBuilt(checkout);
  const redis = o.clusterPrimaries ? await startRedisCluster(o.clusterPrimaries) : await startRedis(o.persistence, o.replica === true);
  const flags = [
    ...(o.replica ? ['--min-replicas', '1'] : []),
    ...(o.shards ? ['--shards', String(o.shards)] : []),
    ...(o.workers ? ['--workers', String(o.workers)] : []),
    ...SIDECAR_FLAGS,
  ];
  const sidecars: Launched[] = [];
  const ports: number[] = [];
  const http: string[] = [];
  const watched: Watched[] = [];
  const stop = async () => {
    await Promise.all(sidecars.map((s) => stopProcess(s.child)));
    await redis.stop();
  };
  try {
    for (let i = 0; i < (o.sidecars ?? 1); i++) {
      const port = await freePort();
      if (o.dashboard) http.push(`127.0.0.1:${await freePort()}`);
      const sidecar = await launch(process.execPath, [
        ...SIDECAR_NODE_FLAGS, ...sidecarEntry(), '--redis', redis.url,
        '-l', '127.0.0.1', '-p', String(port), '--prefix', 'bench', '--log-level', 'warn', ...flags,
        ...(o.dashboard ? ['--http', http[i]!, '--dashboard'] : []),
      ], port, checkout);
      sidecars.push(sidecar);
      ports.push(port);
      await answering(port);
      // With --workers the primary only hands out connections: both it and every worker are the sidecar's CPU.
      const workers = (o.workers ?? 1) > 1 ? await workerPids(port, o.workers!) : [];
      watched.push({ role: 'server', label: `sidecar ${i + 1}`, pids: [sidecar.child.pid!, ...workers] });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    ports,
    redisPorts: redis.primaries,
    http,
    watched: [...watched, ...redis.watched],
    commands: [...redis.commands, ...sidecars.map((s) => s.command)],
    stop,
  };
}

async function startBeanstalkd(persistence: Persistence): Promise<RunningTarget> {
  const dir = tempDir('binlog');
  const port = await freePort();
  const server = await launch(beanstalkdBinary, ['-l', '127.0.0.1', '-p', String(port), ...BEANSTALKD_PERSISTENCE[persistence](dir)], port);
  return {
    ports: [port],
    redisPorts: [],
    watched: [{ role: 'server', label: 'beanstalkd', pids: [server.child.pid!] }],
    commands: [server.command],
    async stop() {
      await stopProcess(server.child);
      removeDir(dir);
    },
  };
}

/** The floor server, its jobs in memory (no persistence to set), or in a fresh Redis of redstalk's settings. */
async function startFloor(persistence: Persistence | null): Promise<RunningTarget> {
  const redis = persistence ? await startRedis(persistence, false) : null;
  const stop = async () => {
    if (server) await stopProcess(server.child);
    await redis?.stop();
  };
  let server: Launched | undefined;
  try {
    const port = await freePort();
    server = await launch(process.execPath, ['--import', 'tsx', 'bench/floor-server.ts', String(port), ...(redis ? [redis.url] : [])], port);
    return {
      ports: [port],
      redisPorts: redis?.primaries ?? [],
      watched: [{ role: 'server', label: redis ? 'floor-redis' : 'floor', pids: [server.child.pid!] }, ...(redis?.watched ?? [])],
      commands: [...(redis?.commands ?? []), server.command],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** BullMQ's Redis: redstalk's settings; its clients run in the benchmark process (bullmq.ts). */
async function startBullmqRedis(persistence: Persistence): Promise<RunningTarget> {
  const redis = await startRedis(persistence, false);
  return { ports: [], redisPorts: redis.primaries, watched: redis.watched, commands: redis.commands, stop: redis.stop };
}

/** A fresh server (empty, private data folder) for one measurement. */
export function startTarget(target: Target, options: TargetOptions): Promise<RunningTarget> {
  if (target === 'redstalk') return startRedstalk(options, ROOT);
  if (target === 'baseline') {
    if (!baselineCheckout) throw new Error('the baseline target needs --baseline DIR');
    return startRedstalk(options, baselineCheckout);
  }
  if (target === 'beanstalkd') return startBeanstalkd(options.persistence);
  if (target === 'floor') return startFloor(null);
  if (target === 'floor-redis') return startFloor(options.persistence);
  return startBullmqRedis(options.persistence);
}

/** Stops whatever is still running and removes the data folders: for Ctrl-C and errors. */
export async function stopEverything(): Promise<void> {
  await Promise.all([...alive].map(stopProcess));
  await Promise.all([...clusters].map((c) => c.stop()));
  for (const dir of [...tempDirs]) removeDir(dir);
}
