// One client connection: framing (command lines, bodies, skipping),
// execution in arrival order, replies coalesced into one socket write per
// tick, and bounded buffering (beanstalkd's conn.c). Job commands (put,
// delete, release, bury, touch) go into the cross-connection batch without
// waiting for the ones before them, so a pipelining client fills a batch;
// anything else waits until they are answered, so it sees their effects and
// every reply leaves in command order.
import type net from 'node:net';
import { LIMITS } from '../protocol/spec.js';
import { ParseError, parseCommand } from '../protocol/parser.js';
import { jobReply, REPLY } from '../protocol/replies.js';
import type { BatchOp, ReservedJob } from '../store/batcher.js';
import { ByteQueue } from './byte-queue.js';
import type { Sidecar } from './sidecar.js';
import { dispatch, finishPut, joinsBatch, type PendingPut } from './commands.js';
import type { ParsedCommand } from '../protocol/parser.js';
import type { Waiter } from './waiters.js';

const CR = 13;
const LF = 10;
/** Stop reading from a client that is waiting on us with this much unread input. */
const MAX_BUFFERED_INPUT = 1 << 20;
/** Stop executing commands for a client that does not read its replies. */
const MAX_BUFFERED_OUTPUT = 4 << 20;
/** Stop reading from a client whose batched commands Redis has not answered yet (count, body bytes). */
const MAX_IN_FLIGHT = 1024;
const MAX_IN_FLIGHT_BYTES = 4 << 20;

const enum Mode { Command, Discard, Body, Skip }

export interface Reservation { tube: string; /** local ms */ deadline: number }

export class Connection {
  readonly owner: string;
  used = 'default';
  readonly watched: string[] = ['default'];
  readonly reserved = new Map<string, Reservation>();
  isProducer = false;
  isWorker = false;
  waiter: Waiter | null = null;
  closed = false;
  /** The client shut its writing side: finish what it sent, then close. */
  private eof = false;

  private readonly input = new ByteQueue();
  private mode = Mode.Command;
  private need = 0;
  private put: PendingPut | null = null;
  private busy = false;
  private corked = false;
  /** Batched commands of this connection not answered yet, and their body bytes. */
  private inFlight = 0;
  private inFlightBytes = 0;
  /** What waits for them: a command that does not join the batch, or a reply. */
  private held: ParsedCommand | Buffer | null = null;

