// With no Redis URL, redstalk runs its own redis-server child: loopback
// only, a free port, append-only persistence in the data folder. It is
// stopped (and flushes its AOF) when redstalk exits. The child runs in its
// own process group so a Ctrl-C meant for redstalk does not stop Redis
// before redstalk has handed its reservations back; if redstalk itself is
// killed, the next start finds the orphan through the pid file and reuses it
// rather than starting a second server on the same files.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { accepts, freePort, loopback, waitUntilAccepting } from './ports.js';

export interface EmbeddedRedis { url: string; port: number; pid: number; stop(): Promise<void> }

const PID_FILE = 'redstalk-redis.json';

export function findOnPath(binary: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch { /* not here */ }
  }
  return null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface EmbeddedRedisOptions {
  dataDir: string;
  fsync: 'always' | 'everysec' | 'no';
  /** Run redis-server as this uid/gid (redstalk -u). */
  uid?: number;
  gid?: number;
  onLog: (line: string) => void;
}

export async function startEmbeddedRedis({ dataDir, fsync, uid, gid, onLog }: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const binary = findOnPath('redis-server');
  if (!binary) {
    throw new Error('redis-server was not found on PATH. Install Redis >= 7 (Debian: apt-get install redis-server) or pass --redis redis://host:port');
  }
  const dir = path.resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  if (uid !== undefined && gid !== undefined) chownSync(dir, uid, gid);
  const pidFile = path.join(dir, PID_FILE);
  const orphan = readOrphan(pidFile);
  if (orphan && isAlive(orphan.pid) && (await accepts(loopback(orphan.port)))) {
    onLog(`reusing redis-server pid ${orphan.pid} left running on port ${orphan.port}`);
    return handle(orphan.port, orphan.pid, pidFile, null);
  }
  const port = await freePort();
  const child = spawn(binary, [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--appendonly', 'yes', '--appendfsync', fsync, '--save', '',
    '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
  ], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, uid, gid });
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => { for (const l of d.split('\n')) if (l.trim()) onLog(l); });
  }
  await waitUntilAccepting(loopback(port), `redis-server port ${port}`, 10_000, () => {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
  });
  writeFileSync(pidFile, JSON.stringify({ pid: child.pid, port }));
  return handle(port, child.pid!, pidFile, child);
}

function readOrphan(pidFile: string): { pid: number; port: number } | null {
  try {
    const v = JSON.parse(readFileSync(pidFile, 'utf8')) as { pid?: unknown; port?: unknown };
    return typeof v.pid === 'number' && typeof v.port === 'number' ? { pid: v.pid, port: v.port } : null;
  } catch {
    return null;
  }
}

function handle(port: number, pid: number, pidFile: string, child: ChildProcess | null): EmbeddedRedis {
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid,
    async stop() {
      // redis-server rewrites/fsyncs its AOF on SIGTERM before exiting.
      if (child) {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
      } else if (isAlive(pid)) {
        process.kill(pid, 'SIGTERM');
        while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
      }
      rmSync(pidFile, { force: true });
    },
  };
}
