// One client connection: framing (command lines, bodies, skipping),
// execution in arrival order, replies coalesced into one socket write per
// tick, and bounded buffering (beanstalkd's conn.c). Job commands that join
// the cross-connection batch go without waiting for the ones before them,
// so a pipelining client fills a batch; anything else waits until they are
// answered, so it sees their effects and every reply leaves in command order.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { BodyFraming, Dispatcher } from '../commands/dispatch.js';
import type { Reservation, Session } from '../commands/session.js';
import { LIMITS } from '../protocol/spec.js';
import { ParseError, parseCommand, type ParsedCommand } from '../protocol/parser.js';
import { jobReply, line, REPLY } from '../protocol/replies.js';
import { isOutcomeUnknown, isStoreFull } from '../store/errors.js';
import type { AnyJobOp, ReservedJob } from '../store/ops.js';
import { ByteQueue } from './byte-queue.js';
import { replyLine, type Instruments } from './instruments.js';
import type { LatencyKind } from './latencies.js';

const CR = 13;
const LF = 10;
/** Stop reading from a client that is waiting on us with this much unread input. */
const MAX_BUFFERED_INPUT = 1 << 20;
/** Stop executing commands for a client that does not read its replies. */
const MAX_BUFFERED_OUTPUT = 4 << 20;
/** A tick's replies up to this size are copied into one buffer for their write. */
const COPY_REPLIES_BELOW = 64 << 10;
/** Stop reading from a client whose batched commands Redis has not answered yet (count, body bytes). */
const MAX_IN_FLIGHT = 1024;
const MAX_IN_FLIGHT_BYTES = 4 << 20;

const enum Mode { Command, Discard, Body, Skip }

/** What a connection needs from the sidecar that accepted it. */
export interface ConnectionHost {
  readonly dispatcher: Dispatcher;
  readonly log: Logger;
  /** Whether connections must send `auth <token>` before anything else. */
  readonly authRequired: boolean;
  /** Told of every command's reply and time, when anyone measures. */
  readonly instruments: Instruments | null;
  /** A job this sidecar handed out had waited ms ready; one it handed out ran ms until deleted. */
  jobTimed(kind: LatencyKind, tube: string, ms: number): void;
  submit(op: AnyJobOp): void;
  dueIn(ms: number): void;
  becameProducer(): void;
  becameWorker(): void;
  /** The client shut its writing side: a blocked reserve ends with TIMED_OUT (beanstalkd). */
  halfClosed(c: Connection): void;
  closed(c: Connection): void;
  /** A store call of c's ended after c closed: it holds these jobs, or (null: outcome unknown) maybe some. */
  strayed(c: Connection, jobs: readonly ReservedJob[] | null): void;
}

export class Connection implements Session, BodyFraming {
  readonly owner: string;
  used = 'default';
  readonly watched: string[] = ['default'];
  /** The watch list as a set (watch and ignore look a tube up in it), and its version. */
  private readonly watchSet = new Set<string>(['default']);
  watchVersion = 0;
  readonly reserved = new Map<string, Reservation>();
  isProducer = false;
  isWorker = false;
  authorized: boolean;
  private authFailures = 0;
  closed = false;
  /** A command's outcome was unknown: this connection may hold jobs it was never told of. */
  uncertain = false;
  /** The client shut its writing side: finish what it sent, then close. */
  private eof = false;
  /** The sidecar is stopping: run no more commands. */
  private stopped = false;

  private readonly input = new ByteQueue();
  /** Bytes received so far; and [end offset, Date.now()] of each read not yet run through, oldest first. */
  private receivedBytes = 0;
  private readonly arrivals: number[] = [];
  /** When the command being run arrived (its line's last byte): its time limits count from then. */
  arrivedAt = 0;
  private mode = Mode.Command;
  private need = 0;
  /** The command whose body is being read. */
  private bodyOf: ParsedCommand | null = null;
  private busy = false;
  /** Replies of this tick, written together at its end (flush). */
  private output: Buffer[] = [];
  private outputBytes = 0;
  /** Batched commands of this connection not answered yet, oldest first, and their body bytes. */
  private readonly awaiting: AnyJobOp[] = [];
  private inFlightBytes = 0;
  /**
   * Outcomes that came before those of earlier commands: the store may
   * answer ops out of their order (its calls may finish in any order).
   */
  private readonly early = new Map<AnyJobOp, Buffer | Error>();
  /** What waits for them: a command that does not join the batch, or a reply. */
  private held: ParsedCommand | Buffer | null = null;
  /** The command line being run, and its command's name. */
  private line = '';
  private lineCommand = '';
  /** Commands not answered yet, oldest first, when an observer wants them (replies leave in command order). */
  private readonly unanswered: Array<{ name: string; at: number }> = [];

