// The load generator: producers and consumers on raw sockets, request/response
// (depth 1) or pipelined (up to `depth` commands outstanding per connection),
// closed loop (send when a reply frees a slot) or, for producers, open loop at
// a fixed total rate. One phase runs until its duration is up or every client
// has finished its own work (a producer its count, a draining consumer an
// empty queue), and always waits for the replies it is owed.
import net from 'node:net';
import type { CpuMeter, CpuSample } from './cpu.js';
import { clock, intendedAt, sentAt, writeJobId, type Ledger } from './ledger.js';
import { Reply, ReplyParser, type ReplyHandler } from './replies.js';
import { Histogram } from './stats.js';

export interface ProducerSpec {
  port: number; /** unique across the run: it is written into each body */ index: number; pri: number; /** stop after this many puts */ limit: number;
  /** `use` it (else default) */ tube?: string; /** put-with a key of its own for every job, instead of put */ keyed?: boolean;
}
export interface ConsumerSpec { port: number; /** reserve-with-timeout 0 and stop at the first TIMED_OUT, else block in reserve */ untilEmpty: boolean; /** watch it alone (else default) */ tube?: string }

export interface PhaseOptions {
  label: string;
  producers: ProducerSpec[];
  consumers: ConsumerSpec[];
  /** Commands outstanding per connection: 1 = request/response. Blocking consumers always use 1. */
  depth: number;
  payload: number;
  durationMs: number;
  /** Left out of throughput and latency: connections warming up, JIT. */
  warmupMs: number;
  /** Open loop: total puts/s across the producers, on a fixed schedule. */
  rate?: number;
  /**
   * Closed loop: producers hold back while this many of their jobs wait to be
   * reserved, so a mixed run settles at what the consumers sustain instead of
   * growing a queue whose age would be all the end-to-end latency shows.
   */
  maxWaiting?: number;
  ledger: Ledger;
  /** Sampled at the start and the end of the measurement window. */
  meter?: CpuMeter;
  /**
   * Consumers that are not the phase's own sockets (redstalk-client Workers,
   * node-workers.ts): started once its clients are connected, stopped once
   * they are done. Each job a handler gets goes to `took`, and counts as a
   * reserve and a delete (the Worker deletes what it handled).
   */
  outsideConsumers?: (took: (body: Buffer) => void, error: (what: string) => void) => Promise<{ stop(): Promise<void> }>;
  /** The outside consumers are done once they have handled this many jobs (a drain: all it queued); else when the duration ends. */
  outsideLimit?: number;
}

export interface PhaseResult {
  /** Measurement window (after warm-up, until the duration or the work ended). */
  windowMs: number;
  /** Whole phase, warm-up included. */
  elapsedMs: number;
  puts: number;
  reserves: number;
  deletes: number;
  /** Counts within the window. */
  windowPuts: number;
  windowDeletes: number;
  errors: Record<string, number>;
  putRtt: Histogram;
  reserveRtt: Histogram;
  /** Intended put time -> RESERVED received. */
  endToEnd: Histogram;
  /** Actual put time -> RESERVED received (differs from endToEnd in the open loop only). */
  endToEndFromSend: Histogram;
  /** Open loop: how late the generator sent each put after its intended time. */
  sendLag: Histogram;
  /** The meter's samples at the window's start and end. */
  cpuWindow?: { from: CpuSample; to: CpuSample };
}

const TTR = 3600; // long enough that no reservation expires during a run: a second reserve would be a bug
const PROGRESS_MS = 1000;
/** Replies owed after the duration (a blocked reserve ends within 1 s) must arrive within this. */
const GRACE_MS = 30_000;

const RESERVE_BLOCKING = Buffer.from('reserve-with-timeout 1\r\n');
const RESERVE_NOW = Buffer.from('reserve-with-timeout 0\r\n');
const DELETE = Buffer.from('delete ');
const CRLF = Buffer.from('\r\n');

/** What all clients of a phase share: counters, histograms, the stop flag. */
class Phase {
  stopping = false;
  measuring = false;
  /** Jobs stamped earlier were queued before this phase: their age is not this phase's latency. */
  startedAt = Infinity;
  /** Jobs stamped earlier were put before the measured window: their end-to-end latency is the warm-up's. */
  windowFrom = Infinity;
  puts = 0;
  putsSent = 0;
  reserves = 0;
  /** Reserves of jobs put in this phase (not a backlog queued before). */
  freshReserves = 0;
  deletes = 0;
  readonly errors: Record<string, number> = {};
  readonly putRtt = new Histogram();
  readonly reserveRtt = new Histogram();
  readonly endToEnd = new Histogram();
  readonly endToEndFromSend = new Histogram();
  readonly sendLag = new Histogram();
  private readonly heldBack: Producer[] = [];
  private running = 0;
  private allDone: () => void = () => {};
  readonly finished = new Promise<void>((resolve) => { this.allDone = resolve; });

