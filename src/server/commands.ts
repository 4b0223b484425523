// The dispatcher: one handler per command, in protocol order, each reading
// like the spec (beanstalkd prot.c dispatch_cmd). Handlers turn arguments
// into a store call and a reply; a handler that returns a promise holds its
// connection until it has answered. Job commands (put, delete, release,
// bury, touch) instead hand an op to the cross-connection batch
// (store/batcher.ts); their replies are made by the completions below.
import os from 'node:os';
import type { ParsedCommand } from '../protocol/parser.js';
import type { BatchOp, BatchResult, OpCode } from '../store/batcher.js';
import { jobReply, line, okReply, REPLY } from '../protocol/replies.js';
import { COMMAND_COUNTERS, COMMANDS, isValidName } from '../protocol/spec.js';
import { yamlDict, yamlList, type StatValue } from '../protocol/yaml.js';
import { ROOM_HANDLERS } from '../rooms/commands.js';
import type { Connection } from './connection.js';
import { sumSnapshots } from './counters.js';

export interface PendingPut { pri: number; delay: number; ttr: number; bytes: number }

type Args = Array<number | string>;
type Handler = (c: Connection, args: Args, cmd: ParsedCommand) => Promise<void> | void;

const HANDLERS: Record<string, Handler> = {
  put(c, [pri, delay, ttr, bytes], cmd) {
    if ((bytes as number) > c.sidecar.options.maxJobSize) return c.skipBody(bytes as number);
    if (cmd.trailing) return c.send(REPLY.BAD_FORMAT);
    c.sidecar.setProducer(c);
    // A ttr of 0 would expire at once; beanstalkd raises it to 1 second.
    c.expectBody({ pri: pri as number, delay: delay as number, ttr: Math.max(1, ttr as number), bytes: bytes as number });
  },

  async peek(c, [id]) {
    const job = await c.sidecar.store.peekJob(id as string);
    if (!job) return c.send(REPLY.NOT_FOUND);
    c.sendAll(jobReply('FOUND', job.id, job.body));
  },
  'peek-ready': (c) => peekTube(c, 'ready'),
  'peek-delayed': (c) => peekTube(c, 'delayed'),
  'peek-buried': (c) => peekTube(c, 'buried'),

  'reserve-with-timeout': (c, [timeout]) => c.sidecar.waiters.wait(c, timeout as number),
  async 'reserve-job'(c, [id]) {
    const tube = await tubeOf(c, id as string);
    const job = tube === null ? null : await c.sidecar.store.reserveJob(c.owner, id as string, tube);
    if (!job) return c.send(REPLY.NOT_FOUND);
    c.sidecar.setWorker(c); // beanstalkd counts a reserve-job worker only once it got a job
    c.reserve(job);
  },
  reserve: (c) => c.sidecar.waiters.wait(c, null),

  delete(c, [id]) {
    const r = c.reserved.get(id as string);
    if (r) return c.submit(jobOp('d', c, deleted, id as string, r.tube));
    return deleteAnywhere(c, id as string);
  },
  release(c, [id, pri, delay]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    c.submit(jobOp('r', c, released, id as string, r.tube, pri as number, delay as number));
  },
  bury(c, [id, pri]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    c.submit(jobOp('b', c, buried, id as string, r.tube, pri as number));
  },
  async kick(c, [bound]) {
    const n = await c.sidecar.store.kick(c.used, bound as number);
    c.send(line(`KICKED ${n}`));
  },
  async 'kick-job'(c, [id]) {
    const tube = await tubeOf(c, id as string);
    const ok = tube !== null && (await c.sidecar.store.kickJob(id as string, tube));
    c.send(ok ? REPLY.KICKED : REPLY.NOT_FOUND);
  },
  touch(c, [id]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    c.submit(jobOp('t', c, touched, id as string, r.tube));
  },

  async 'stats-job'(c, [id]) {
    const s = await c.sidecar.store.statsJob(id as string);
    if (!s) return c.send(REPLY.NOT_FOUND);
    c.send(okReply(yamlDict([
      ['id', s.id], ['tube', s.tube], ['state', s.state], ['pri', s.pri],
      ['age', Math.floor(s.ageMs / 1000)], ['delay', s.delay], ['ttr', s.ttr],
      ['time-left', Math.floor(s.timeLeftMs / 1000)], ['file', 0], ['reserves', s.reserves],
      ['timeouts', s.timeouts], ['releases', s.releases], ['buries', s.buries], ['kicks', s.kicks],
    ])));
  },
  async 'stats-tube'(c, [name]) {
    const sidecar = c.sidecar;
    const [counts, others] = await Promise.all([sidecar.store.tubeCounts([name as string]), sidecar.otherSnapshots()]);
    const t = counts.tubes.get(name as string);
    if (!t) return c.send(REPLY.NOT_FOUND);
    const local = sidecar.counters.tubes.get(name as string);
    c.send(okReply(yamlDict([
      ['name', name as string], ['current-jobs-urgent', t.urgent], ['current-jobs-ready', t.ready],
      ['current-jobs-reserved', t.reserved], ['current-jobs-delayed', t.delayed], ['current-jobs-buried', t.buried],
      ['total-jobs', t.totalJobs],
      ['current-using', (local?.using ?? 0) + sumSnapshots(others, `using:${name}`)],
      ['current-watching', (local?.watching ?? 0) + sumSnapshots(others, `watching:${name}`)],
      ['current-waiting', (local?.waiting ?? 0) + sumSnapshots(others, `waiting:${name}`)],
      ['cmd-delete', t.cmdDelete], ['cmd-pause-tube', t.cmdPauseTube],
      ['pause', t.pause], ['pause-time-left', Math.floor(t.pauseLeftMs / 1000)],
    ])));
  },
  stats: (c) => stats(c),

  use(c, [name]) {
    const tube = name as string;
    if (tube === c.used) return c.send(line(`USING ${tube}`));
    return after(c.sidecar.reference(tube, 'using', 1), () => {
      c.sidecar.reference(c.used, 'using', -1);
      c.used = tube;
      c.send(line(`USING ${tube}`));
    });
  },
  watch(c, [name]) {
    const tube = name as string;
    if (c.watched.includes(tube)) return c.send(line(`WATCHING ${c.watched.length}`));
    return after(c.sidecar.reference(tube, 'watching', 1), () => {
      c.watched.push(tube);
      c.send(line(`WATCHING ${c.watched.length}`));
    });
  },
  ignore(c, [name]) {
    const i = c.watched.indexOf(name as string);
    if (i >= 0) {
      if (c.watched.length < 2) return c.send(REPLY.NOT_IGNORED);
      c.watched.splice(i, 1);
      c.sidecar.reference(name as string, 'watching', -1);
    }
    c.send(line(`WATCHING ${c.watched.length}`));
  },
  'list-tubes-watched': (c) => c.send(okReply(yamlList(c.watched))),
  'list-tube-used': (c) => c.send(line(`USING ${c.used}`)),
  async 'list-tubes'(c) {
    c.send(okReply(yamlList(await c.sidecar.store.listTubes())));
  },
  quit: (c) => c.close(),
  async 'pause-tube'(c, [name, delay]) {
    if (!isValidName(name as string)) return c.send(REPLY.BAD_FORMAT);
    const ok = await c.sidecar.store.pauseTube(name as string, delay as number);
    c.send(ok ? REPLY.PAUSED : REPLY.NOT_FOUND);
  },
  ...ROOM_HANDLERS,
};

