// The load of a fault run: producers and workers spread over the sidecars, each
// on a connection that survives errors (reconnect with backoff, switch sidecar),
// a fault injected in the middle, probes that time the recovery, then a drain
// until every acknowledged job was delivered (or a deadline), and the accounting.
import { randomBytes } from 'node:crypto';
import {
  Client, ConnectionError, DeadlineSoonError, NotFoundError, RedstalkError, TimedOutError,
} from '../../clients/node/src/index.js';
import { account, checkBody, holds, Ledger, makeBody, ttrLapses, type Attempt, type Delivery, type Report, type TtrLapse } from './ledger.js';

export const TUBE = 'faults';
const PROBE_TUBE = 'probe';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => Date.now();

export interface Sizes {
  producers: number;
  workers: number;
  /** Puts in flight per producer (pipelined on its connection). */
  window: number;
  /** Put attempts per second per producer, at most. */
  rate: number;
  /** Load before the fault, and after its end. */
  preMs: number;
  postMs: number;
  /** After the producers stop: how long the workers may take to deliver everything, beyond the TTR. */
  drainMs: number;
}

export const FULL = process.env.FAULTS_FULL === '1' || process.env.FAULTS_FULL === 'true';

export const SIZES: Sizes = FULL
  ? { producers: 8, workers: 12, window: 4, rate: 150, preMs: 5000, postMs: 8000, drainMs: 60_000 }
  : { producers: 3, workers: 4, window: 2, rate: 100, preMs: 2000, postMs: 2000, drainMs: 25_000 };

/** A sidecar the clients may talk to. */
export interface Endpoint { name: string; port: number; alive(): boolean }

/** A command that gets no reply within this long is given up: its connection is closed. */
const WATCHDOG_MS = 20_000;

/** Times the fault: the test calls start() when the fault begins and end() when it is over. */
export interface FaultControl {
  start(): void;
  end(): void;
  note(s: string): void;
}

export interface RunOptions {
  fault: string;
  endpoints: Endpoint[];
  ttrSec: number;
  sizes?: Sizes;
  /** Workers wait until the fault starts (a backlog builds up first). */
  workersFromFault?: boolean;
  /** The tubes of the load (default [TUBE]): producer p puts into tubes[p % n], every worker watches all. */
  tubes?: string[];
  /** Injects the fault and ends it, calling ctl.start() / ctl.end(). */
  inject(ctl: FaultControl): Promise<void>;
}

export interface RunResult {
  report: Report;
  /** TTRs that ran out during the run (the server's job-timeouts). */
  jobTimeouts: number | null;
  ledger: Ledger;
  faultStart: number;
  faultEnd: number;
}

// ---------------------------------------------------------------- connections

/** A connection, and when it closed (seen by its socket's close), which ends every hold it had. */
interface Conn { client: Client; via: string; closedAt?: number }

/**
 * A client's connection that comes back: connect (and set up) to the preferred
 * sidecar, switch to the next one on failure, back off 50 ms .. 1 s with jitter.
 */
class Link {
  private conn: Conn | null = null;
  private connecting: Promise<Conn | null> | null = null;
  private errorsInRow = 0;

  constructor(
    readonly name: string,
    private readonly endpoints: Endpoint[],
    private index: number,
    private readonly setup: (c: Client) => Promise<void>,
    private readonly stopped: () => boolean,
    private readonly ledger?: Ledger,
  ) {}

  get(): Promise<Conn | null> {
    if (this.conn) return Promise.resolve(this.conn);
    this.connecting ??= this.open().finally(() => { this.connecting = null; });
    return this.connecting;
  }