  constructor(readonly opts: PhaseOptions) {}

  get ledger(): Ledger { return this.opts.ledger; }
  error(what: string): void { this.errors[what] = (this.errors[what] ?? 0) + 1; }
  clientStarted(): void { this.running++; }
  clientDone(): void { if (--this.running === 0) this.allDone(); }

  /** Whether a producer must wait for a reserve before its next put (it is then woken by one). */
  holdsBack(producer: Producer): boolean {
    if (this.putsSent - this.freshReserves < (this.opts.maxWaiting ?? Infinity)) return false;
    if (!this.heldBack.includes(producer)) this.heldBack.push(producer);
    return true;
  }

  /** A consumer got a job (its body at data[bodyStart..], `bytes` long) at `now`: checked against the ledger, timed end to end. */
  took(data: Buffer, bodyStart: number, bytes: number, now: number): void {
    this.reserves++;
    const known = this.ledger.reserved(data, bodyStart, bytes, this.opts.payload);
    if (!known) this.error('reserved a body the generator did not write');
    const intended = known ? intendedAt(data, bodyStart) : -Infinity;
    if (this.measuring && intended >= this.windowFrom) {
      this.endToEnd.recordMs(now - intended);
      this.endToEndFromSend.recordMs(now - sentAt(data, bodyStart));
    }
    // A job of a backlog queued before the phase frees no held-back producer.
    if (intended >= this.startedAt) {
      this.freshReserves++;
      this.heldBack.shift()?.fill();
    }
  }
}

abstract class Client implements ReplyHandler {
  protected readonly socket: net.Socket;
  private parser = new ReplyParser(this);
  /** Send times of the outstanding commands, a ring in send order (replies come in order). */
  private readonly sendTimes: Float64Array;
  private head = 0;
  private tail = 0;
  protected outstanding = 0;
  private done = false;

  /** `setup`: commands answered before the client starts (choosing its tube). */
  constructor(protected readonly phase: Phase, port: number, depth: number, private readonly setup: string[]) {
    this.sendTimes = new Float64Array(2 * depth + 2); // a consumer may owe a delete per reserve
    phase.clientStarted();
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => {
      this.socket.cork(); // the writes answering one chunk leave in one syscall
      this.parser.push(chunk);
      this.socket.uncork();
    });
    this.socket.on('error', (err) => this.lost(`socket: ${err.message}`));
    this.socket.on('close', () => this.lost('connection closed by server'));
  }

  /** Connected, and the setup commands answered USING / WATCHING. */
  connected(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('close', () => reject(new Error('could not connect')));
      this.socket.once('connect', () => {
        if (!this.setup.length) return resolve();
        let owed = this.setup.length;
        const main = this.parser;
        this.parser = new ReplyParser({
          onLine: (kind, data, start, end) => {
            if (kind !== Reply.Tube) this.unexpected(data, start, end);
            if (--owed > 0) return;
            this.parser = main;
            resolve();
          },
          onReserved: (data, idStart, idEnd) => this.unexpected(data, idStart - 9, idEnd),
        });
        this.socket.write(this.setup.join(''));
      });
    });
  }

  abstract start(): void;
  /** True when the client has nothing more to send of its own accord. */
  protected abstract idle(): boolean;
  abstract onLine(kind: Reply, data: Buffer, start: number, end: number): void;
  abstract onReserved(data: Buffer, idStart: number, idEnd: number, bodyStart: number, bytes: number): void;

  protected send(command: Buffer | Uint8Array): void {
    this.sendTimes[this.tail] = clock();
    this.tail = (this.tail + 1) % this.sendTimes.length;
    this.outstanding++;
    this.socket.write(command);
  }

  /** Pops the oldest outstanding command; returns how long ago it was sent (ms). */
  protected answered(now: number): number {
    const sent = this.sendTimes[this.head]!;
    this.head = (this.head + 1) % this.sendTimes.length;
    this.outstanding--;
    return now - sent;
  }

  protected unexpected(data: Buffer, start: number, end: number): void {
    this.phase.error(data.toString('latin1', start, end));
  }

  finishIfIdle(): void {
    if (this.done || this.outstanding > 0 || !this.idle()) return;
    this.done = true;
    this.socket.end();
    this.phase.clientDone();
  }

  /** Ends the phase's wait for this client when the server goes away or the grace period is over. */
  lost(why: string): void {
    if (this.done) return;
    this.done = true;
    this.phase.error(why);
    this.socket.destroy();
    this.phase.clientDone();
  }
}

