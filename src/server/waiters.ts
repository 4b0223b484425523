// Blocked reserves. Waiting connections sit in one FIFO; nothing polls Redis
// while idle: a script that makes jobs ready PUBLISHes "<count> <tube>" and
// every sidecar lets up to <count> of its waiters on that tube try a reserve.
// A reserve that finds nothing may name when a delay or pause ends; the
// waiter retries then. Timeouts and DEADLINE_SOON are local timers. Reserve
// attempts go into the cross-connection batch in FIFO order, so the waiter
// that came first gets the most urgent job.
//
// A job put (or released) through this sidecar is handed to the first idle
// waiter on its tube in the same call, as beanstalkd hands a put to a waiting
// reserve: the reserve rides right after the put, and the script wakes the
// other sidecars only for what it left ready. A reserve that emptied its
// tubes says so (drained), and until a wake-up for one of them comes (for a
// second at most), a blocking reserve over them waits without looking: at
// light load a job costs two calls, its put and its delete.
//
// A connection watching many tubes (more than WIDE_WATCH) waits in one list,
// not in each tube's: a wake-up for a tube looks its watch set up. Its
// reserves name its watch list by version (JobOp.watch): the store keeps the
// list, so it travels once, not with every reserve, and goes when the
// connection closes (a drop-watch op). Its waiting is counted per tube when
// stats asks, not per wait.
import type { ReserveShape, Session } from '../commands/session.js';
import { REPLY } from '../protocol/replies.js';
import { isOutcomeUnknown } from '../store/errors.js';
import type { ReadyListener } from '../store/job-store.js';
import { jobOps, type AnyJobOp, type JobOp, type ReservedJob, type ReserveResult } from '../store/ops.js';

type Outcome = 'timeout' | 'deadline';

const enum State {
  /** Waiting for a wake-up or a timer. */
  Idle,
  /** A reserve attempt is in the batch. */
  Attempting,
  /** Something became ready while attempting: try once more. */
  AttemptAgain,
  /** Answered, or its connection is gone. */
  Done,
}

/**
 * Above this many watched tubes, a waiter is wide: found by a lookup in its
 * watch set rather than through each tube, and its watch list is kept in the
 * store (JobOp.watch).
 */
export const WIDE_WATCH = 64;

/** A connection's watch list at one version, as its waits use it (made once per version). */
interface WatchView {
  readonly version: number;
  readonly tubes: readonly string[];
  /** Wide: the tubes as a set; else null. */
  readonly wide: ReadonlySet<string> | null;
  /** Whether the store reserves over all of them at once (JobStore.reservesAtOnce). */
  readonly atOnce: boolean;
}

interface SessionWatch {
  view: WatchView;
  /** It was wide once: the store may keep its watch list (dropped when it closes). */
  kept: boolean;
}

interface Waiter {
  readonly session: Session;
  /** Orders waiters: first come, first served. */
  readonly seq: number;
  readonly view: WatchView;
  readonly tubes: readonly string[];
  /** Waiters.wakeUps when its attempt went into the batch. */
  lookedAt: number;
  /** reserve-many: the most jobs to take at once; null for reserve (a RESERVED each). */
  readonly many: number | null;
  /** reserve: how many sent together (a pipelined run, timeout 0), each answered; 1 else. */
  readonly run: number;
  state: State;
  /** Ends the wait once the attempt in flight (if any) found nothing. */
  outcome: Outcome | null;
  /** Its timer ran out: the attempts now are the last look (with LAST_LOOK_MS of slack, once). */
  lastLook: boolean;
  slackUsed: boolean;
  readonly timers: NodeJS.Timeout[];
  readonly resolve: () => void;
}

/** What the waiters need from the sidecar. */
export interface WaitersHost {
  submit(op: AnyJobOp): void;
  /** Whether the store reserves over all these tubes at once (JobStore.reservesAtOnce). */
  reservesAtOnce(tubes: readonly string[]): boolean;
  /** A connection starts (+1) or stops (-1) waiting on these tubes (`wide`: the same as a set, for a wide waiter). */
  waitingChanged(owner: string, tubes: readonly string[], wide: ReadonlySet<string> | null, delta: 1 | -1): void;
  /** Jobs reserved for a connection that is already gone go back at once. */
  giveBack(owner: string, jobs: readonly ReservedJob[]): void;
  /** A connection that is already gone may hold jobs (an attempt of unknown outcome): all it holds goes back. */
  giveBackAll(owner: string): void;
}

/** The longest delay one Node timer holds (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A job that becomes ready within this many ms of a wait's end (Redis' clock
 * and ours may differ by that much) is waited for rather than missed.
 */
const LAST_LOOK_MS = 20;

/** A reserve attempt the store refused is tried again this much later. */
const RETRY_AFTER_FAILURE_MS = 250;

