import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from './ports.js';

export interface TestRedis {
  port: number;
  url: string;
  /** The same server on its unix socket (unix:///…/redis.sock). */
  socketUrl: string;
  dir: string;
  process: ChildProcess;
  /** SIGKILL-free stop: SHUTDOWN NOSAVE via signal, then remove the data dir unless kept. */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

/**
 * Starts a private redis-server on a free loopback port (never the machine's
 * shared 6379). `appendonly` keeps data across a restart in the same `dir`;
 * `args`: more redis-server options.
 */
export async function startRedis(opts: { dir?: string; appendonly?: boolean; port?: number; args?: string[] } = {}): Promise<TestRedis> {
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'redstalk-test-redis-'));
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--save', '', '--appendonly', opts.appendonly ? 'yes' : 'no',
    '--daemonize', 'no', '--loglevel', 'warning',
    '--unixsocket', path.join(dir, 'redis.sock'), '--unixsocketperm', '700',
    ...(opts.args ?? []),
  ];
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  await waitForPort(port);
  let stopped = false;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    socketUrl: `unix://${path.join(dir, 'redis.sock')}`,
    dir,
    process: child,
    async stop(stopOpts = {}) {
      if (!stopped) {
        stopped = true;
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
      }
      if (!stopOpts.keepDir && !opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
