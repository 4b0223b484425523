// The bullmq target: put, drain and mixed played with BullMQ's Queue and
// Worker on a redis-server of their own (the settings redstalk's Redis gets),
// as a peer that keeps jobs in Redis without a sidecar. BullMQ's clients run
// in this process, so its CPU (the `client` column) is BullMQ's own work, to
// be set against redstalk's sidecar plus load generator.
//
// As BullMQ's users run it: each producer is a Queue of its own (its own
// connection) with one Queue.add in flight, as a put client has one put in
// flight (addBulk would be pipelining, which put does not do); the consumers
// are ONE Worker with concurrency N (N = the consumer clients of the other
// targets), which fetches the next job in the call that completes the last;
// a job is removed when completed, as delete does. drain's fill uses addBulk,
// pipelined as the other targets' fills are.
import { Queue, Worker, type Job } from 'bullmq';
import type { CpuMeter } from './cpu.js';
import { clock, Ledger } from './ledger.js';
import { onFreshTarget, type Measurement, type Scenario, type Settings } from './scenarios.js';
import { Histogram } from './stats.js';

const QUEUE = 'bench';
const JOB_OPTIONS = { removeOnComplete: true };
const WARMUP_MS = 1000;
const PROGRESS_MS = 1000;

/** A job's data: its producer and sequence number (for the ledger), when it was put, padding up to --payload. */
interface JobData { p: number; s: number; t: number; pad: string }

export function measureBullmq(scenario: Scenario, round: number, settings: Settings): Promise<Measurement> {
  return onFreshTarget(scenario, 'bullmq', round, 'BullMQ clients', (server, meter) =>
    new Run(server.redisPorts[0]!, meter, scenario, settings).play(round, server.commands));
}

class Run {
  private readonly connection: { host: string; port: number };
  private readonly ledger = new Ledger();
  private readonly errors: Record<string, number> = {};
  private readonly pad: string;
  private readonly label: string;
  private stopping = false;
  private measuring = false;
  private startedAt = Infinity;
  private putsSent = 0;
  private puts = 0;
  private processed = 0;
  private completed = 0;
  /** mixed: producers wait while this many jobs are queued (2 per consumer, as load.ts). */
  private maxWaiting = Infinity;
  private readonly heldBack: Array<() => void> = [];
  private readonly putRtt = new Histogram();
  private readonly endToEnd = new Histogram();

  constructor(port: number, private readonly meter: CpuMeter, private readonly scenario: Scenario, private readonly s: Settings) {
    this.connection = { host: '127.0.0.1', port };
    this.pad = 'x'.repeat(Math.max(0, s.payload - JSON.stringify({ p: 0, s: 0, t: clock(), pad: '' } satisfies JobData).length));
    this.label = `${scenario.name} bullmq`;
  }

  private error(what: unknown): void {
    const key = what instanceof Error ? what.message : String(what);
    this.errors[key] = (this.errors[key] ?? 0) + 1;
  }

  private job(producer: number, seq: number) {
    return { name: 'job', data: { p: producer, s: seq, t: clock(), pad: this.pad } satisfies JobData, opts: JOB_OPTIONS };
  }

  private async queues(n: number): Promise<Queue[]> {
    const queues = Array.from({ length: n }, () => new Queue(QUEUE, { connection: this.connection }));
    await Promise.all(queues.map((q) => q.waitUntilReady()));
    return queues;
  }

  /** drain's backlog: every client's Queue adds `depth` jobs per addBulk, at most --fill jobs or --duration. */
  private async fill(): Promise<{ jobs: number; ms: number }> {
    const queues = await this.queues(this.s.clients);
    const t0 = clock();
    const perClient = Math.ceil(this.s.fill / this.s.clients);
    await Promise.all(queues.map(async (queue, p) => {
      for (let seq = 0; seq < perClient && clock() - t0 < this.s.durationS * 1000;) {
        const batch = Array.from({ length: Math.min(this.s.depth, perClient - seq) }, () => this.job(p, seq++));
        try {
          await queue.addBulk(batch);
          for (const j of batch) this.ledger.inserted(p, j.data.s);
        } catch (err) {
          this.error(err);
        }
      }
    }));
    await Promise.all(queues.map((q) => q.close()));
    return { jobs: this.ledger.check().inserted, ms: clock() - t0 };
  }

  /** One Queue.add at a time until the run stops; in mixed, held back while enough jobs wait. */
  private async produce(queue: Queue, p: number): Promise<void> {
    for (let seq = 0; !this.stopping; seq++) {
      while (this.putsSent - this.processed >= this.maxWaiting && !this.stopping) await new Promise<void>((wake) => this.heldBack.push(wake));
      if (this.stopping) return;
      const { name, data, opts } = this.job(p, seq);
      this.putsSent++;
      try {
        await queue.add(name, data, opts);
        this.ledger.inserted(p, seq);
        this.puts++;
        if (this.measuring) this.putRtt.recordMs(clock() - data.t);
      } catch (err) {
        this.error(err);
      }
    }
  }

