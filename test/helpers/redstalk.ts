import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { checkConfig } from '../../src/config/check.js';
import { createServer, type RedstalkServer, type ServerOptions } from '../../src/index.js';
import { createLogger } from '../../src/log.js';
import { openSidecar, type OpenSidecar } from '../../src/open.js';
import { freePort, waitForPort, waitForSocket } from './ports.js';
import { startRedis, type TestRedis } from './redis.js';
import { registerSidecar, testClusterUrl, testShards, unregisterSidecar } from './topology.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A fresh key prefix so tests sharing one redis-server never see each other's jobs. */
export function uniquePrefix(): string {
  return `t${randomBytes(5).toString('hex')}`;
}

export interface TestSidecar { port: number; prefix: string; server: RedstalkServer; stop(): Promise<void>; }

export type TestOptions = Partial<ServerOptions> & { redisUrl: string };

/** Test defaults; on the variants' data sets (test/helpers/topology.ts), their shard count and the shared cluster. */
function withTestDefaults(opts: TestOptions): TestOptions & { prefix: string } {
  const options = { listen: '127.0.0.1', port: 0, prefix: uniquePrefix(), logLevel: (process.env.TEST_LOG ?? 'silent') as TestOptions['logLevel'], shards: testShards, ...opts };
  return testClusterUrl && !opts.redisUrl.startsWith('redis-') ? { ...options, redisUrl: testClusterUrl } : options;
}

/** An in-process redstalk (the public API) on a free loopback port, talking to the given Redis. */
export async function startRedstalk(opts: TestOptions): Promise<TestSidecar> {
  const options = withTestDefaults(opts);
  const server = await createServer(options);
  registerSidecar(server.port, options.redisUrl, options.prefix);
  return { port: server.port, prefix: options.prefix, server, stop: () => { unregisterSidecar(server.port); return server.close(); } };
}

export interface InsideSidecar extends OpenSidecar { port: number; prefix: string; stop(): Promise<void> }

/** A sidecar opened below the public API, for tests that look at its parts (batcher, store). */
export async function startInside(opts: TestOptions): Promise<InsideSidecar> {
  const { config } = checkConfig(withTestDefaults(opts));
  const opened = await openSidecar(config, createLogger(config.logLevel));
  registerSidecar(opened.sidecar.port, config.redisUrl, config.prefix);
  return { ...opened, port: opened.sidecar.port, prefix: config.prefix, stop: () => { unregisterSidecar(opened.sidecar.port); return opened.sidecar.close(); } };
}

/** redis-server + one in-process redstalk; stop() tears both down. */
export async function startStack(opts: Partial<ServerOptions> = {}): Promise<TestSidecar & { redis: TestRedis }> {
  const redis = await startRedis();
  const sidecar = await startRedstalk({ ...opts, redisUrl: redis.url });
  return {
    ...sidecar,
    redis,
    async stop() { await sidecar.stop(); await redis.stop(); },
  };
}

/**
 * For each test of the suite it is called in: a redis-server of its own, an
 * admin link to it (prepare() may set it up before the sidecar starts) and an
 * in-process redstalk on it, all stopped after the test.
 */
export function ownRedisEachTest(): { start(opts?: Partial<ServerOptions>, prepare?: (admin: Redis) => Promise<void>): Promise<{ admin: Redis; sidecar: TestSidecar }> } {
  let redis: TestRedis | undefined;
  let admin: Redis | undefined;
  let sidecar: TestSidecar | undefined;
  afterEach(async () => {
    await sidecar?.stop();
    admin?.disconnect();
    await redis?.stop();
    redis = admin = sidecar = undefined;
  });
  return {
    async start(opts = {}, prepare = async () => {}) {
      redis = await startRedis();
      admin = new Redis(redis.url);
      await prepare(admin);
      sidecar = await startRedstalk({ ...opts, redisUrl: redis.url });
      return { admin, sidecar };
    },
  };
}

export interface SpawnedSidecar { port: number; child: ChildProcess; output(): string; stop(signal?: NodeJS.Signals): Promise<number | null>; }

/** redstalk as a separate process (for SIGKILL / signal / CLI tests). */
export async function spawnRedstalk(args: string[], env: NodeJS.ProcessEnv = {}, socketPath?: string): Promise<SpawnedSidecar> {
  const port = await freePort();
  const listen = socketPath ? [] : ['-l', '127.0.0.1', '-p', String(port)];
  // On the test cluster, a sidecar of a test's own plain Redis serves from the cluster instead (as startRedstalk's do).
  const redisAt = args.indexOf('--redis');
  if (testClusterUrl && redisAt >= 0 && args[redisAt + 1]!.startsWith('redis://')) args = args.map((a, i) => (i === redisAt + 1 ? testClusterUrl : a));
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...listen, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...(testShards > 1 ? { REDSTALK_SHARDS: String(testShards) } : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  child.stderr!.on('data', (d) => { out += d; });
  try {
    if (socketPath) await waitForSocket(socketPath, 15_000);
    else await waitForPort(port, 15_000);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`redstalk did not start: ${out}`);
  }
  const arg = (...names: string[]) => { const at = args.findIndex((a) => names.includes(a)); return at >= 0 ? args[at + 1] : undefined; };
  const dataSet = arg('--redis') ?? env.REDSTALK_REDIS_URL ?? `embedded ${arg('-b', '--data-dir') ?? ''}`;
  registerSidecar(socketPath ?? port, dataSet, arg('--prefix') ?? env.REDSTALK_PREFIX ?? 'redstalk');
  child.once('exit', () => unregisterSidecar(socketPath ?? port));
  return {
    port,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill(signal);
      return exited;
    },
  };
}
