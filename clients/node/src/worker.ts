// The worker helper: reserve -> handler -> delete, on a connection of its own.
//
// Jobs come in batches (`reserve-many`) into a local buffer and go to the
// handler one at a time, at most `concurrency` at once. Deletes, touches and
// releases are written without waiting for earlier replies (pipelined).
//
// Commands behind a blocked reserve wait for it, so the worker blocks in
// reserve-many only while it holds no job (nothing to delete or touch); with
// jobs in hand it asks with a timeout of 0 and, if the tubes are empty, asks
// again when a handler finishes or on the next heartbeat tick.
import { backoffMs } from './backoff.js';
import { Client, type ConnectOptions } from './client.js';
import type { Job } from './commands.js';
import { BadFormatError, ConnectionError, DeadlineSoonError, TimedOutError, UnknownCommandError } from './errors.js';

export type Handler = (job: Job) => unknown;

/** The client's options but those of puts (idempotent, retry): a worker puts nothing. */
export interface WorkerOptions extends Omit<ConnectOptions, 'idempotent' | 'retry'> {
  /** Tubes to take jobs from (default ['default']). */
  tubes?: string[];
  /** Jobs reserved at once with reserve-many, 1..1000 (default 16). */
  prefetch?: number;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** A job whose handler failed this many times is buried (default 5). */
  maxAttempts?: number;
  /** Retry delay: baseMs × 2^releases, at most maxMs, with jitter (default 1000, 60000). */
  backoff?: { baseMs?: number; maxMs?: number };
  /** How long one blocking reserve-many waits when the tubes are empty (default 5 s). */
  reserveTimeoutSec?: number;
  /** Handler failures and failed commands (default: printed with console.error). */
  onError?: (err: unknown, job?: Job) => void;
}

type Settings = Required<Omit<WorkerOptions, 'backoff' | keyof ConnectOptions>> & { baseMs: number; maxMs: number };

/** A job in hand: buffered or being handled. */
interface Held {
  job: Job;
  reservedAt: number;
  /** Learned with stats-job once the job has been held for a heartbeat tick. */
  ttrMs?: number;
  deadline?: number;
  priority?: number;
  asking?: boolean;
}

/** How often buffered and running jobs are checked for a touch, and an empty tube asked again. */
const TICK_MS = 250;

/** The release delay, in whole seconds, after `releases` earlier failures: exponential with equal jitter. */
export function backoffSeconds(releases: number, baseMs: number, maxMs: number, random = Math.random): number {
  return Math.ceil(backoffMs(releases, baseMs, maxMs, random) / 1000);
}

export class Worker {
  /** Resolves when the worker has stopped (stop(), or its connection was lost). */
  readonly stopped: Promise<void>;
  private readonly buffer: Held[] = [];
  private readonly held = new Map<number, Held>();
  /** Replies owed for deletes, releases, buries, touches: awaited before stopping. */
  private readonly acks = new Set<Promise<unknown>>();
  /** Handlers running. */
  private readonly runs = new Set<Promise<void>>();
  private reserving: Promise<void> | null = null;
  /** The last reserve-many with timeout 0 found nothing: wait for a handler or a tick before asking again. */
  private dry = false;
  private stopping = false;
  private stopCalled: Promise<void> | null = null;
  private settle: () => void = () => {};
  private readonly ticker: NodeJS.Timeout;

  private constructor(private readonly client: Client, private readonly handler: Handler, private readonly settings: Settings) {
    this.stopped = new Promise((resolve) => { this.settle = resolve; });
    this.ticker = setInterval(() => this.tick(), TICK_MS);
    void client.closed.then(() => this.lost());
  }

  /** Connects, watches the tubes and starts taking jobs. */
  static async start(handler: Handler, options: WorkerOptions = {}): Promise<Worker> {
    const settings: Settings = {
      tubes: options.tubes ?? ['default'],
      prefetch: options.prefetch ?? 16,
      concurrency: options.concurrency ?? 1,
      maxAttempts: options.maxAttempts ?? 5,
      baseMs: options.backoff?.baseMs ?? 1000,
      maxMs: options.backoff?.maxMs ?? 60_000,
      reserveTimeoutSec: options.reserveTimeoutSec ?? 5,
      onError: options.onError ?? ((err, job) => console.error(`redstalk worker${job ? ` (job ${job.id})` : ''}:`, err)),
    };
    const { prefetch, concurrency, tubes } = settings;
    if (!Number.isInteger(prefetch) || prefetch < 1 || prefetch > 1000) throw new RangeError('prefetch must be 1..1000');
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('concurrency must be at least 1');
    if (tubes.length === 0) throw new RangeError('tubes must name at least one tube');
    const client = await Client.connect(options);
    try {
      for (const tube of tubes) await client.watch(tube);
      if (!tubes.includes('default')) await client.ignore('default');
    } catch (err) {
      await client.close();
      throw err;
    }
    const worker = new Worker(client, handler, settings);
    worker.pump();
    return worker;
  }

  /** The connection is gone (a reserve fails before `closed` resolves): say so once, and stop. */
  private lost(): void {
    if (this.stopping) return;
    this.settings.onError(new ConnectionError('the worker\'s connection closed; the worker stops'));
    void this.stop();
  }