/** Safety margin before a reservation's deadline (beanstalkd SAFETY_MARGIN). */
const SAFETY_MARGIN_MS = 1000;

/** The most tubes known drained at once (forgetting them only costs a look). */
const MAX_DRAINED = 10_000;
/**
 * How long a drained look is trusted: should a wake-up be lost in a fault
 * (none is, short of one), a new reserve still looks within this long of the
 * last drained look. At light load every hand-off renews the mark.
 */
const DRAINED_TRUST_MS = 1000;

/** A wide waiter's reserves name its watch list by version (JobOp.watch); -1: they name their tubes. */
const watchOf = (w: Waiter): number => (w.view.wide ? w.view.version : -1);

const ignore = (): void => {};

const OUTCOME_REPLY: Record<Outcome, Buffer> = { timeout: REPLY.TIMED_OUT, deadline: REPLY.DEADLINE_SOON };

/** A reservation ends within the safety margin: a reserve that finds no job answers DEADLINE_SOON. */
const deadlineSoon = (soonest: number, now: number): boolean => soonest - SAFETY_MARGIN_MS <= now;

export class Waiters implements ReadyListener {
  /** Waiters by watched tube; a Set iterates in insertion order, so each is first come, first served. */
  private readonly byTube = new Map<string, Set<Waiter>>();
  /** Wide waiters, first come first. */
  private readonly wide = new Set<Waiter>();
  private readonly bySession = new Map<Session, Waiter>();
  /** When each connection's last wait ended (a reserve pipelined behind it starts its time then). */
  private readonly waitEnded = new WeakMap<Session, number>();
  /** Each connection's watch list as last waited with. */
  private readonly watches = new Map<Session, SessionWatch>();
  private seq = 0;
  /**
   * Tubes a reserve found drained, with no wake-up for them since: a blocking
   * reserve over them waits without a look (a wake-up comes for anything
   * that becomes ready after; the last look at its timeout still happens).
   */
  private readonly drained = new Map<string, number>();
  /** Counts wake-ups of any tube: a look that saw one arrive while in flight cannot vouch for its tubes. */
  private wakeUps = 0;

  constructor(private readonly host: WaitersHost) {}

  /** reserve / reserve-with-timeout / reserve-many (timeout in seconds, null = forever); settles once answered. */
  wait(session: Session, timeoutSec: number | null, shape?: ReserveShape): Promise<void> {
    return new Promise<void>((resolve) => {
      const view = this.viewOf(session);
      const many = shape && 'many' in shape ? shape.many : null;
      const run = shape && 'run' in shape ? shape.run : 1;
      const w: Waiter = {
        session, seq: ++this.seq, view, tubes: view.tubes, lookedAt: 0, many, run, state: State.Idle, outcome: null, lastLook: false, slackUsed: false, timers: [], resolve,
      };
      const now = Date.now();
      const soonest = session.soonestDeadline(now);
      if (deadlineSoon(soonest, now)) w.outcome = 'deadline';
      else if (soonest !== Infinity) this.at(w, soonest - SAFETY_MARGIN_MS - now, 'deadline');
      // A client that half-closed cannot wait: one look, then TIMED_OUT (beanstalkd answers each such reserve).
      if (timeoutSec === 0 || session.halfClosed) w.outcome = w.outcome ?? 'timeout';
      // Counted from when the command arrived (it may have waited for the store to start), but not
      // before the connection's previous wait ended: beanstalkd reads the next command only then.
      else if (timeoutSec !== null) {
        const from = Math.max(session.arrivedAt, this.waitEnded.get(session) ?? 0);
        this.at(w, timeoutSec * 1000 - Math.max(0, now - from), 'timeout');
      }
      this.bySession.set(session, w);
      if (view.wide) this.wide.add(w);
      else {
        for (const t of w.tubes) {
          let set = this.byTube.get(t);
          if (!set) { set = new Set(); this.byTube.set(t, set); }
          set.add(w);
        }
      }
      this.host.waitingChanged(session.owner, w.tubes, view.wide, 1);
      // A blocking reserve over drained tubes waits for their wake-up (its timeout still looks once).
      if (w.outcome === null && timeoutSec !== 0 && !view.wide && this.knownDrained(w.tubes)) return;
      this.attempt(w);
    });
  }

  /** Whether the store reserves over all the session's watched tubes at once (worked out once per watch list). */
  reservesAtOnce(session: Session): boolean {
    return this.viewOf(session).atOnce;
  }

