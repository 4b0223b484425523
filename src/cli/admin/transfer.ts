// redstalk drain-to <file> / load <file>: a tube's jobs out as JSON lines and
// back in, keeping priority, TTR, the time a delayed job has left and the
// buried state. For moving jobs between beanstalkd and redstalk (either way).
//
// drain-to takes ready jobs by reserving them (nobody else can take them then,
// and a crash hands them back), delayed and buried ones by peeking; each line
// is written before its job is deleted, so a crash of the command may leave a
// job both in the file and in the server (load it twice), never in neither.
import { closeSync, createReadStream, fsyncSync, openSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { TimedOutError, NotFoundError, UnknownCommandError, type Client, type Job } from '../../../clients/node/src/index.js';
import { adminCommand, print, withClient, type AdminOptions } from './session.js';

export interface ExportedJob {
  tube: string;
  state: 'ready' | 'delayed' | 'buried';
  pri: number;
  ttr: number;
  /** Seconds left before a delayed job is ready (0 for the others). */
  delay: number;
  /** The body, base64. */
  body: string;
  /** Its id where it came from (for the record; load gives new ids). */
  id: number;
}

/** Jobs reserved (ready ones) per round trip while draining. */
const RESERVE_BATCH = 100;
/** Puts in flight while loading. */
const LOAD_WINDOW = 256;

async function exported(c: Client, job: Job, state: ExportedJob['state']): Promise<ExportedJob> {
  const s = await c.statsJob(job.id);
  return {
    tube: s.tube, state, pri: s.pri, ttr: s.ttr, delay: state === 'delayed' ? s['time-left'] : 0,
    body: job.body.toString('base64'), id: job.id,
  };
}

export async function drainTube(c: Client, tube: string, write: (j: ExportedJob) => void): Promise<Record<ExportedJob['state'], number> & { lost: number }> {
  const counts = { ready: 0, delayed: 0, buried: 0, lost: 0 };
  await c.watch(tube);
  for (const t of await c.listTubesWatched()) if (t !== tube) await c.ignore(t);
  // Ready jobs: reserved a batch at a time (pipelined), written, then deleted.
  for (;;) {
    const taken = await Promise.allSettled(Array.from({ length: RESERVE_BATCH }, () => c.reserveWithTimeout(0)));
    const jobs = taken.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const other = taken.find((r) => r.status === 'rejected' && !(r.reason instanceof TimedOutError));
    if (other?.status === 'rejected') throw other.reason;
    for (const j of await Promise.all(jobs.map((j) => exported(c, j, 'ready')))) write(j);
    await Promise.all(jobs.map((j) => c.delete(j.id)));
    counts.ready += jobs.length;
    if (jobs.length < RESERVE_BATCH) break;
  }
  // Delayed and buried jobs cannot be reserved: peeked, written, deleted, one at a time.
  await c.use(tube);
  for (const state of ['delayed', 'buried'] as const) {
    for (;;) {
      let job: Job;
      try {
        job = await (state === 'delayed' ? c.peekDelayed() : c.peekBuried());
      } catch (err) {
        if (err instanceof NotFoundError) break;
        throw err;
      }
      write(await exported(c, job, state));
      try {
        await c.delete(job.id);
        counts[state]++;
      } catch (err) {
        // Reserved by someone since we peeked (a delayed job came due): it is in the file and in the server.
        if (!(err instanceof NotFoundError)) throw err;
        counts.lost++;
      }
    }
  }
  return counts;
}

export async function loadJob(c: Client, j: ExportedJob): Promise<void> {
  const body = Buffer.from(j.body, 'base64');
  if (j.state !== 'buried') {
    await c.put(body, { priority: j.pri, delay: j.delay, ttr: j.ttr });
    return;
  }
  // A job is buried by the one who reserved it: put it, reserve that very job, bury it.
  const id = await c.put(body, { priority: j.pri, ttr: j.ttr });
  try {
    await c.reserveJob(id);
  } catch (err) {
    if (err instanceof UnknownCommandError) throw new Error('the server lacks reserve-job (beanstalkd < 1.13): buried jobs cannot be loaded into it');
    throw err;
  }
  await c.bury(id, j.pri);
}

export function parseLine(line: string, where: string): ExportedJob {
  let j: ExportedJob;
  try {
    j = JSON.parse(line) as ExportedJob;
  } catch {
    throw new Error(`${where}: not JSON`);
  }
  const whole = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  if (typeof j.tube !== 'string' || !['ready', 'delayed', 'buried'].includes(j.state) || !whole(j.pri) || !whole(j.ttr)
    || !whole(j.delay) || typeof j.body !== 'string') {
    throw new Error(`${where}: a job needs tube, state (ready, delayed, buried), pri, ttr, delay and body (base64)`);
  }
  return j;
}

export function addTransferCommands(program: Command): void {
  adminCommand(program, 'drain-to <file>', 'move jobs out of the server into a file of JSON lines (- for standard output)')
    .option('-t, --tube <name>', 'a tube to drain (repeat for more; default: every tube)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action((file: string, o: AdminOptions & { tube: string[] }) => withClient(o, async (c) => {
      const fd = file === '-' ? 1 : openSync(file, 'a');
      const tubes = o.tube.length ? o.tube : await c.listTubes();
      const totals = { ready: 0, delayed: 0, buried: 0, lost: 0 };
      try {
        for (const tube of tubes) {
          const n = await drainTube(c, tube, (j) => writeSync(fd, `${JSON.stringify(j)}\n`));
          for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += n[k];
        }
        if (fd !== 1) fsyncSync(fd);
      } finally {
        if (fd !== 1) closeSync(fd);
      }
      const summary = { tubes, ...totals };
      const say = () => `drained ${totals.ready} ready, ${totals.delayed} delayed, ${totals.buried} buried`
        + (totals.lost ? `; ${totals.lost} were reserved by others meanwhile (in the file and still in the server)` : '');
      if (file === '-') process.stderr.write(`${say()}\n`);
      else print(o, summary, say);
    }));

  adminCommand(program, 'load <file>', 'put the jobs of a drain-to file (- for standard input) into the server')
    .action((file: string, o: AdminOptions) => withClient(o, async (c) => {
      const { createInterface } = await import('node:readline');
      const lines = createInterface({ input: file === '-' ? process.stdin : createReadStream(file), crlfDelay: Infinity });
      const counts = { ready: 0, delayed: 0, buried: 0 };
      let used = '';
      let inFlight: Array<Promise<void>> = [];
      let n = 0;
      for await (const line of lines) {
        n++;
        if (line.trim() === '') continue;
        const j = parseLine(line, `${file}:${n}`);
        // Pipelined in order on one connection: a use reaches the server before the puts after it.
        if (j.tube !== used) {
          inFlight.push(c.use(j.tube).then(() => undefined));
          used = j.tube;
        }
        inFlight.push(loadJob(c, j));
        counts[j.state]++;
        if (inFlight.length >= LOAD_WINDOW) {
          await Promise.all(inFlight);
          inFlight = [];
        }
      }
      await Promise.all(inFlight);
      print(o, counts, () => `loaded ${counts.ready} ready, ${counts.delayed} delayed, ${counts.buried} buried`);
    }));
}
