// Blocked reserves. Waiting connections sit in one FIFO; nothing polls Redis
// while idle: a script that makes jobs ready PUBLISHes "<count> <tube>" and
// every sidecar lets up to <count> of its waiters on that tube try a reserve.
// A reserve that finds nothing may name when a delay or pause ends; the
// waiter retries then. Timeouts and DEADLINE_SOON are local timers. Reserve
// attempts go into the cross-connection batch in FIFO order, so the waiter
// that came first gets the most urgent job.
import { REPLY } from '../protocol/replies.js';
import type { BatchOp, BatchResult, ReservedJob } from '../store/batcher.js';
import type { Connection } from './connection.js';
import type { Sidecar } from './sidecar.js';

type Outcome = 'timeout' | 'deadline';

export interface Waiter {
  conn: Connection;
  tubes: readonly string[];
  /** A reserve script call is in flight for this waiter. */
  attempting: boolean;
  /** Something became ready while attempting: try once more. */
  again: boolean;
  /** Ends the wait once the attempt in flight (if any) found nothing. */
  outcome: Outcome | null;
  done: boolean;
  timers: NodeJS.Timeout[];
  resolve: () => void;
}

/** Safety margin before a reservation's deadline (beanstalkd SAFETY_MARGIN). */
const SAFETY_MARGIN_MS = 1000;

const OUTCOME_REPLY: Record<Outcome, Buffer> = { timeout: REPLY.TIMED_OUT, deadline: REPLY.DEADLINE_SOON };

export class Waiters {
  /** Waiters by watched tube; a Set iterates in insertion order, so each is first come, first served. */
  private readonly byTube = new Map<string, Set<Waiter>>();
  private readonly all = new Set<Waiter>();

  constructor(private readonly sidecar: Sidecar) {}

  /** reserve / reserve-with-timeout (timeout in seconds, null = forever). */
  wait(conn: Connection, timeoutSec: number | null): Promise<void> {
    return new Promise<void>((resolve) => {
      const w: Waiter = { conn, tubes: [...conn.watched], attempting: false, again: false, outcome: null, done: false, timers: [], resolve };
      const now = Date.now();
      const soonest = conn.soonestDeadline(now);
      if (soonest - SAFETY_MARGIN_MS <= now) w.outcome = 'deadline';
      else if (soonest !== Infinity) this.at(w, soonest - SAFETY_MARGIN_MS - now, 'deadline');
      if (timeoutSec === 0) w.outcome = w.outcome ?? 'timeout';
      else if (timeoutSec !== null) this.at(w, timeoutSec * 1000, 'timeout');
      conn.waiter = w;
      this.all.add(w);
      for (const t of w.tubes) {
        let set = this.byTube.get(t);
        if (!set) { set = new Set(); this.byTube.set(t, set); }
        set.add(w);
      }
      this.sidecar.counters.waitingDelta(w.tubes, 1);
      this.sidecar.statsChanged();
      this.attempt(w);
    });
  }

  /** Jobs became ready in a tube (from any sidecar). */
  onReady(tube: string, count: number): void {
    const waiting = this.byTube.get(tube);
    if (!waiting) return;
    for (const w of waiting) {
      if (count <= 0) return;
      if (!w.attempting) { this.attempt(w); count--; }
      else if (!w.again) { w.again = true; count--; }
    }
  }

  /** After a lost subscription: every waiter looks again. */
  wakeAll(): void {
    for (const w of this.all) this.poke(w);
  }

  /** The client half-closed its socket: TIMED_OUT, as beanstalkd. */
  timeOut(w: Waiter): void { this.settle(w, 'timeout'); }

  /** The connection is gone. */
  cancel(w: Waiter): void {
    if (w.attempting) { w.done = true; this.remove(w); return; }
    this.finish(w);
  }

  private poke(w: Waiter): void {
    if (w.attempting) w.again = true;
    else this.attempt(w);
  }

  private at(w: Waiter, ms: number, outcome: Outcome | null): void {
    w.timers.push(setTimeout(() => (outcome ? this.settle(w, outcome) : this.poke(w)), Math.max(0, ms)));
  }

  private settle(w: Waiter, outcome: Outcome): void {
    if (w.done) return;
    w.outcome = w.outcome ?? outcome;
    if (!w.attempting) this.reply(w, OUTCOME_REPLY[outcome]);
  }

  private attempt(w: Waiter): void {
    w.attempting = true;
    w.again = false;
    const { conn } = w;
    this.sidecar.batcher.add<Waiter>({
      code: 'v', owner: conn.owner, id: '', tube: '', tubes: w.tubes, pri: 0, delay: 0, ttr: 0, body: null, ctx: w, done: this.attempted,
    });
  }

  private readonly attempted = (op: BatchOp<Waiter>, r: BatchResult, err: Error | null): void => {
    const w = op.ctx;
    w.attempting = false;
    if (err) {
      if (w.done) return;
      w.conn.commandFailed(err);
      this.finish(w);
      return;
    }
    if (typeof r === 'object') {
      if (w.done) this.sidecar.giveBack(w.conn.owner, r);
      else this.deliver(w, r);
      this.onReady(r.tube, 1); // there may be more: let the next waiter look
      return;
    }
    if (w.done) return;
    if (w.again) { this.attempt(w); return; }
    if (w.outcome) { this.reply(w, OUTCOME_REPLY[w.outcome]); return; }
    if ((r as number) >= 0) this.at(w, (r as number) + 2, null);
  };

  private deliver(w: Waiter, job: ReservedJob): void {
    w.conn.reserve(job);
    this.finish(w);
  }

  private reply(w: Waiter, b: Buffer): void {
    w.conn.send(b);
    this.finish(w);
  }

  private remove(w: Waiter): void {
    if (!this.all.delete(w)) return;
    for (const t of w.tubes) {
      const set = this.byTube.get(t)!;
      set.delete(w);
      if (set.size === 0) this.byTube.delete(t);
    }
    for (const t of w.timers) clearTimeout(t);
    w.conn.waiter = null;
    this.sidecar.counters.waitingDelta(w.tubes, -1);
    this.sidecar.statsChanged();
  }

  private finish(w: Waiter): void {
    w.done = true;
    this.remove(w);
    w.resolve();
  }
}
