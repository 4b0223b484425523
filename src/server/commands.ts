// The dispatcher: one handler per command, in protocol order, each reading
// like the spec (beanstalkd prot.c dispatch_cmd). Handlers turn arguments
// into a store call and a reply; a handler that returns a promise holds its
// connection until it has answered.
import os from 'node:os';
import type { ParsedCommand } from '../protocol/parser.js';
import { jobReply, line, okReply, REPLY } from '../protocol/replies.js';
import { COMMAND_COUNTERS, COMMANDS, isValidName } from '../protocol/spec.js';
import { yamlDict, yamlList, type StatValue } from '../protocol/yaml.js';
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

  async delete(c, [id]) {
    const tube = await tubeOf(c, id as string);
    if (tube === null || !(await c.sidecar.store.delete(c.owner, id as string, tube))) return c.send(REPLY.NOT_FOUND);
    c.reserved.delete(id as string);
    c.send(REPLY.DELETED);
  },
  async release(c, [id, pri, delay]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    const ok = await c.sidecar.store.release(c.owner, id as string, r.tube, pri as number, delay as number);
    c.reserved.delete(id as string);
    if (ok && (delay as number) > 0) c.sidecar.armPromote((delay as number) * 1000);
    c.send(ok ? REPLY.RELEASED : REPLY.NOT_FOUND);
  },
  async bury(c, [id, pri]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    const ok = await c.sidecar.store.bury(c.owner, id as string, r.tube, pri as number);
    c.reserved.delete(id as string);
    c.send(ok ? REPLY.BURIED : REPLY.NOT_FOUND);
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
  async touch(c, [id]) {
    const r = c.reserved.get(id as string);
    if (!r) return c.send(REPLY.NOT_FOUND);
    const ttr = await c.sidecar.store.touch(c.owner, id as string, r.tube);
    if (ttr === 0) {
      c.reserved.delete(id as string);
      return c.send(REPLY.NOT_FOUND);
    }
    r.deadline = Date.now() + ttr * 1000;
    c.send(REPLY.TOUCHED);
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

/** The body of a put arrived (bytes + 2, the 2 should be CRLF). */
export async function finishPut(c: Connection, put: PendingPut, chunk: Buffer): Promise<void> {
  const { store } = c.sidecar;
  // Like beanstalkd, a put that fails here has already used up a job id.
  if (chunk[put.bytes] !== 13 || chunk[put.bytes + 1] !== 10) {
    await store.allocateId();
    return c.send(REPLY.EXPECTED_CRLF);
  }
  if (c.sidecar.draining) {
    await store.allocateId();
    return c.send(REPLY.DRAINING);
  }
  const id = await store.put(c.used, put.pri, put.delay, put.ttr, chunk.subarray(0, put.bytes));
  if (put.delay > 0) c.sidecar.armPromote(put.delay * 1000);
  c.send(line(`INSERTED ${id}`));
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