/** A keyed put's key: the producer's index and the put's sequence, base 36, always this long. */
const KEY_LENGTH = 12;
const keyOf = (index: number, seq: number) => `${index.toString(36).padStart(4, '0')}${seq.toString(36).padStart(KEY_LENGTH - 4, '0')}`;

class Producer extends Client {
  private readonly template: Buffer;
  private readonly idAt: number;
  /** Where a keyed put's key goes in the template; -1: plain puts. */
  private readonly keyAt: number;
  private seq = 0;
  private replies = 0;

  constructor(phase: Phase, private readonly spec: ProducerSpec, private readonly depth: number) {
    super(phase, spec.port, depth, spec.tube ? [`use ${spec.tube}\r\n`] : []);
    const { payload } = phase.opts;
    const header = Buffer.from(spec.keyed ? `put-with ${'0'.repeat(KEY_LENGTH)} 0 delete ${spec.pri} 0 ${TTR} ${payload}\r\n` : `put ${spec.pri} 0 ${TTR} ${payload}\r\n`);
    this.keyAt = spec.keyed ? 'put-with '.length : -1;
    this.template = Buffer.alloc(header.length + payload + 2, 'x');
    header.copy(this.template);
    CRLF.copy(this.template, this.template.length - 2);
    this.idAt = header.length;
  }

  private get openLoop(): boolean { return this.phase.opts.rate !== undefined; }

  start(): void {
    if (!this.openLoop) this.fill();
  }

  protected idle(): boolean { return this.phase.stopping || this.seq >= this.spec.limit; }

  fill(): void {
    while (this.outstanding < this.depth && !this.idle() && !this.phase.holdsBack(this)) {
      const now = clock();
      this.put(now, now);
    }
  }

  /** One put whose body says it was meant to leave at `intended`. */
  put(intended: number, now: number): void {
    if (this.outstanding >= this.depth) return this.phase.error('open loop: too many puts unanswered, one skipped');
    const command = Buffer.allocUnsafe(this.template.length);
    this.template.copy(command);
    if (this.keyAt >= 0) command.write(keyOf(this.spec.index, this.seq), this.keyAt, 'latin1');
    writeJobId(command, this.idAt, this.spec.index, this.seq++, intended, now);
    this.phase.putsSent++;
    this.send(command);
  }

  onLine(kind: Reply, data: Buffer, start: number, end: number): void {
    const rtt = this.answered(clock());
    const seq = this.replies++;
    if (kind === Reply.Inserted) {
      this.phase.ledger.inserted(this.spec.index, seq);
      this.phase.puts++;
      if (this.phase.measuring) this.phase.putRtt.recordMs(rtt);
    } else {
      this.unexpected(data, start, end);
    }
    if (!this.openLoop) this.fill();
    this.finishIfIdle();
  }

  onReserved(data: Buffer, idStart: number, idEnd: number): void {
    this.answered(clock());
    this.replies++;
    this.unexpected(data, idStart - 9, idEnd);
  }
}

class Consumer extends Client {
  private drained = false;
  private readonly reserve: Buffer;

  constructor(phase: Phase, private readonly spec: ConsumerSpec, private readonly depth: number) {
    super(phase, spec.port, depth, spec.tube ? [`watch ${spec.tube}\r\n`, 'ignore default\r\n'] : []);
    this.reserve = spec.untilEmpty ? RESERVE_NOW : RESERVE_BLOCKING;
  }

  start(): void {
    for (let i = 0; i < this.depth; i++) this.send(this.reserve);
  }

  protected idle(): boolean { return this.phase.stopping || this.drained; }

  onReserved(data: Buffer, idStart: number, idEnd: number, bodyStart: number, bytes: number): void {
    const now = clock();
    const rtt = this.answered(now);
    if (this.phase.measuring) this.phase.reserveRtt.recordMs(rtt);
    this.phase.took(data, bodyStart, bytes, now);
    // Whatever happens, a reserved job is deleted: the check counts on it.
    const command = Buffer.allocUnsafe(DELETE.length + idEnd - idStart + 2);
    DELETE.copy(command);
    data.copy(command, DELETE.length, idStart, idEnd);
    CRLF.copy(command, command.length - 2);
    this.send(command);
  }

  onLine(kind: Reply, data: Buffer, start: number, end: number): void {
    this.answered(clock());
    if (kind === Reply.Deleted) this.phase.deletes++;
    else if (kind === Reply.TimedOut) this.drained = this.spec.untilEmpty;
    else this.unexpected(data, start, end);
    if (!this.idle()) this.send(this.reserve);
    this.finishIfIdle();
  }
}