  constructor(readonly id: number, nodeId: string, readonly socket: net.Socket, private readonly host: ConnectionHost) {
    this.owner = `${nodeId}:${id}`;
    this.authorized = !host.authRequired;
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.receive(d, Date.now()));
    socket.on('end', () => this.onEnd());
    socket.on('close', () => this.destroy());
    socket.on('error', () => this.destroy());
    socket.on('drain', () => this.pump());
  }

  // ---- replies ----

  answer(reply: Buffer | readonly Buffer[]): void {
    if (this.closed) return;
    if (this.output.length === 0) process.nextTick(this.flush);
    if (Buffer.isBuffer(reply)) this.queue(reply);
    else for (const part of reply) this.queue(part);
    if (this.host.instruments) this.observe(reply);
  }

  private queue(part: Buffer): void {
    this.output.push(part);
    this.outputBytes += part.length;
  }

  /**
   * The replies of this tick as ONE socket write: copied together while
   * small (a write per reply, or a corked writev of its parts, costs more
   * than the copy), as they are when large.
   */
  private readonly flush = (): void => {
    const parts = this.output;
    const bytes = this.outputBytes;
    this.output = [];
    this.outputBytes = 0;
    if (this.closed || parts.length === 0) return;
    if (parts.length === 1) this.socket.write(parts[0]!);
    else if (bytes <= COPY_REPLIES_BELOW) this.socket.write(Buffer.concat(parts, bytes));
    else {
      this.socket.cork();
      for (const part of parts) this.socket.write(part);
      this.socket.uncork();
    }
  };

  /** Reply bytes not yet read by the client: queued this tick, and in the socket. */
  private get unread(): number {
    return this.outputBytes + this.socket.writableLength;
  }

  private observe(reply: Buffer | readonly Buffer[]): void {
    const c = this.unanswered.shift();
    if (c) this.host.instruments!.answered(c.name, replyLine(reply), performance.now() - c.at);
  }

  private received(name: string): void {
    if (this.host.instruments) this.unanswered.push({ name, at: performance.now() });
  }

  fail(err: unknown): void {
    if (isOutcomeUnknown(err)) {
      if (this.closed) { this.host.strayed(this, null); return; }
      // Whether the command took effect cannot be known: no reply may claim
      // either. Closing says "unknown", which every client handles (after the
      // replies before it); what this connection may hold is then found and
      // handed back by the sidecar.
      this.host.log.warn({ err, conn: this.id }, 'outcome of a command unknown: closing its connection');
      this.uncertain = true;
      this.quit();
      return;
    }
    this.host.log.error({ err, conn: this.id }, 'command failed');
    this.answer(isStoreFull(err) ? REPLY.OUT_OF_MEMORY : REPLY.INTERNAL_ERROR);
  }

  // ---- input ----

  /** Bytes from the client, which arrived at `at` (earlier than now for what came before the sidecar took the connection). */
  receive(d: Buffer, at: number): void {
    this.receivedBytes += d.length;
    // Only a line's arrival matters, the read that held its LF: one without an LF is not kept
    // (a job sent a byte at a time, even while a start holds the input, costs no memory here).
    if (d.indexOf(LF) !== -1) this.arrivals.push(this.receivedBytes, at);
    this.input.push(d);
    this.pump();
  }

  takeRepeats(max: number): number {
    const bytes = this.line.length + 2;
    let n = 0;
    while (n < max && this.input.length >= bytes) {
      const next = this.input.head(bytes);
      // A line never holds a CR (lineLength ends it at the first), so this is the whole next line.
      if (next[bytes - 2] !== CR || next[bytes - 1] !== LF || next.toString('latin1', 0, bytes - 2) !== this.line) break;
      this.input.skip(bytes);
      this.received(this.lineCommand);
      n++;
    }
    return n;
  }

  /** Runs commands while input is complete and nothing holds the connection. */
  private pump(): void {
    let needInput = false;
    while (!this.busy && this.held === null && !this.closed && !this.stopped && this.unread < MAX_BUFFERED_OUTPUT && !this.throttled()) {
      if (!this.step()) { needInput = true; break; }
    }
    if (this.closed) return;
    // Forget the arrival of reads run through.
    const consumed = this.receivedBytes - this.input.length;
    let k = 0;
    while (k < this.arrivals.length && this.arrivals[k]! <= consumed) k += 2;
    if (k > 0) this.arrivals.splice(0, k);
    // EOF: every complete command has been answered; a partial one is dropped.
    if (this.eof && needInput && this.inFlight === 0) { this.quit(); return; }
    const full = this.input.length >= MAX_BUFFERED_INPUT + (this.mode === Mode.Body ? this.need : 0);
    if (full || this.unread >= MAX_BUFFERED_OUTPUT) this.socket.pause();
    else this.socket.resume();
  }

  /** One framing step; false when more input is needed. */
  private step(): boolean {
    switch (this.mode) {
      case Mode.Command: {
        const len = this.lineLength();
        if (len > 0) {
          const line = this.input.take(len).toString('latin1', 0, len - 2);
          this.execute(line);
          return true;
        }
        if (len === 0) return false;
        // 224 bytes and no line end: drop input up to the next CRLF, then BAD_FORMAT.
        this.input.skip(LIMITS.lineBytes);
        this.mode = Mode.Discard;
        this.received('(too long)');
        return true;
      }
      case Mode.Discard: {
        const len = this.lineLength();
        if (len > 0) {
          this.input.skip(len);
          this.mode = Mode.Command;
          this.answerAfterBatch(REPLY.BAD_FORMAT);
          return true;
        }
        if (len === 0) return false;
        this.input.skip(LIMITS.lineBytes);
        return true;
      }
      case Mode.Skip: {
        this.need -= this.input.skip(this.need);
        if (this.need > 0) return false;
        this.mode = Mode.Command;
        this.answerAfterBatch(REPLY.JOB_TOO_BIG);
        return true;
      }
      case Mode.Body: {
        if (this.input.length < this.need) return false;
        const chunk = this.input.take(this.need);
        const cmd = this.bodyOf!;
        this.bodyOf = null;
        this.mode = Mode.Command;
        this.track(this.host.dispatcher.body(this, cmd, chunk));
        return true;
      }
    }
  }

  /**
   * beanstalkd's scan_line_end over its 224-byte line buffer: the line ends
   * at the FIRST '\r' if a '\n' follows it. Returns the length with CRLF,
   * 0 when more input may complete the line, -1 when the buffer is full
   * without a line end (too long, or a lone '\r' blocks it).
   */
  private lineLength(): number {
    const h = this.input.head(LIMITS.lineBytes);
    const cr = h.indexOf(CR);
    if (cr >= 0 && cr < h.length - 1 && h[cr + 1] === LF) return cr + 2;
    return h.length >= LIMITS.lineBytes ? -1 : 0;
  }

  private execute(line: string): void {
    this.line = line;
    // The read that held the line's last byte.
    const end = this.receivedBytes - this.input.length;
    const a = this.arrivals;
    while (a.length > 2 && a[0]! < end) a.splice(0, 2);
    this.arrivedAt = a[1]!;
    const cmd = parseCommand(line);
    if (cmd === ParseError.BadFormat || cmd === ParseError.UnknownCommand) {
      this.received('(invalid)');
      return this.answerAfterBatch(cmd === ParseError.BadFormat ? REPLY.BAD_FORMAT : REPLY.UNKNOWN_COMMAND);
    }
    this.lineCommand = cmd.spec.name;
    this.received(cmd.spec.name);
    if (this.inFlight > 0 && !this.host.dispatcher.joinsBatch(this, cmd)) { this.held = cmd; return; }
    this.track(this.host.dispatcher.command(this, cmd));
  }

  /** A reply that needs no store: now, or after the batched commands before it. */
  private answerAfterBatch(b: Buffer): void {
    if (this.inFlight > 0) this.held = b;
    else this.answer(b);
  }

  submit(op: AnyJobOp): void {
    this.awaiting.push(op);
    if (op.body) this.inFlightBytes += op.body.length;
    this.host.submit(op);
  }

  /** Batched commands of this connection not answered yet. */
  private get inFlight(): number {
    return this.awaiting.length;
  }

  /**
   * A batched command's outcome. It is answered when every command before it
   * has been, so replies leave in command order whatever order the store answers in;
   * until then it still counts as in flight, which bounds what waits here.
   */
  settled(op: AnyJobOp, outcome: Buffer | Error): void {
    if (this.closed) return;
    if (this.awaiting[0] !== op) {
      this.early.set(op, outcome);
      return;
    }
    const wasThrottled = this.throttled();
    let next: AnyJobOp | undefined = op;
    let out: Buffer | Error | undefined = outcome;
    while (next !== undefined && out !== undefined) {
      this.awaiting.shift();
      if (next.body) this.inFlightBytes -= next.body.length;
      if (Buffer.isBuffer(out)) this.answer(out);
      else this.fail(out);
      next = this.awaiting[0];
      out = next && this.early.get(next);
      if (out !== undefined) this.early.delete(next!);
    }
    if (this.closed) return;
    if (this.inFlight === 0 && this.held !== null) {
      const held = this.held;
      this.held = null;
      if (Buffer.isBuffer(held)) this.answer(held);
      else this.track(this.host.dispatcher.command(this, held));
      this.pump();
    } else if ((wasThrottled && !this.throttled()) || (this.eof && this.inFlight === 0)) {
      // (At EOF, the last answer is what lets the connection close.)
      this.pump();
    }
  }

  /** Enough of this client's commands wait for the store: read no more for now. */
  private throttled(): boolean {
    return this.inFlight >= MAX_IN_FLIGHT || this.inFlightBytes >= MAX_IN_FLIGHT_BYTES;
  }

  readBody(cmd: ParsedCommand, bytes: number): void {
    this.bodyOf = cmd;
    this.need = bytes + 2;
    this.mode = Mode.Body;
  }

  skipBody(bytes: number): void {
    this.need = bytes + 2;
    this.mode = Mode.Skip;
  }

  /** An async command holds the connection until it has answered. */
  private track(p: Promise<void> | void): void {
    if (!p) return;
    this.busy = true;
    p.then(this.done, this.failed);
  }

  private readonly done = (): void => {
    this.busy = false;
    this.pump();
  };

  private readonly failed = (err: unknown): void => {
    this.fail(err);
    this.done();
  };

  private onEnd(): void {
    this.eof = true;
    this.host.halfClosed(this);
    this.pump();
  }

  // ---- session state ----

  setUsed(tube: string): void { this.used = tube; }
  watches(tube: string): boolean { return this.watchSet.has(tube); }
  addWatched(tube: string): void {
    this.watched.push(tube);
    this.watchSet.add(tube);
    this.watchVersion++;
  }
  /** As beanstalkd's watch list (ms.c): the last tube takes the removed one's place. */
  removeWatched(tube: string): void {
    const i = this.watched.indexOf(tube);
    const last = this.watched.pop()!;
    if (i < this.watched.length) this.watched[i] = last;
    this.watchSet.delete(tube);
    this.watchVersion++;
  }

  becomeProducer(): void {
    if (this.isProducer) return;
    this.isProducer = true;
    this.host.becameProducer();
  }

  becomeWorker(): void {
    if (this.isWorker) return;
    this.isWorker = true;
    this.host.becameWorker();
  }

  deliver(job: ReservedJob): void {
    if (this.closed) { this.host.strayed(this, [job]); return; }
    this.hold(job);
    this.answer(jobReply('RESERVED', job.id, job.body));
  }

  deliverMany(jobs: readonly ReservedJob[]): void {
    if (this.closed) { this.host.strayed(this, jobs); return; }
    const reply = [line(`RESERVED-MANY ${jobs.length}`)];
    for (const job of jobs) {
      this.hold(job);
      reply.push(...jobReply('RESERVED', job.id, job.body));
    }
    this.answer(reply);
  }

  private hold(job: ReservedJob): void {
    const now = Date.now();
    this.reserved.set(job.id, { tube: job.tube, deadline: now + job.ttr * 1000, since: now });
    if (job.waitedMs >= 0) this.host.jobTimed('wait', job.tube, job.waitedMs);
    // Make sure TTR expiry is noticed on time even if this sidecar is idle.
    this.host.dueIn(job.ttr * 1000 + 5);
  }

  renew(id: string, ttrSeconds: number): void {
    const r = this.reserved.get(id);
    if (r) r.deadline = Date.now() + ttrSeconds * 1000;
  }

  forget(id: string): void { this.reserved.delete(id); }

  completed(id: string): void {
    const r = this.reserved.get(id);
    if (!r) return;
    this.host.jobTimed('run', r.tube, Date.now() - r.since);
    this.reserved.delete(id);
  }

  dueIn(ms: number): void { this.host.dueIn(ms); }

  soonestDeadline(now: number): number {
    let soonest = Infinity;
    for (const [id, r] of this.reserved) {
      if (r.deadline < now - 5000) { this.reserved.delete(id); continue; }
      if (r.deadline > now && r.deadline < soonest) soonest = r.deadline;
    }
    return soonest;
  }

  // ---- lifetime ----

  /** A graceful stop: read and run no more commands (those already running still answer). */
  stopReading(): void {
    this.stopped = true;
    this.socket.pause();
  }

  /** Nothing of this connection is running or waiting for the store. */
  get idle(): boolean {
    return !this.busy && this.inFlight === 0;
  }

  /** Closes at once, without finishing what is pending. */
  abort(): void {
    this.destroy();
  }

  authorize(): void { this.authorized = true; }

  get halfClosed(): boolean { return this.eof; }

  authFailed(): number { return ++this.authFailures; }

  /** quit, or EOF after the last command: send what is pending, then close. */
  quit(): void {
    if (this.closed) return;
    this.flush();
    this.socket.end();
    this.destroy();
  }

  private destroy(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.destroy();
    this.host.closed(this);
  }
}