/** Commands of protocol/commands.json that have no handler (must be none). */
export function unhandledCommands(): string[] {
  return COMMANDS.map((c) => c.name).filter((name) => !(name in HANDLERS));
}

export function dispatch(c: Connection, cmd: ParsedCommand): Promise<void> | void {
  const { spec } = cmd;
  if (spec.counter) c.sidecar.countCommand(spec.counter);
  if (spec.role === 'worker') c.sidecar.setWorker(c);
  return HANDLERS[spec.name]!(c, cmd.args, cmd);
}

/**
 * Whether a command may run while the connection's batched commands are in
 * flight: only one that goes into the batch itself (its reply then follows
 * theirs). Others wait, to see their effects and to answer after them.
 */
export function joinsBatch(c: Connection, cmd: ParsedCommand): boolean {
  switch (cmd.spec.name) {
    case 'put': return !cmd.trailing && (cmd.args[3] as number) <= c.sidecar.options.maxJobSize;
    case 'delete': case 'release': case 'bury': case 'touch': return c.reserved.has(cmd.args[0] as string);
    default: return false;
  }
}

/** The body of a put arrived (bytes + 2, the 2 should be CRLF). */
export function finishPut(c: Connection, put: PendingPut, chunk: Buffer): void {
  // Like beanstalkd, a put that fails here has already used up a job id.
  if (chunk[put.bytes] !== 13 || chunk[put.bytes + 1] !== 10) return c.submit(jobOp('i', c, expectedCrlf, ''));
  if (c.sidecar.draining) return c.submit(jobOp('i', c, refusedDraining, ''));
  c.submit(jobOp('p', c, inserted, '', c.used, put.pri, put.delay, put.ttr, chunk.subarray(0, put.bytes)));
}

type JobOp = BatchOp<Connection>;

function jobOp(code: OpCode, c: Connection, done: JobOp['done'], id: string, tube = '', pri = 0, delay = 0, ttr = 0, body: Buffer | null = null): JobOp {
  return { code, owner: c.owner, id, tube, tubes: NO_TUBES, pri, delay, ttr, body, ctx: c, done };
}

const NO_TUBES: readonly string[] = [];