  private async open(): Promise<Conn | null> {
    let backoff = 50;
    while (!this.stopped()) {
      const ep = this.endpoints[this.index % this.endpoints.length]!;
      let client: Client | null = null;
      const sentAt = now();
      try {
        client = await Client.connect({ port: ep.port, timeoutMs: 2000 });
        await watchdog(client, this.setup(client), 10_000);
        const conn: Conn = { client, via: ep.name };
        this.conn = conn;
        void client.closed.then(() => {
          conn.closedAt ??= now();
          if (this.conn === conn) this.conn = null;
        });
        this.errorsInRow = 0;
        return this.conn;
      } catch (e) {
        this.ledger?.setupFailures.push({ op: 'setup', client: this.name, via: ep.name, sentAt, doneAt: now(), result: client ? word(e) : 'connect' });
        if (client) void client.close();
        this.index++;
        await sleep(backoff / 2 + Math.random() * backoff);
        backoff = Math.min(backoff * 2, 1000);
      }
    }
    return null;
  }

  /** The connection failed or was given up: the next get() reconnects, to the next sidecar. */
  drop(conn: Conn): void {
    if (this.conn === conn) {
      this.conn = null;
      this.index++;
    }
    void conn.client.close();
  }

  ok(): void { this.errorsInRow = 0; }

  /** An error reply: after three in a row, try the other sidecar. Resolves after a backoff. */
  async failed(conn: Conn, word: string): Promise<void> {
    this.errorsInRow++;
    if (word === 'INTERNAL_ERROR' && this.errorsInRow >= 3) this.drop(conn);
    await sleep(Math.min(1000, 25 * 2 ** Math.min(this.errorsInRow, 6)) * (0.5 + Math.random() / 2));
  }

  close(): void { if (this.conn) void this.conn.client.close(); this.conn = null; }
}

/** A command's promise, or a ConnectionError after ms (and the connection closed: its replies are lost). */
function watchdog<T>(client: Client, p: Promise<T>, ms = WATCHDOG_MS, ledger?: Ledger): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (ledger) ledger.stuck++;
      void client.close();
      reject(new ConnectionError(`no reply within ${ms} ms`));
    }, ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

const word = (e: unknown) => (e instanceof RedstalkError ? e.code : e instanceof ConnectionError ? 'conn' : `other:${String(e)}`);

// ---------------------------------------------------------------- clients

interface Flags { stopProducers: boolean; stopWorkers: boolean; workersGo: boolean }

async function producer(p: number, run: string, opts: RunOptions, sizes: Sizes, ledger: Ledger, flags: Flags, links: Link[]): Promise<void> {
  const tubes = opts.tubes ?? [TUBE];
  const tube = tubes[p % tubes.length]!;
  const link = new Link(`producer ${p}`, opts.endpoints, p, async (c) => { await c.use(tube); }, () => flags.stopProducers, ledger);
  links.push(link);
  let seq = 0;
  const interval = (1000 * sizes.window) / sizes.rate;
  const lane = async (k: number) => {
    let next = now() + (k * interval) / sizes.window;
    while (!flags.stopProducers) {
      next += interval;
      const wait = next - now();
      if (wait > 0) await sleep(wait);
      else if (wait < -1000) next = now(); // fell behind (a fault): no burst to catch up
      if (flags.stopProducers) break;
      const conn = await link.get();
      if (!conn) break;
      const s = seq++;
      const marker = `${run}.${p}.${s}`;
      const a: Attempt = { marker, producer: p, seq: s, via: conn.via, sentAt: now(), outcome: { kind: 'pending' } };
      ledger.attempt(a);
      try {
        const id = await watchdog(conn.client, conn.client.put(makeBody(opts.fault, p, s, marker), { priority: 100, ttr: opts.ttrSec }), WATCHDOG_MS, ledger);
        a.outcome = { kind: 'acked', id };
        link.ok();
      } catch (e) {
        a.outcome = e instanceof RedstalkError ? { kind: 'error', word: e.code } : { kind: 'noreply', why: String(e) };
        if (e instanceof RedstalkError) await link.failed(conn, e.code);
        else link.drop(conn);
      } finally {
        a.doneAt = now();
        ledger.op({ op: 'put', client: link.name, via: conn.via, sentAt: a.sentAt, doneAt: a.doneAt, result: a.outcome.kind === 'acked' ? 'INSERTED' : a.outcome.kind === 'error' ? a.outcome.word : 'conn' });
      }
    }
  };
  await Promise.all(Array.from({ length: sizes.window }, (_, k) => lane(k)));
  link.close();
}