  /** The session's watch list as a view, made again only when it changed. */
  private viewOf(session: Session): WatchView {
    let sw = this.watches.get(session);
    if (sw && sw.view.version === session.watchVersion) return sw.view;
    const tubes = [...session.watched];
    const wide = tubes.length > WIDE_WATCH ? new Set(tubes) : null;
    const view: WatchView = { version: session.watchVersion, tubes, wide, atOnce: this.host.reservesAtOnce(tubes) };
    if (sw) sw.view = view;
    else {
      sw = { view, kept: false };
      this.watches.set(session, sw);
    }
    if (wide) sw.kept = true;
    return view;
  }

  /** The waiters on a tube in the order they came, wide ones included, while visit says go on. */
  private eachOn(tube: string, visit: (w: Waiter) => boolean): void {
    const narrow = this.byTube.get(tube);
    if (this.wide.size === 0) {
      if (narrow) for (const w of narrow) if (!visit(w)) return;
      return;
    }
    const a = narrow ? narrow.values() : null;
    const b = this.wide.values();
    const nextWide = (): Waiter | undefined => {
      for (let r = b.next(); !r.done; r = b.next()) if (r.value.view.wide!.has(tube)) return r.value;
      return undefined;
    };
    let x = a?.next().value as Waiter | undefined;
    let y = nextWide();
    while (x || y) {
      if (x && (!y || x.seq < y.seq)) {
        if (!visit(x)) return;
        x = a!.next().value as Waiter | undefined;
      } else {
        if (!visit(y!)) return;
        y = nextWide();
      }
    }
  }

  /** Jobs became ready in a tube (from any sidecar). */
  onReady(tube: string, count: number): void {
    this.wokeUp(tube);
    this.wake(tube, count);
  }

  /**
   * A job of this sidecar's is about to become ready in `tube` (a put or a
   * release, just handed to the batch): the first idle waiter on the tube
   * reserves in the same call.
   */
  readying(tube: string): void {
    let handed = false;
    this.eachOn(tube, (w) => {
      if (w.state !== State.Idle) return true;
      this.attempt(w);
      handed = true;
      return false;
    });
    // A job handed over leaves nothing behind that the looks in flight missed: its reserve rides
    // right after it and tells whether the tube is drained at its call's end, and a job left
    // ready all the same (the reserve took a more urgent one) is published, so its wake-up comes
    // back here. Only a job nobody waits for is a wake-up now: the looks in flight missed it.
    if (!handed) this.wokeUp(tube);
  }

  /** After a lost subscription: every waiter looks again. */
  onResync(): void {
    this.wakeUps++;
    this.drained.clear();
    for (const w of this.bySession.values()) this.poke(w);
  }

  private wokeUp(tube: string): void {
    this.wakeUps++;
    this.drained.delete(tube);
  }

  /** Lets up to `count` waiters on the tube look. */
  private wake(tube: string, count: number): void {
    if (count <= 0) return;
    this.eachOn(tube, (w) => {
      if (w.state === State.Idle) { this.attempt(w); count--; }
      else if (w.state === State.Attempting) { w.state = State.AttemptAgain; count--; }
      return count > 0;
    });
  }

  /** The client half-closed its socket: TIMED_OUT, as beanstalkd. */
  timeOut(session: Session): void {
    const w = this.bySession.get(session);
    if (w) this.settle(w, 'timeout');
  }

  /** The connection is gone: its wait ends, and the watch list the store kept for it goes. */
  cancel(session: Session): void {
    const sw = this.watches.get(session);
    if (sw) {
      this.watches.delete(session);
      // After its reserves in the store's batch: none can store it again.
      if (sw.kept) this.host.submit(jobOps.dropWatch(null, ignore, session.owner));
    }
    const w = this.bySession.get(session);
    if (!w) return;
    if (w.state === State.Idle) this.finish(w);
    else {
      // The attempt in flight gives back whatever it reserved when it returns (it finds the waiter gone).
      w.state = State.Done;
      this.remove(w);
      w.resolve();
    }
  }

  private poke(w: Waiter): void {
    if (w.state === State.Idle) this.attempt(w);
    else if (w.state === State.Attempting) w.state = State.AttemptAgain;
  }

  private at(w: Waiter, ms: number, outcome: Outcome | null): void {
    // A longer timer would fire at once (Node clamps it to 1 ms): wait in steps.
    if (ms > MAX_TIMER_MS) {
      w.timers.push(setTimeout(() => this.at(w, ms - MAX_TIMER_MS, outcome), MAX_TIMER_MS));
      return;
    }
    w.timers.push(setTimeout(() => (outcome ? this.settle(w, outcome) : this.poke(w)), Math.max(0, ms)));
  }

  /**
   * The wait ends (timeout, deadline, half-close), but never while a job it
   * could take is ready: one last attempt first, or one more if an attempt
   * in flight started before the end.
   */
  private settle(w: Waiter, outcome: Outcome): void {
    if (w.state === State.Done) return;
    w.outcome = w.outcome ?? outcome;
    w.lastLook = true;
    this.poke(w);
  }