  constructor(readonly id: number, readonly socket: net.Socket, readonly sidecar: Sidecar) {
    this.owner = `${sidecar.nodeId}:${id}`;
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => { this.input.push(d); this.pump(); });
    socket.on('end', () => this.onEnd());
    socket.on('close', () => this.destroy());
    socket.on('error', () => this.destroy());
    socket.on('drain', () => this.pump());
  }

  // ---- replies ----

  send(b: Buffer): void {
    if (this.closed) return;
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    this.socket.write(b);
  }

  sendAll(parts: Buffer[]): void {
    for (const p of parts) this.send(p);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  // ---- input ----

  /** Runs commands while input is complete and nothing holds the connection. */
  pump(): void {
    let needInput = false;
    while (!this.busy && this.held === null && !this.closed && this.socket.writableLength < MAX_BUFFERED_OUTPUT && !this.throttled()) {
      if (!this.step()) { needInput = true; break; }
    }
    if (this.closed) return;
    // EOF: every complete command has been answered; a partial one is dropped.
    if (this.eof && needInput && this.inFlight === 0) { this.close(); return; }
    const full = this.input.length >= MAX_BUFFERED_INPUT + (this.mode === Mode.Body ? this.need : 0);
    if (full || this.socket.writableLength >= MAX_BUFFERED_OUTPUT) this.socket.pause();
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
        return true;
      }
      case Mode.Discard: {
        const len = this.lineLength();
        if (len > 0) {
          this.input.skip(len);
          this.mode = Mode.Command;
          this.answer(REPLY.BAD_FORMAT);
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
        this.answer(REPLY.JOB_TOO_BIG);
        return true;
      }
      case Mode.Body: {
        if (this.input.length < this.need) return false;
        const chunk = this.input.take(this.need);
        const put = this.put!;
        this.put = null;
        this.mode = Mode.Command;
        finishPut(this, put, chunk);
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
    const cmd = parseCommand(line);
    if (cmd === ParseError.BadFormat) return this.answer(REPLY.BAD_FORMAT);
    if (cmd === ParseError.UnknownCommand) return this.answer(REPLY.UNKNOWN_COMMAND);
    if (this.inFlight > 0 && !joinsBatch(this, cmd)) { this.held = cmd; return; }
    this.track(dispatch(this, cmd));
  }

  /** A reply that needs no Redis: now, or after the batched commands before it. */
  private answer(b: Buffer): void {
    if (this.inFlight > 0) this.held = b;
    else this.send(b);
  }

  /** Hands a job command to the cross-connection batch; its completion answers. */
  submit(op: BatchOp<Connection>): void {
    this.inFlight++;
    if (op.body) this.inFlightBytes += op.body.length;
    this.sidecar.batcher.add(op);
  }

  /** A batched command was answered; once all are, what waited runs. */
  settled(op: BatchOp<Connection>): void {
    const wasThrottled = this.throttled();
    this.inFlight--;
    if (op.body) this.inFlightBytes -= op.body.length;
    if (this.inFlight === 0 && this.held !== null) {
      const held = this.held;
      this.held = null;
      if (Buffer.isBuffer(held)) this.send(held);
      else this.track(dispatch(this, held));
      this.pump();
    } else if (wasThrottled && !this.throttled()) {
      this.pump();
    }
  }

  /** Enough of this client's commands wait for Redis: read no more for now. */
  private throttled(): boolean {
    return this.inFlight >= MAX_IN_FLIGHT || this.inFlightBytes >= MAX_IN_FLIGHT_BYTES;
  }

  /** Puts the connection into body mode after a valid put line. */
  expectBody(put: PendingPut): void {
    this.put = put;
    this.need = put.bytes + 2;
    this.mode = Mode.Body;
  }

  /** Skips a body that is too big, then answers JOB_TOO_BIG. */
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
    this.commandFailed(err);
    this.done();
  };

  /** A command's Redis call failed: the protocol's error reply, and a log line. */
  commandFailed(err: unknown): void {
    this.sidecar.log.error({ err, conn: this.id }, 'command failed');
    this.send(isOutOfMemory(err) ? REPLY.OUT_OF_MEMORY : REPLY.INTERNAL_ERROR);
  }

  private onEnd(): void {
    this.eof = true;
    // A half-closed client ends a blocked reserve with TIMED_OUT (beanstalkd).
    if (this.waiter) this.sidecar.waiters.timeOut(this.waiter);
    this.pump();
  }

  // ---- lifetime ----

  /** quit, or EOF after the last command: send what is pending, then close. */
  close(): void {
    if (this.closed) return;
    this.socket.end();
    this.destroy();
  }

  private destroy(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.destroy();
    this.sidecar.connectionClosed(this);
  }

  /** Hands a reserved job to the client and remembers it (deadline on the local clock). */
  reserve(job: ReservedJob): void {
    this.reserved.set(job.id, { tube: job.tube, deadline: Date.now() + job.ttr * 1000 });
    // Make sure TTR expiry is noticed on time even if this sidecar is idle.
    this.sidecar.armPromote(job.ttr * 1000 + 5);
    this.sendAll(jobReply('RESERVED', job.id, job.body));
  }

  /** Soonest local deadline of this connection's reservations, dropping long-expired ones. */
  soonestDeadline(now: number): number {
    let soonest = Infinity;
    for (const [id, r] of this.reserved) {
      if (r.deadline < now - 5000) { this.reserved.delete(id); continue; }
      if (r.deadline > now && r.deadline < soonest) soonest = r.deadline;
    }
    return soonest;
  }
}

export function isOutOfMemory(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM');
}