async function worker(n: number, opts: RunOptions, ledger: Ledger, flags: Flags, links: Link[]): Promise<void> {
  const tubes = opts.tubes ?? [TUBE];
  const setup = async (c: Client) => {
    for (const t of tubes) await c.watch(t);
    if (!tubes.includes('default')) await c.ignore('default');
  };
  const link = new Link(`worker ${n}`, opts.endpoints, n, setup, () => flags.stopWorkers, ledger);
  links.push(link);
  while (!flags.workersGo && !flags.stopWorkers) await sleep(20);
  while (!flags.stopWorkers) {
    const conn = await link.get();
    if (!conn) break;
    const sentAt = now();
    let job;
    try {
      job = await watchdog(conn.client, conn.client.reserveWithTimeout(1), WATCHDOG_MS, ledger);
      ledger.op({ op: 'reserve', client: link.name, via: conn.via, sentAt, doneAt: now(), result: 'RESERVED' });
      link.ok();
    } catch (e) {
      ledger.op({ op: 'reserve', client: link.name, via: conn.via, sentAt, doneAt: now(), result: word(e) });
      if (e instanceof TimedOutError) { link.ok(); continue; }
      if (e instanceof DeadlineSoonError) { link.ok(); await sleep(100); continue; }
      if (e instanceof RedstalkError) await link.failed(conn, e.code);
      else link.drop(conn);
      continue;
    }
    const checked = checkBody(job.body);
    if ('error' in checked) {
      ledger.corrupt.push({ id: job.id, via: conn.via, error: checked.error });
      await conn.client.delete(job.id).catch(() => {});
      continue;
    }
    const d: Delivery = { marker: checked.marker, id: job.id, at: now(), worker: n, via: conn.via, deleteOutcome: 'pending', deleteReplies: [] };
    ledger.deliver(d);
    // A hold ends when the delete is answered or the connection closes, whichever
    // comes first: a close during a back-off ends it then, not at the next try.
    const endedAt = () => Math.min(now(), conn.closedAt ?? Infinity);
    for (let attempt = 0; attempt < 5 && d.deleteOutcome === 'pending'; attempt++) {
      const t = now();
      try {
        await watchdog(conn.client, conn.client.delete(job.id), WATCHDOG_MS, ledger);
        d.deleteReplies.push('DELETED');
        d.deleteOutcome = 'deleted';
        d.endedAt = now();
        link.ok();
      } catch (e) {
        d.deleteReplies.push(word(e));
        if (e instanceof NotFoundError) { d.deleteOutcome = 'not-found'; d.endedAt = endedAt(); }
        else if (e instanceof RedstalkError) await link.failed(conn, e.code);
        else { d.deleteOutcome = 'conn-lost'; d.endedAt = endedAt(); link.drop(conn); }
      } finally {
        ledger.op({ op: 'delete', client: link.name, via: conn.via, sentAt: t, doneAt: now(), result: d.deleteReplies.at(-1)! });
      }
    }
    if (d.deleteOutcome === 'pending') {
      // Still refused after 5 tries: let go of the connection, which hands the job back (or its TTR will).
      link.drop(conn);
      await conn.client.closed;
      d.deleteOutcome = 'given-up';
      d.endedAt = endedAt();
    }
  }
  link.close();
}