/** A batched command's completion: the reply for its result, or the error reply; then the connection goes on. */
function completion(reply: (c: Connection, op: JobOp, result: BatchResult) => Buffer): JobOp['done'] {
  return (op, result, err) => {
    const c = op.ctx;
    if (err) c.commandFailed(err);
    else c.send(reply(c, op, result));
    c.settled(op);
  };
}

const inserted = completion((c, op, id) => {
  if (op.delay > 0) c.sidecar.armPromote(op.delay * 1000);
  return line(`INSERTED ${id as string}`);
});
const expectedCrlf = completion(() => REPLY.EXPECTED_CRLF);
const refusedDraining = completion(() => REPLY.DRAINING);

const deleted = completion((c, op, ok) => {
  if (ok !== 1) return REPLY.NOT_FOUND;
  c.reserved.delete(op.id);
  return REPLY.DELETED;
});

const released = completion((c, op, ok) => {
  c.reserved.delete(op.id);
  if (ok !== 1) return REPLY.NOT_FOUND;
  if (op.delay > 0) c.sidecar.armPromote(op.delay * 1000);
  return REPLY.RELEASED;
});

const buried = completion((c, op, ok) => {
  c.reserved.delete(op.id);
  return ok === 1 ? REPLY.BURIED : REPLY.NOT_FOUND;
});

const touched = completion((c, op, ttr) => {
  const r = c.reserved.get(op.id);
  if (ttr === 0 || !r) {
    c.reserved.delete(op.id);
    return REPLY.NOT_FOUND;
  }
  r.deadline = Date.now() + (ttr as number) * 1000;
  return REPLY.TOUCHED;
});

/** delete of a job this connection does not hold: find its tube first (a job never changes tube). */
async function deleteAnywhere(c: Connection, id: string): Promise<void> {
  const tube = await c.sidecar.store.jobTube(id);
  if (tube === null) return c.send(REPLY.NOT_FOUND);
  c.submit(jobOp('d', c, deleted, id, tube));
}

/** Runs fn after p, or at once when there is nothing to wait for. */
function after(p: Promise<void> | undefined, fn: () => void): Promise<void> | void {
  return p ? p.then(fn) : fn();
}

/** A job's tube: known locally for this connection's reservations, else asked of Redis. */
function tubeOf(c: Connection, id: string): Promise<string | null> {
  const r = c.reserved.get(id);
  return r ? Promise.resolve(r.tube) : c.sidecar.store.jobTube(id);
}

async function peekTube(c: Connection, which: 'ready' | 'delayed' | 'buried'): Promise<void> {
  const job = await c.sidecar.store.peekTube(c.used, which);
  if (!job) return c.send(REPLY.NOT_FOUND);
  c.sendAll(jobReply('FOUND', job.id, job.body));
}

async function stats(c: Connection): Promise<void> {
  const { sidecar } = c;
  const [names, others] = await Promise.all([sidecar.store.listTubes(), sidecar.otherSnapshots()]);
  const counts = await sidecar.store.tubeCounts(names);
  const sum = (k: 'urgent' | 'ready' | 'reserved' | 'delayed' | 'buried') => {
    let n = 0;
    for (const t of counts.tubes.values()) n += t[k];
    return n;
  };
  const local = sidecar.counters;
  const both = (field: string, mine: number) => mine + sumSnapshots(others, field);
  const usage = process.resourceUsage();
  const cpu = (us: number) => `${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, '0')}`;
  const entries: Array<[string, StatValue]> = [
    ['current-jobs-urgent', sum('urgent')], ['current-jobs-ready', sum('ready')],
    ['current-jobs-reserved', sum('reserved')], ['current-jobs-delayed', sum('delayed')],
    ['current-jobs-buried', sum('buried')],
  ];
  for (const name of COMMAND_COUNTERS) entries.push([name, both(name, local.commands.get(name) ?? 0)]);
  entries.push(
    ['job-timeouts', counts.jobTimeouts], ['total-jobs', counts.totalJobs],
    ['max-job-size', sidecar.options.maxJobSize], ['current-tubes', counts.tubes.size],
    ['current-connections', both('current-connections', local.connections)],
    ['current-producers', both('current-producers', local.producers)],
    ['current-workers', both('current-workers', local.workers)],
    ['current-waiting', both('current-waiting', local.waiting)],
    ['total-connections', both('total-connections', local.totalConnections)],
    ['pid', process.pid], ['version', sidecar.version],
    ['rusage-utime', cpu(usage.userCPUTime)], ['rusage-stime', cpu(usage.systemCPUTime)],
    ['uptime', Math.floor((Date.now() - sidecar.startedAt) / 1000)],
    ['binlog-oldest-index', 0], ['binlog-current-index', 0], ['binlog-records-migrated', 0],
    ['binlog-records-written', 0], ['binlog-max-size', 10485760],
    ['draining', sidecar.draining], ['id', sidecar.nodeId],
    ['hostname', os.hostname()], ['os', os.version()], ['platform', os.machine()],
  );
  c.send(okReply(yamlDict(entries)));
}