  private attempt(w: Waiter): void {
    w.state = State.Attempting;
    w.lookedAt = this.wakeUps;
    this.host.submit(jobOps.reserve(w, this.attempted, w.session.owner, w.tubes, w.many ?? w.run, watchOf(w)));
  }

  private readonly attempted = (op: JobOp<Waiter, ReserveResult>, r: ReserveResult, err: Error | null): void => {
    this.settleAttempt(op.ctx, r, err);
  };

  private settleAttempt(w: Waiter, r: ReserveResult, err: Error | null): void {
    const again = w.state === State.AttemptAgain;
    const gone = w.state === State.Done;
    if (!gone) w.state = State.Idle;
    if (err) {
      if (gone) {
        if (isOutcomeUnknown(err)) this.host.giveBackAll(w.session.owner);
        return;
      }
      if (isOutcomeUnknown(err)) {
        // A job may have been reserved for it: the session closes, and what it holds is handed back.
        w.session.fail(err);
        this.finish(w);
        return;
      }
      // The store did not take the attempt (down, restarting): a blocked reserve
      // keeps waiting through the outage; only its own timeout ends it.
      if (w.outcome) this.reply(w, OUTCOME_REPLY[w.outcome]);
      else this.at(w, RETRY_AFTER_FAILURE_MS, null);
      return;
    }
    const drained = typeof r === 'object' ? r.drained : r === -1;
    // No wake-up while the attempt was out: nothing new since its look.
    // (Not a wide one's: a look over its tubes costs little, remembering them more.)
    if (drained && w.view.wide === null && w.lookedAt === this.wakeUps) this.remember(w.tubes);
    // Jobs left where a mark said none (a wake-up lost in a fault): the mark is stale.
    else if (typeof r === 'object' && !r.drained) for (const t of w.tubes) this.drained.delete(t);
    if (typeof r === 'object') {
      if (gone) this.host.giveBack(w.session.owner, r.jobs);
      else this.deliver(w, r.jobs);
      // There may be more: let the next waiter of each tube look.
      if (!r.drained) for (const tube of new Set(r.jobs.map((job) => job.tube))) this.wake(tube, 1);
      return;
    }
    if (gone) return;
    if (again) { this.attempt(w); return; }
    if (w.outcome) {
      if (w.lastLook && !w.slackUsed && r >= 0 && r <= LAST_LOOK_MS) {
        w.slackUsed = true;
        this.at(w, r + 1, null);
        return;
      }
      this.reply(w, OUTCOME_REPLY[w.outcome]);
      return;
    }
    if (r >= 0) this.at(w, r + 2, null);
  }

  private remember(tubes: readonly string[]): void {
    if (this.drained.size + tubes.length > MAX_DRAINED) this.drained.clear();
    const now = performance.now();
    for (const t of tubes) this.drained.set(t, now);
  }

  private knownDrained(tubes: readonly string[]): boolean {
    const since = performance.now() - DRAINED_TRUST_MS;
    for (const t of tubes) if (!((this.drained.get(t) ?? -Infinity) > since)) return false;
    return true;
  }

  private deliver(w: Waiter, jobs: readonly ReservedJob[]): void {
    if (w.many !== null) w.session.deliverMany(jobs);
    else {
      for (const job of jobs) w.session.deliver(job);
      // The rest of a run found no job, after the jobs before them were reserved (beanstalkd: each in turn).
      if (jobs.length < w.run) {
        const now = Date.now();
        const rest = deadlineSoon(w.session.soonestDeadline(now), now) ? REPLY.DEADLINE_SOON : REPLY.TIMED_OUT;
        for (let i = jobs.length; i < w.run; i++) w.session.answer(rest);
      }
    }
    this.finish(w);
  }

  /** The wait's end without a job: the reply, once per reserve of a run. */
  private reply(w: Waiter, b: Buffer): void {
    for (let i = 0; i < w.run; i++) w.session.answer(b);
    this.finish(w);
  }

  private remove(w: Waiter): void {
    if (this.bySession.get(w.session) !== w) return;
    this.bySession.delete(w.session);
    if (w.view.wide) this.wide.delete(w);
    else {
      for (const t of w.tubes) {
        const set = this.byTube.get(t)!;
        set.delete(w);
        if (set.size === 0) this.byTube.delete(t);
      }
    }
    for (const t of w.timers) clearTimeout(t);
    this.host.waitingChanged(w.session.owner, w.tubes, w.view.wide, -1);
  }

  private finish(w: Waiter): void {
    this.waitEnded.set(w.session, Date.now());
    w.state = State.Done;
    this.remove(w);
    w.resolve();
  }
}