  /**
   * Graceful stop: reserves no more, releases the jobs buffered and not started,
   * lets the running handlers finish, waits for the replies owed, then quits.
   */
  stop(): Promise<void> {
    this.stopCalled ??= this.shutdown();
    return this.stopCalled;
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.held.size === 0) {
      // Nothing in hand: the replies owed come before the reserve's, so once they are in, a
      // reserve still pending is blocked. Closing ends it, and the server hands back whatever
      // it reserved for this connection.
      await this.allSettled();
      if (this.reserving) await this.client.close();
    }
    await this.reserving;
    for (const h of this.buffer.splice(0)) this.track(h, this.releaseUnstarted(h));
    await this.allSettled();
    clearInterval(this.ticker);
    await this.client.quit();
    this.settle();
  }

  /** Waits for the running handlers and the replies owed (each removes itself from its set as it settles). */
  private async allSettled(): Promise<void> {
    while (this.runs.size > 0 || this.acks.size > 0) await Promise.allSettled([...this.runs, ...this.acks]);
  }

  /** Starts handlers while there is room, and asks for more jobs when the buffer runs low. */
  private pump(): void {
    if (this.stopping) return;
    while (this.runs.size < this.settings.concurrency && this.buffer.length > 0) {
      const run: Promise<void> = this.run(this.buffer.shift()!).finally(() => {
        this.runs.delete(run);
        this.dry = false;
        this.pump();
      });
      this.runs.add(run);
    }
    // Asking at half empty keeps a batch on its way while the rest is handled (at most 1.5 × prefetch buffered).
    if (this.reserving || this.dry || this.buffer.length > this.settings.prefetch / 2) return;
    const idle = this.held.size === 0;
    this.reserving = this.reserve(this.settings.prefetch, idle ? this.settings.reserveTimeoutSec : 0)
      .finally(() => {
        this.reserving = null;
        this.pump();
      });
  }

  private async reserve(count: number, seconds: number): Promise<void> {
    try {
      const jobs = await this.client.reserveMany(count, seconds);
      const now = Date.now();
      for (const job of jobs) {
        const h: Held = { job, reservedAt: now };
        this.held.set(job.id, h);
        if (this.stopping) this.track(h, this.releaseUnstarted(h));
        else this.buffer.push(h);
      }
    } catch (err) {
      if (err instanceof TimedOutError) this.dry = seconds === 0;
      // A job in hand is within a second of its TTR and nothing is ready: touch everything held,
      // and ask again later (with a TTR of 1 s a job is always within that second).
      else if (err instanceof DeadlineSoonError) {
        for (const h of this.held.values()) this.touch(h, Date.now());
        this.dry = true;
      }
      else if (err instanceof ConnectionError) this.lost();
      else if (err instanceof BadFormatError || err instanceof UnknownCommandError) {
        this.settings.onError(new Error('the server does not take reserve-many (a plain beanstalkd?): the worker stops', { cause: err }));
        void this.stop();
      } else {
        this.settings.onError(err); // e.g. INTERNAL_ERROR while Redis is away: ask again on the next tick
        this.dry = true;
      }
    }
  }

  private async run(h: Held): Promise<void> {
    try {
      await this.handler(h.job);
      this.held.delete(h.job.id);
      this.track(h, this.client.delete(h.job.id));
    } catch (err) {
      this.settings.onError(err, h.job);
      this.track(h, this.retryOrBury(h));
    }
  }

  /** Release with backoff, or bury once the job has failed maxAttempts times. */
  private async retryOrBury(h: Held): Promise<void> {
    const stats = await this.client.statsJob(h.job.id);
    this.held.delete(h.job.id);
    if (stats.releases + 1 >= this.settings.maxAttempts) await this.client.bury(h.job.id, stats.pri);
    else await this.client.release(h.job.id, { priority: stats.pri, delay: backoffSeconds(stats.releases, this.settings.baseMs, this.settings.maxMs) });
  }

  /** Hands back a job that was prefetched and never started, keeping its priority. */
  private async releaseUnstarted(h: Held): Promise<void> {
    const priority = h.priority ?? (await this.client.statsJob(h.job.id)).pri;
    this.held.delete(h.job.id);
    await this.client.release(h.job.id, { priority });
  }

  /** Remembers a reply owed for a job; a failure is reported with the job. */
  private track(h: Held, ack: Promise<unknown>): void {
    const tracked = ack.catch((err: unknown) => {
      if (!(err instanceof ConnectionError && this.stopping)) this.settings.onError(err, h.job);
    }).finally(() => this.acks.delete(tracked));
    this.acks.add(tracked);
  }

  /**
   * Heartbeat: a job held for a tick gets its TTR asked with stats-job (jobs handled
   * quickly never cost one); a job whose TTR is half used is touched. Also asks an
   * empty tube again while handlers run.
   */
  private tick(): void {
    const now = Date.now();
    for (const h of this.held.values()) {
      if (h.ttrMs === undefined) {
        if (!h.asking && now - h.reservedAt >= TICK_MS) this.learnTtr(h, now);
      } else if (h.deadline! - now <= h.ttrMs / 2) {
        this.touch(h, now);
      }
    }
    if (this.dry) {
      this.dry = false;
      this.pump();
    }
  }

  private learnTtr(h: Held, now: number): void {
    h.asking = true;
    this.track(h, this.client.statsJob(h.job.id).then((stats) => {
      h.ttrMs = stats.ttr * 1000;
      // time-left is whole seconds, counted from when the server answered: from `now` it is on the safe side.
      h.deadline = now + stats['time-left'] * 1000;
      h.priority = stats.pri;
    }));
  }

  private touch(h: Held, now: number): void {
    if (h.ttrMs !== undefined) h.deadline = now + h.ttrMs;
    this.track(h, this.client.touch(h.job.id));
  }
}
