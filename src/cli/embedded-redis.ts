// With no Redis URL, redstalk runs its own redis-server child: loopback
// only, a free port, append-only persistence in the data folder. It is
// stopped (and flushes its AOF) when redstalk exits. The child runs in its
// own process group so a Ctrl-C meant for redstalk does not stop Redis
// before redstalk has handed its reservations back; if redstalk itself is
// killed, the next start finds the orphan through the pid file and reuses it
// rather than starting a second server on the same files.
//
// The pid file is also the data folder's lock: it names the redstalk that owns
// the folder (`owner`), written before redis-server is spawned, so a second
// redstalk on the same folder stops with a message instead of running a second
// Redis on the same AOF, whatever moment the first one is at.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdirSync, readFileSync, writeFileSync, rmSync, linkSync } from 'node:fs';
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

/** The data folder is held by another live redstalk. */
export class DataDirInUse extends Error {}

/** What the pid file says: the redstalk that owns the folder, and its redis-server once started. */
interface PidFile { owner: number | null; pid: number | null; port: number | null }

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
  /** Called once redis-server is spawned (or a running one found to reuse), before it is waited for. */
  onSpawned?: () => void;
}

export async function startEmbeddedRedis({ dataDir, fsync, uid, gid, onLog, onSpawned }: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const binary = findOnPath('redis-server');
  if (!binary) {
    throw new Error('redis-server was not found on PATH. Install Redis >= 7 (Debian: apt-get install redis-server) or pass --redis redis://host:port');
  }
  const dir = path.resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  if (uid !== undefined && gid !== undefined) chownSync(dir, uid, gid);
  const pidFile = path.join(dir, PID_FILE);
  const orphan = claim(pidFile, dir);
  if (orphan && isRedisServer(orphan.pid) && (await accepts(loopback(orphan.port)))) {
    onLog(`reusing redis-server pid ${orphan.pid} left running on port ${orphan.port}`);
    writePidFile(pidFile, { owner: process.pid, pid: orphan.pid, port: orphan.port });
    onSpawned?.();
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
  // Known before it is ready: killed now, the next start finds it (and reuses or stops it).
  writePidFile(pidFile, { owner: process.pid, pid: child.pid ?? null, port });
  const embedded = handle(port, child.pid!, pidFile, child);
  onSpawned?.();
  try {
    // Polled often: redis-server is usually ready within a few milliseconds.
    await waitUntilAccepting(loopback(port), `redis-server port ${port}`, 10_000, () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    }, 2);
  } catch (err) {
    await embedded.stop();
    throw err;
  }
  return embedded;
}

function readPidFile(pidFile: string): PidFile | null {
  try {
    const v = JSON.parse(readFileSync(pidFile, 'utf8')) as Record<string, unknown>;
    const num = (x: unknown) => (typeof x === 'number' ? x : null);
    return { owner: num(v.owner), pid: num(v.pid), port: num(v.port) };
  } catch {
    return null;
  }
}

function writePidFile(pidFile: string, v: PidFile): void {
  writeFileSync(pidFile, JSON.stringify(v));
}

/** A live process whose command is redis-server (a pid file may name a pid reused since). */
function isRedisServer(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('redis-server');
  } catch {
    return true; // no /proc: trust the pid
  }
}

/**
 * Makes the data folder this process's (the pid file, created only if absent),
 * or fails if a live redstalk holds it. Returns the redis-server a dead owner left
 * running, if the file names one.
 */
function claim(pidFile: string, dir: string): { pid: number; port: number } | null {
  for (let attempt = 0; attempt < 3; attempt++) {
    const tmp = `${pidFile}.${process.pid}`;
    writePidFile(tmp, { owner: process.pid, pid: null, port: null });
    try {
      linkSync(tmp, pidFile); // fails if the file exists: two starts cannot both claim it
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      rmSync(tmp, { force: true });
    }
    const held = readPidFile(pidFile);
    if (held?.owner != null && held.owner !== process.pid && isAlive(held.owner)) {
      throw new DataDirInUse(`the data folder ${dir} is in use by redstalk pid ${held.owner} (${pidFile}): stop it first, or give this one another -b / --data-dir`);
    }
    // Its owner is gone (killed): take the folder over; a redis-server it left is reused.
    if (held?.pid != null && held.port != null && isRedisServer(held.pid)) {
      writePidFile(pidFile, { owner: process.pid, pid: held.pid, port: held.port });
      return { pid: held.pid, port: held.port };
    }
    rmSync(pidFile, { force: true });
  }
  throw new DataDirInUse(`cannot take the data folder ${dir}: ${pidFile} keeps changing (another redstalk starting?)`);
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