/** Puts and reserves on one sidecar, from a connection of its own, until both succeed; resolves to when. */
async function probe(ep: Endpoint, until: number): Promise<number | null> {
  while (now() < until) {
    if (!ep.alive()) return null;
    let client: Client | null = null;
    try {
      client = await Client.connect({ port: ep.port, timeoutMs: 2000 });
      await watchdog(client, (async () => { await client!.use(PROBE_TUBE); await client!.watch(PROBE_TUBE); await client!.ignore('default'); })(), 10_000);
      while (now() < until) {
        let put = false;
        try {
          await watchdog(client, client.put('probe', { ttr: 60 }), 10_000);
          put = true;
          const job = await watchdog(client, client.reserveWithTimeout(0), 10_000);
          await watchdog(client, client.delete(job.id), 10_000).catch(() => {});
          return now();
        } catch (e) {
          if (e instanceof ConnectionError) break;
          if (put && e instanceof TimedOutError) continue; // someone else's probe job was taken first: ask again
          await sleep(25);
        }
      }
    } catch {
      await sleep(50);
    } finally {
      if (client) void client.close();
    }
  }
  return null;
}

/** Jobs left in the load's tubes (ready + reserved + delayed + buried), asked of a live sidecar; null when none answers. */
async function leftInQueue(endpoints: Endpoint[], tubes: string[]): Promise<number | null> {
  for (const ep of endpoints.filter((e) => e.alive())) {
    let client: Client | null = null;
    try {
      client = await Client.connect({ port: ep.port, timeoutMs: 2000 });
      let left = 0;
      for (const tube of tubes) {
        try {
          const s = await watchdog(client, client.statsTube(tube), 5000);
          left += s['current-jobs-ready'] + s['current-jobs-reserved'] + s['current-jobs-delayed'] + s['current-jobs-buried'];
        } catch (e) {
          if (!(e instanceof RedstalkError && e.code === 'NOT_FOUND')) throw e; // NOT_FOUND: the tube is gone, empty and unused
        }
      }
      return left;
    } catch { /* the next sidecar */ } finally {
      if (client) void client.close();
    }
  }
  return null;
}

/** The server's job-timeouts (TTRs that ran out, kept in Redis), asked of a live sidecar. */
async function jobTimeouts(endpoints: Endpoint[]): Promise<number | null> {
  for (const ep of endpoints.filter((e) => e.alive())) {
    let client: Client | null = null;
    try {
      client = await Client.connect({ port: ep.port, timeoutMs: 2000 });
      return (await watchdog(client, client.stats(), 5000))['job-timeouts'];
    } catch { /* the next one */ } finally {
      if (client) void client.close();
    }
  }
  return null;
}

/** What stats-job says of jobs that went missing. */
async function statesOf(endpoints: Endpoint[], ids: number[]): Promise<Map<number, string>> {
  const states = new Map<number, string>();
  const ep = endpoints.find((e) => e.alive());
  if (!ep || !ids.length) return states;
  let client: Client | null = null;
  try {
    client = await Client.connect({ port: ep.port, timeoutMs: 2000 });
    for (const id of ids) {
      try {
        const s = await watchdog(client, client.statsJob(id), 5000);
        states.set(id, `${s.state} (reserves ${s.reserves}, timeouts ${s.timeouts}, releases ${s.releases})`);
      } catch (e) {
        states.set(id, word(e));
        if (e instanceof ConnectionError) break;
      }
    }
  } catch { /* no answer */ } finally {
    if (client) void client.close();
  }
  return states;
}

// ---------------------------------------------------------------- a run

export async function runLoad(opts: RunOptions): Promise<RunResult> {
  const sizes = opts.sizes ?? SIZES;
  const run = randomBytes(3).toString('hex');
  const ledger = new Ledger();
  const flags: Flags = { stopProducers: false, stopWorkers: false, workersGo: !opts.workersFromFault };
  const links: Link[] = [];
  const notes: string[] = [];

  // Every loop here ends by these flags; should the run itself not get to set them
  // (an exception, the test's timeout), this timer does. It is set again when the
  // fault is over: a nemesis' faults last as long as its drain may, and a timer
  // counted from the start stopped a 30-min run's workers 3.5 min into the drain.
  const stopAll = () => { flags.stopProducers = true; flags.stopWorkers = true; };
  const afterFaultMs = sizes.postMs + opts.ttrSec * 1000 + sizes.drainMs + 180_000;
  let hardStop = setTimeout(stopAll, sizes.preMs + afterFaultMs);
  hardStop.unref();
  const faultOver = () => {
    clearTimeout(hardStop);
    hardStop = setTimeout(stopAll, afterFaultMs);
    hardStop.unref();
  };
  try {
    return await runPhases(opts, sizes, run, ledger, flags, links, notes, faultOver);
  } catch (e) {
    stopAll();
    throw e;
  } finally {
    clearTimeout(hardStop);
    for (const l of links) l.close();
  }
}