  /** One Worker running `concurrency` jobs at a time (none when 0). */
  private async workers(concurrency: number): Promise<Worker[]> {
    if (concurrency === 0) return [];
    const handle = async (job: Job<JobData>) => {
      this.ledger.handedOut(job.data.p, job.data.s);
      this.processed++;
      if (this.measuring && job.data.t >= this.startedAt) this.endToEnd.recordMs(clock() - job.data.t);
      this.heldBack.shift()?.();
    };
    const worker = new Worker<JobData>(QUEUE, handle, { connection: this.connection, concurrency, autorun: false });
    worker.on('completed', () => this.completed++);
    worker.on('failed', (_, err) => this.error(err));
    worker.on('error', (err) => this.error(err));
    await worker.waitUntilReady();
    return [worker];
  }

  async play(round: number, commands: string[]): Promise<Measurement> {
    const { workload } = this.scenario;
    if (workload !== 'put' && workload !== 'drain' && workload !== 'mixed') throw new Error(`bullmq plays put, drain and mixed, not ${workload}`);
    const fill = workload === 'drain' ? await this.fill() : undefined;
    const half = Math.floor(this.s.clients / 2);
    const producers = await this.queues({ put: this.s.clients, drain: 0, mixed: half }[workload]);
    const consumers = { put: 0, drain: this.s.clients, mixed: this.s.clients - half }[workload];
    const workers = await this.workers(consumers);
    if (workload === 'mixed') this.maxWaiting = 2 * consumers;

    const durationMs = this.s.durationS * 1000;
    const mark = () => ({ at: clock(), puts: this.puts, completed: this.completed, cpu: this.meter.sample() });
    const started = mark();
    this.startedAt = started.at;
    let windowStart = { ...started, at: started.at + Math.min(WARMUP_MS, durationMs / 10) };
    let windowEnd: typeof windowStart | null = null;
    let done = () => {};
    const finished = new Promise<void>((resolve) => { done = resolve; });
    const stop = () => {
      windowEnd ??= mark();
      this.measuring = false;
      this.stopping = true;
      for (const wake of this.heldBack.splice(0)) wake();
      done();
    };
    const warmup = setTimeout(() => { this.measuring = true; windowStart = mark(); }, windowStart.at - started.at);
    const timer = setTimeout(stop, durationMs);
    let last = { at: started.at, n: 0 };
    const progress = setInterval(() => {
      const now = clock();
      const n = this.puts + this.completed;
      process.stderr.write(`  ${this.label}  ${((now - started.at) / 1000).toFixed(0).padStart(3)}s  added ${this.puts}  completed ${this.completed}  (${Math.round(((n - last.n) * 1000) / (now - last.at))} ops/s)\n`);
      last = { at: now, n };
    }, PROGRESS_MS);
    if (fill) for (const w of workers) w.on('completed', () => { if (this.completed >= fill.jobs) stop(); });

    const producing = producers.map((q, i) => this.produce(q, i));
    const running = workers.map((w) => w.run());
    await finished;
    await Promise.all(producing);
    await Promise.all(workers.map((w) => w.close())); // finishing the jobs it has
    await Promise.all(running);
    const end = mark();
    for (const t of [warmup, timer]) clearTimeout(t);
    clearInterval(progress);

    const window = windowEnd ?? end;
    if (window.at <= windowStart.at) windowStart = started; // over before the warm-up was
    const admin = new Queue(QUEUE, { connection: this.connection });
    const left = await admin.getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized').catch((err: unknown) => { this.error(err); return NaN; });
    await Promise.all([admin, ...producers].map((q) => q.close()));

    const checked = this.ledger.check();
    const jobs = workload === 'put' ? window.puts - windowStart.puts : window.completed - windowStart.completed;
    const load = {
      windowMs: window.at - windowStart.at,
      elapsedMs: end.at - started.at,
      puts: this.puts,
      reserves: this.processed,
      deletes: this.completed,
      windowPuts: window.puts - windowStart.puts,
      windowDeletes: window.completed - windowStart.completed,
      errors: this.errors,
      putRtt: this.putRtt,
      reserveRtt: new Histogram(), // a Worker fetches its next job as it completes one: no reserve round trip to time
      endToEnd: this.endToEnd,
      endToEndFromSend: this.endToEnd,
      sendLag: new Histogram(),
    };
    return {
      scenario: this.scenario.name,
      target: 'bullmq',
      round,
      commands: [...commands, `BullMQ: ${producers.length} Queues (one add in flight each), ${workers.length ? `one Worker (concurrency ${consumers})` : 'no Worker'}, in the benchmark process`],
      jobs,
      windowMs: load.windowMs,
      latency: { put: this.putRtt, drain: load.reserveRtt, mixed: this.endToEnd }[workload],
      load,
      fill,
      errors: this.errors,
      check: { ...checked, leftInServer: left, lost: checked.inserted - checked.reserved - left },
      cpu: this.meter.use(await windowStart.cpu, await window.cpu, jobs),
    };
  }
}