/** Sends the producers' puts at `rate` per second in total, round robin, each stamped with its intended time. */
function schedule(phase: Phase, producers: Producer[], rate: number, t0: number): void {
  const interval = 1000 / rate;
  let k = 0;
  const tick = (): void => {
    if (phase.stopping) return;
    const now = clock();
    for (let due = t0 + k * interval; due <= now; due = t0 + ++k * interval) {
      producers[k % producers.length]!.put(due, now);
      if (phase.measuring) phase.sendLag.recordMs(now - due);
    }
    setTimeout(tick, t0 + k * interval - clock());
  };
  tick();
}

function progressLine(phase: Phase, label: string, t0: number, last: { at: number; done: number }): string {
  const now = clock();
  const done = phase.puts + phase.deletes;
  const perSec = ((done - last.done) * 1000) / Math.max(1, now - last.at);
  last.at = now;
  last.done = done;
  const errors = Object.values(phase.errors).reduce((a, b) => a + b, 0);
  return `  ${label}  ${((now - t0) / 1000).toFixed(0).padStart(3)}s  puts ${phase.puts}  reserves ${phase.reserves}  deletes ${phase.deletes}  (${Math.round(perSec)} ops/s)${errors ? `  errors ${errors}` : ''}\n`;
}

export async function runPhase(opts: PhaseOptions): Promise<PhaseResult> {
  const phase = new Phase(opts);
  // Open loop: room for 10 s of one producer's puts unanswered, far beyond any healthy server.
  const producerDepth = opts.rate === undefined ? opts.depth : Math.ceil((10 * opts.rate) / opts.producers.length);
  const producers = opts.producers.map((p) => new Producer(phase, p, producerDepth));
  const consumers = opts.consumers.map((c) => new Consumer(phase, c, c.untilEmpty ? opts.depth : 1));
  const clients: Client[] = [...producers, ...consumers];
  let outside: { stop(): Promise<void> } | undefined;
  // The outside consumers count as one client of the phase: done at outsideLimit jobs, or when it stops.
  let outsideDone = (): void => {};
  try {
    await Promise.all(clients.map((c) => c.connected()));
    if (opts.outsideConsumers) {
      let handled = 0;
      let done = false;
      phase.clientStarted();
      outsideDone = () => {
        if (done) return;
        done = true;
        phase.clientDone();
      };
      outside = await opts.outsideConsumers((body) => {
        phase.took(body, 0, body.length, clock());
        phase.deletes++;
        if (++handled >= (opts.outsideLimit ?? Infinity)) outsideDone();
      }, (what) => phase.error(what));
      if (opts.outsideLimit === 0) outsideDone();
    }
  } catch (err) {
    for (const c of clients) c.lost('connect failed');
    throw err;
  }

  const mark = () => ({ at: clock(), puts: phase.puts, deletes: phase.deletes, cpu: opts.meter?.sample() });
  const started = mark();
  const t0 = started.at;
  phase.startedAt = t0;
  let windowStart = { ...started, at: t0 + opts.warmupMs };
  let windowEnd: typeof windowStart | null = null;
  const warmup = setTimeout(() => { phase.measuring = true; windowStart = mark(); phase.windowFrom = windowStart.at; }, opts.warmupMs);
  const stop = setTimeout(() => {
    windowEnd = mark();
    phase.measuring = false;
    phase.stopping = true;
    for (const c of clients) c.finishIfIdle(); // those owed no reply (held back, open loop) end now
    outsideDone();
  }, opts.durationMs);
  const giveUp = setTimeout(() => { for (const c of clients) c.lost('no reply within the grace period'); }, opts.durationMs + GRACE_MS);
  const last = { at: t0, done: 0 };
  const progress = setInterval(() => process.stderr.write(progressLine(phase, opts.label, t0, last)), PROGRESS_MS);

  for (const c of clients) c.start();
  if (opts.rate !== undefined) schedule(phase, producers, opts.rate, t0);
  await phase.finished;
  const end = mark();
  await outside?.stop();
  for (const t of [warmup, stop, giveUp]) clearTimeout(t);
  clearInterval(progress);

  const window = windowEnd ?? end; // the work ran out before the duration did
  if (window.at <= windowStart.at) windowStart = started; // over before the warm-up was
  const [from, to] = await Promise.all([windowStart.cpu, window.cpu]);
  return {
    windowMs: window.at - windowStart.at,
    elapsedMs: end.at - t0,
    puts: phase.puts,
    reserves: phase.reserves,
    deletes: phase.deletes,
    windowPuts: window.puts - windowStart.puts,
    windowDeletes: window.deletes - windowStart.deletes,
    errors: phase.errors,
    putRtt: phase.putRtt,
    reserveRtt: phase.reserveRtt,
    endToEnd: phase.endToEnd,
    endToEndFromSend: phase.endToEndFromSend,
    sendLag: phase.sendLag,
    cpuWindow: from && to && { from, to },
  };
}