async function runPhases(opts: RunOptions, sizes: Sizes, run: string, ledger: Ledger, flags: Flags, links: Link[], notes: string[], faultOver: () => void): Promise<RunResult> {
  let faultStart = 0;
  let faultEnd = 0;
  const producers = Array.from({ length: sizes.producers }, (_, p) => producer(p, run, opts, sizes, ledger, flags, links));
  const workers = Array.from({ length: sizes.workers }, (_, n) => worker(n, opts, ledger, flags, links));

  await sleep(sizes.preMs);
  let probes: Promise<Array<number | null>> = Promise.resolve([]);
  const ctl: FaultControl = {
    start: () => { faultStart = now(); flags.workersGo = true; },
    end: () => {
      faultEnd = now();
      probes = Promise.all(opts.endpoints.filter((e) => e.alive()).map((e) => probe(e, faultEnd + 60_000)));
    },
    note: (s) => notes.push(s),
  };
  try {
    await opts.inject(ctl);
  } catch (e) {
    flags.stopProducers = true;
    flags.stopWorkers = true;
    await Promise.allSettled([...producers, ...workers]);
    throw e;
  }
  if (!faultStart) ctl.start();
  if (!faultEnd) ctl.end();
  faultOver();
  await sleep(sizes.postMs);
  flags.stopProducers = true;
  await Promise.all(producers);
  const producedAt = now();

  // Drain: every acknowledged job delivered and the tube empty (error replies that
  // took effect are delivered too), or the deadline.
  const deadline = producedAt + opts.ttrSec * 1000 + sizes.drainMs;
  let left: number | null = null;
  while (now() < deadline) {
    if (ledger.missing().length === 0) {
      left = await leftInQueue(opts.endpoints, opts.tubes ?? [TUBE]);
      if (left === 0) break;
    }
    await sleep(250);
  }
  if (ledger.missing().length) left = await leftInQueue(opts.endpoints, opts.tubes ?? [TUBE]);
  const drainedMs = now() - producedAt;
  const probeTimes = await probes;
  flags.stopWorkers = true;
  await Promise.all(workers);
  for (const l of links) l.close();

  // Recovery: the probes on every live sidecar, and the load's first put and reserve sent after the fault.
  const firstAfter = (op: string, result: string) => ledger.ops.filter((o) => o.op === op && o.result === result && o.sentAt >= faultEnd).reduce((m, o) => Math.min(m, o.doneAt), Infinity);
  const putBack = firstAfter('put', 'INSERTED');
  const reserveBack = firstAfter('reserve', 'RESERVED');
  const times = [...probeTimes, putBack, reserveBack];
  const recoverMs = times.some((t) => t === null || t === Infinity) ? null : Math.max(...(times as number[])) - faultEnd;
  const clientsBack = clientsBackMs(ledger, faultEnd);

  const timeouts = await jobTimeouts(opts.endpoints);
  const acc = account(opts.fault, ledger, opts.ttrSec);
  const states = await statesOf(opts.endpoints, acc.lostMarkers.slice(0, 30).map((a) => (a.outcome.kind === 'acked' ? a.outcome.id : 0)));
  const lostList = acc.lostMarkers.map((a) => {
    const id = a.outcome.kind === 'acked' ? a.outcome.id : 0;
    return { marker: a.marker, id, via: a.via, state: states.get(id) };
  });
  notes.unshift(
    `fault ${faultEnd - faultStart} ms; drain ${drainedMs} ms after the producers stopped; probes back after ${probeTimes.map((t) => (t === null ? 'never' : t - faultEnd)).join('/')} ms; slowest client's first success after the fault: ${clientsBack} ms; job-timeouts ${timeouts ?? '?'}${ledger.stuck ? `; commands unanswered for ${WATCHDOG_MS} ms: ${ledger.stuck}` : ''}`,
  );
  const { lostMarkers: _, ...rest } = acc;
  return { report: { ...rest, recoverMs, leftInQueue: left, notes, lostList }, jobTimeouts: timeouts, ledger, faultStart, faultEnd };
}

