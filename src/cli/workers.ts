// `redstalk serve --workers N` (N > 1): this process becomes a primary that
// forks N worker processes with node:cluster. Each worker runs the whole
// command line again (src/cli/serve.ts) and is a full sidecar: its own Redis
// links and its own node id in the registry, so N workers on one machine are
// N sidecars of one server, exactly as N sidecars on N machines are.
// node:cluster shares every port the workers listen on (the protocol's and
// --http's): the primary holds the listening socket and hands each accepted
// connection to one worker in turn.
//
// The primary serves no client. It starts the embedded redis-server (once, for
// all workers) when no --redis URL is given, forwards SIGTERM, SIGINT and
// SIGUSR1 to the workers, and replaces a worker that dies, with a growing pause
// when one dies again and again right after its start.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { visibleConfig } from '../config/check.js';
import type { Config } from '../config/settings.js';
import type { EmbeddedRedis } from './embedded-redis.js';
import { removeStaleSocket, unixSocketPath } from '../server/listener.js';
import { fail, lookupUser } from './process.js';

// What the primary tells a worker, in its environment. Not REDSTALK_*: those
// are settings, and an unknown one is warned about.
/** The worker's number, 1 to N: a replacement takes the number of the worker it replaces. */
const WORKER_ENV = '_REDSTALK_WORKER';
/** The embedded redis-server's URL, when no --redis URL was given. */
const REDIS_ENV = '_REDSTALK_WORKER_REDIS';

/** A death this soon after a worker was ready (or before it ever was) counts as quick. */
const QUICK_DEATH_MS = 1000;
/** This many quick deaths in a row of one worker: something is wrong that a restart will not fix. */
const GIVE_UP_AFTER = 10;
/** The pause before replacing a worker after its k-th quick death in a row: 200 ms, doubling, at most 5 s. */
const backoffMs = (quickDeaths: number) => (quickDeaths === 0 ? 0 : Math.min(200 * 2 ** (quickDeaths - 1), 5000));
/**
 * On a stop, a worker still running this long after its own deadlines (the
 * grace period, and a few Redis calls that may each time out) is killed.
 */
const STOP_MARGIN_MS = 10_000;

/** Worker -> primary, over the IPC channel. */
type Report = { redstalk: 'ready' } | { redstalk: 'failed'; message: string };

/** What a worker process needs to know of its part. */
export interface WorkerRole {
  /** 1 to N, in every log line as `worker`. */
  readonly n: number;
  /** The embedded redis-server's URL ('' when a --redis URL was given). */
  readonly redisUrl: string;
  /** The sidecar serves. */
  ready(): void;
  /** The sidecar could not start: the primary stops everything and exits 1 with this message. */
  failed(message: string): Promise<void>;
}

/** This process's part when it is one of the primary's workers, else null (it is the primary). */
export function workerRole(): WorkerRole | null {
  const n = Number(process.env[WORKER_ENV]);
  if (!cluster.isWorker || !Number.isInteger(n) || n < 1) return null;
  const report = (message: Report) => new Promise<void>((resolve) => {
    // The primary may be gone already (the channel closed): nothing to tell then.
    try {
      process.send!(message, undefined, undefined, () => resolve());
    } catch {
      resolve();
    }
  });
  return {
    n,
    redisUrl: process.env[REDIS_ENV] ?? '',
    ready: () => void report({ redstalk: 'ready' }),
    failed: (message) => report({ redstalk: 'failed', message }),
  };
}

/** One of the N places for a worker; its process changes when a worker dies and is replaced. */
interface Slot {
  readonly n: number;
  worker: Worker | null;
  readyAt: number | null;
  /** What the current worker said when its start failed. */
  failure: string | null;
  quickDeaths: number;
  restart: NodeJS.Timeout | null;
}