/**
 * The promises every fault must keep (protocol/PROTOCOL.md, "Errors" and "Time"),
 * each as [kept, what broke]: an acknowledged job is delivered, intact, under its
 * id; an acknowledged delete stays done; no error reply took effect; a
 * reservation goes back when its connection closed (or its sidecar's lease
 * ended), never by its TTR; and the service comes back.
 */
export function promises(result: RunResult, ttrSec: number, excused?: (lapse: TtrLapse) => boolean): Array<[boolean, string]> {
  const r = result.report;
  const { doubles } = holds(result.ledger, ttrSec);
  // A TTR that ran out is a stranded reservation, unless the caller knows the job could not have gone back sooner.
  const lapses = ttrLapses(result.ledger, ttrSec);
  const strandedLapses = excused ? lapses.filter((l) => !excused(l)).length : lapses.length;
  const excusedLapses = lapses.length - strandedLapses;
  const tookEffect = Object.values(r.tookEffect).reduce((a, b) => a + b, 0);
  return [
    [r.lost === 0, `${r.lost} acknowledged jobs never delivered: ${r.lostList.slice(0, 20).map((l) => `#${l.id} (${l.marker} via ${l.via}${l.state ? `, ${l.state}` : ''})`).join('; ')}`],
    [r.corrupt === 0, `${r.corrupt} bodies failed their CRC`],
    [r.idMismatch === 0, `${r.idMismatch} jobs delivered under another id than INSERTED named`],
    [r.dupAfterDeleted === 0, `${r.dupAfterDeleted} jobs delivered again after their delete answered DELETED`],
    [tookEffect === 0, `${tookEffect} error replies took effect: ${r.tookEffectList.slice(0, 10).map((t) => `${t.word} → job #${t.id} via ${t.via}`).join('; ')}`],
    [strandedLapses === 0 && result.jobTimeouts !== null && result.jobTimeouts <= excusedLapses, `reservations went back only when their TTR ran out, not when their connection closed (or their sidecar's lease ended): job-timeouts ${result.jobTimeouts}, redeliveries after the TTR ${lapses.length}${excusedLapses ? ` (${excusedLapses} of them excused: Redis never answered long enough to hand them back first)` : ''}`],
    [r.recoverMs !== null, 'puts and reserves never succeeded again after the fault'],
    [doubles.length === 0, `${doubles.length} reservations held by two open connections at once: ${doubles.slice(0, 10).map((d) => `#${d.id} ${d.overlapMs} ms (${d.first}; ${d.second})`).join('; ')}`],
  ];
}

/** The longest any client (producer or worker) took after the fault's end to get a command through. */
function clientsBackMs(ledger: Ledger, faultEnd: number): number | string {
  const ok = new Set(['INSERTED', 'RESERVED', 'TIMED_OUT', 'DEADLINE_SOON', 'DELETED']);
  const first = new Map<string, number>();
  for (const o of ledger.ops) {
    if (o.sentAt < faultEnd) continue;
    if (!first.has(o.client)) first.set(o.client, Infinity);
    if (ok.has(o.result)) first.set(o.client, Math.min(first.get(o.client)!, o.doneAt));
  }
  let worst = 0;
  for (const [client, t] of first) {
    if (t === Infinity) return `never (${client})`;
    worst = Math.max(worst, t - faultEnd);
  }
  return worst;
}