export async function runPrimary(config: Config, warnings: readonly string[], embeddedOnly: readonly string[]): Promise<void> {
  // The listening socket is the primary's (node:cluster binds it when the
  // first worker listens): a socket file left at the path by a process that
  // died is removed here, as Listener.open does without workers.
  const socketPath = unixSocketPath(config.listen);
  if (socketPath) removeStaleSocket(socketPath);
  let as: { uid: number; gid: number } | undefined;
  try {
    as = config.user ? lookupUser(config.user) : undefined;
  } catch (err) {
    fail(`cannot become user ${config.user}: ${(err as Error).message}`);
  }
  const [{ createLogger }, { startEmbeddedRedis }] = await Promise.all([import('../log.js'), import('./embedded-redis.js')]);
  const log: Logger = createLogger(config.logLevel, config.logFormat);
  for (const w of warnings) log.warn(w);
  log.debug({ config: visibleConfig(config) }, 'configuration');

  const slots: Slot[] = Array.from({ length: config.workers }, (_, i) => ({
    n: i + 1, worker: null, readyAt: null, failure: null, quickDeaths: 0, restart: null,
  }));
  /** Until every worker has been ready once, a worker that fails to start fails the whole start. */
  let started = false;
  let draining = false;
  let stopping: { code: number; message: string | null } | null = null;
  /** The embedded redis-server, starting or started (null with --redis). */
  let embedded: Promise<EmbeddedRedis | null> = Promise.resolve(null);
  /** What the workers get in REDIS_ENV: the embedded Redis' URL; with --redis they read it from the command line. */
  let embeddedUrl = '';

  const live = () => slots.filter((s) => s.worker !== null);

  /** Stops every worker (with `signal`, which they take as a graceful stop), then the embedded Redis, then exits. */
  const stop = (code: number, message: string | null, signal: NodeJS.Signals = 'SIGTERM') => {
    if (stopping) return;
    stopping = { code, message };
    if (message) log.fatal(message);
    else log.info({ signal }, 'shutting down');
    for (const slot of slots) {
      if (slot.restart) clearTimeout(slot.restart);
      slot.restart = null;
      slot.worker?.process.kill(signal);
    }
    // A worker stuck in its stop must not keep the primary (and Redis) up forever.
    setTimeout(() => {
      for (const slot of live()) {
        log.warn({ worker: slot.n, pid: slot.worker!.process.pid }, 'worker still running after its grace period: killing it');
        slot.worker!.process.kill('SIGKILL');
      }
    }, config.shutdownGraceMs + 4 * config.redisTimeoutMs + STOP_MARGIN_MS).unref();
    void finishWhenAllExited();
  };

  let finishing = false;
  const finishWhenAllExited = async () => {
    if (!stopping || live().length > 0 || finishing) return;
    finishing = true;
    // A stop during the embedded redis-server's start waits for it, so as not to leave it running.
    try {
      await (await embedded.catch(() => null))?.stop();
    } catch (err) {
      log.warn({ err }, 'could not stop the embedded redis-server');
    }
    if (stopping.message) fail(stopping.message);
    log.info('redstalk stopped');
    process.exit(stopping.code);
  };

  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(0, null, signal));
  process.on('SIGUSR1', () => {
    draining = true;
    // A worker not yet ready may not handle SIGUSR1 yet (it would die of it): it is told once it is ready.
    for (const slot of live()) if (slot.readyAt !== null) slot.worker!.process.kill('SIGUSR1');
  });

  const fork = (slot: Slot) => {
    const worker = cluster.fork({ [WORKER_ENV]: String(slot.n), [REDIS_ENV]: embeddedUrl });
    Object.assign(slot, { worker, readyAt: null, failure: null });
    worker.on('message', (report: Report) => {
      if (report?.redstalk === 'failed') slot.failure = report.message;
      if (report?.redstalk !== 'ready' || slot.worker !== worker) return;
      slot.readyAt = Date.now();
      if (draining) worker.process.kill('SIGUSR1');
      if (!started && slots.every((s) => s.readyAt !== null)) {
        started = true;
        log.info({ workers: slots.length, pids: slots.map((s) => s.worker?.process.pid) }, 'all workers ready');
      }
    });
    worker.on('exit', (code, signal) => {
      // What a worker reports just before it exits (why its start failed) is
      // read from the IPC channel before that closes; the exit may be seen first.
      if (worker.isConnected()) worker.once('disconnect', () => exited(slot, worker, code, signal));
      else exited(slot, worker, code, signal);
    });
  };

  const exited = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    if (slot.worker !== worker) return;
    slot.worker = null;
    if (stopping) return void finishWhenAllExited();
    const how = slot.failure ?? (signal ? `killed by ${signal}` : `exit code ${code}`);
    if (!started && slot.readyAt === null) return stop(1, `worker ${slot.n} could not start: ${how}`);
    // A worker that served for a while ends a series of quick deaths.
    const quick = slot.readyAt === null || Date.now() - slot.readyAt < QUICK_DEATH_MS;
    slot.quickDeaths = quick ? slot.quickDeaths + 1 : 0;
    if (slot.quickDeaths >= GIVE_UP_AFTER) {
      return stop(1, `worker ${slot.n} died ${GIVE_UP_AFTER} times in a row within ${QUICK_DEATH_MS} ms of its start (last: ${how}): giving up`);
    }
    const delay = backoffMs(slot.quickDeaths);
    log.error({ worker: slot.n, pid: worker.process.pid, code, signal, reason: how, restartInMs: delay }, 'worker died: starting another');
    slot.restart = setTimeout(() => {
      slot.restart = null;
      if (!stopping) fork(slot);
    }, delay);
  };

  if (!config.redisUrl) {
    embedded = startEmbeddedRedis({
      dataDir: config.dataDir, fsync: config.fsync, ...as,
      onLog: (line) => log.info({ redis: line }, 'embedded redis'),
    });
    let redis: EmbeddedRedis;
    try {
      redis = (await embedded)!;
    } catch (err) {
      log.fatal({ err }, 'redstalk could not start');
      fail(err instanceof Error ? err.message : String(err));
    }
    embeddedUrl = redis.url;
    log.info({ dataDir: config.dataDir, port: redis.port, fsync: config.fsync }, 'started embedded redis-server');
    // A stop that came meanwhile is finishing (it stops this Redis): no workers then.
    if (stopping) return;
  } else if (embeddedOnly.length > 0) {
    log.warn(`${embeddedOnly.join(', ')} apply to the embedded redis-server only; the Redis at --redis keeps its own persistence settings`);
  }
  for (const slot of slots) fork(slot);
  log.info({ workers: slots.length }, 'started workers');
}
