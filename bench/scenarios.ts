// What the benchmark measures: each scenario is a workload (put / drain /
// mixed / fixed rate) under a persistence mode, played in the same way
// against redstalk and against beanstalkd (and BullMQ, bullmq.ts), each time
// on a fresh server, with the CPU per job of every process involved.
import { Wire, yamlMap } from '../test/helpers/wire.js';
import { CpuMeter, type CpuUse, type Watched } from './cpu.js';
import { Ledger, type LedgerCheck } from './ledger.js';
import { openDashboards } from './dashboards.js';
import { PREFETCH, startWorkers } from './node-workers.js';
import { runPhase, type ConsumerSpec, type PhaseResult, type ProducerSpec } from './load.js';
import { startTarget, type RunningTarget, type Target, type TargetOptions } from './servers.js';
import type { Histogram } from './stats.js';

export type Workload = 'put' | 'drain' | 'mixed' | 'rate';

/** The servers (TargetOptions: persistence, sidecars, replica, cluster, shards, workers; beanstalkd takes the persistence only) and the load. */
export interface Scenario extends TargetOptions {
  name: string;
  what: string;
  workload: Workload;
  /** Up to `depth` commands in flight per connection instead of one. */
  pipelined: boolean;
  /** `fill` jobs queued (behind the measured ones) before the measurement. */
  backlog?: boolean;
  /** The scenario this one is compared with, target by target. */
  baseline?: string;
  /** Who plays it (default redstalk and beanstalkd). */
  targets?: Target[];
  /** Jobs spread over this many tubes (producers `use`, consumers `watch` one each) instead of default. */
  tubes?: number;
  /** The names of those tubes (default tube-0, tube-1, ...). */
  tubeNames?: readonly string[];
  /** mixed: --clients producers and --clients consumers, instead of half and half. */
  clientsEach?: boolean;
  /** --scenarios also takes this name for all scenarios of the group. */
  group?: string;
  /** Fixed client counts instead of ones derived from --clients (mixed, rate). */
  producers?: number;
  consumers?: number;
  /** rate: puts/s in total instead of --rate. */
  rate?: number;
  /** pipelined: commands in flight per connection instead of --depth. */
  depth?: number;
  /** Producers put-with a key of their own for every job (the dedup check, the key kept with the job). */
  keyed?: boolean;
  /** Dashboards (event streams of /api/events) open on the first sidecar during the load (with `dashboard`). */
  dashboards?: number;
  /** Left out of the measured window at the start of the load, instead of a tenth of --duration (at most 1 s); at most half the duration. */
  warmupMs?: number;
  /** redstalk's consumers are redstalk-client Workers (node-workers.ts); beanstalkd, without reserve-many, plays the plain workload. */
  nodeWorkers?: boolean;
}

/** Who plays a scenario that names no targets. */
export const DEFAULT_TARGETS: Target[] = ['redstalk', 'beanstalkd'];
const WITH_BULLMQ: Target[] = [...DEFAULT_TARGETS, 'bullmq'];

export const targetsOf = (scenario: Scenario): Target[] => scenario.targets ?? DEFAULT_TARGETS;

/**
 * Whether a target plays a scenario: the baseline (an old redstalk) plays whatever redstalk plays,
 * the floor (no store) the plain put, drain and mixed scenarios beanstalkd plays, floor-redis those
 * whose clients have one command in flight (it answers a client's commands one at a time).
 */
export const plays = (scenario: Scenario, target: Target): boolean => {
  if (target === 'floor') return targetsOf(scenario).includes('beanstalkd') && !scenario.baseline;
  if (target === 'floor-redis') return plays(scenario, 'floor') && !scenario.pipelined;
  if (target === 'baseline' && scenario.dashboard) return false; // an old checkout may have no dashboard
  return targetsOf(scenario).includes(target === 'baseline' ? 'redstalk' : target);
};

export const SCENARIOS: Scenario[] = [
  { name: 'put', workload: 'put', persistence: 'everysec', pipelined: false, targets: WITH_BULLMQ, what: 'all clients put; AOF everysec vs binlog (-b, fsync 50 ms); bullmq: Queue.add' },
  { name: 'drain', workload: 'drain', persistence: 'everysec', pipelined: false, targets: WITH_BULLMQ, what: 'a queue filled first, all clients reserve+delete until empty; AOF everysec vs binlog; bullmq: one Worker, concurrency --clients' },
  { name: 'drain-worker', workload: 'drain', persistence: 'everysec', pipelined: false, baseline: 'drain', nodeWorkers: true, what: `drain by redstalk-client Workers (reserve-many, prefetch ${PREFETCH}); beanstalkd: plain drain` },
  { name: 'mixed', workload: 'mixed', persistence: 'everysec', pipelined: false, targets: WITH_BULLMQ, what: 'half the clients put, half reserve+delete; AOF everysec vs binlog; bullmq: add + one Worker, concurrency --clients/2' },
  { name: 'mixed-worker', workload: 'mixed', persistence: 'everysec', pipelined: false, baseline: 'mixed', nodeWorkers: true, what: `mixed, the consumers redstalk-client Workers (reserve-many, prefetch ${PREFETCH}); beanstalkd: plain mixed` },
  { name: 'mixed-backlog', workload: 'mixed', persistence: 'everysec', pipelined: false, backlog: true, baseline: 'mixed', what: 'mixed with --fill jobs already queued (at a lower priority), compared with mixed' },
  { name: 'mixed-http', workload: 'mixed', persistence: 'everysec', pipelined: false, dashboard: true, targets: ['redstalk'], what: 'mixed, the sidecar with --http --dashboard (its metrics counted per command) and no dashboard open' },
  { name: 'mixed-dashboards', workload: 'mixed', persistence: 'everysec', pipelined: false, dashboard: true, dashboards: 20, baseline: 'mixed-http', targets: ['redstalk'], what: 'mixed-http with 20 dashboards open (each an event stream of /api/events), compared with mixed-http' },
  { name: 'put-keyed', workload: 'put', persistence: 'everysec', pipelined: false, keyed: true, baseline: 'put', targets: ['redstalk'], what: 'put, every job a put-with with a key of its own, compared with put' },
  { name: 'mixed-keyed', workload: 'mixed', persistence: 'everysec', pipelined: false, keyed: true, baseline: 'mixed', targets: ['redstalk'], what: 'mixed, every job a put-with with a key of its own (kept until the dedup window after its delete), compared with mixed' },
  { name: 'mixed-2-sidecars', workload: 'mixed', persistence: 'everysec', pipelined: false, sidecars: 2, baseline: 'mixed', what: 'mixed, clients split across two sidecars on one Redis (beanstalkd: one server), compared with mixed' },
  { name: 'put-min-replicas', workload: 'put', persistence: 'everysec', pipelined: false, replica: true, baseline: 'put', what: 'put, with a local replica and --min-replicas 1 (a WAIT per batch), compared with put' },
  { name: 'mixed-min-replicas', workload: 'mixed', persistence: 'everysec', pipelined: false, replica: true, baseline: 'mixed', what: 'mixed, with a local replica and --min-replicas 1, compared with mixed' },
  { name: 'put-fsync-always', workload: 'put', persistence: 'always', pipelined: false, what: 'all clients put; appendfsync always vs -b -f 0' },
  { name: 'put-memory', workload: 'put', persistence: 'memory', pipelined: false, what: 'all clients put; no AOF vs in-memory beanstalkd' },
  { name: 'put-pipelined', workload: 'put', persistence: 'memory', pipelined: true, what: 'all clients put, pipelined; no AOF vs in-memory beanstalkd' },
  { name: 'drain-pipelined', workload: 'drain', persistence: 'memory', pipelined: true, what: 'drain, pipelined; no AOF vs in-memory beanstalkd' },
  { name: 'put-pipelined-aof', workload: 'put', persistence: 'everysec', pipelined: true, what: 'all clients put, pipelined; AOF everysec vs binlog' },
  { name: 'drain-pipelined-aof', workload: 'drain', persistence: 'everysec', pipelined: true, what: 'drain, pipelined; AOF everysec vs binlog' },
  { name: 'mixed-pipelined-aof', workload: 'mixed', persistence: 'everysec', pipelined: true, what: 'mixed, producers pipelined (consumers block in reserve, one at a time); AOF everysec vs binlog' },
  { name: 'latency', workload: 'rate', persistence: 'everysec', pipelined: false, what: 'puts at a fixed total rate, consumers blocked in reserve; AOF everysec vs binlog' },
];

export interface Settings {
  durationS: number;
  clients: number;
  payload: number;
  depth: number;
  /** Fixed-rate run: puts/s in total. */
  rate: number;
  /** Jobs queued before `drain` (at most) and before the backlog scenario. */
  fill: number;
  /** Upper bound on filling the backlog. */
  fillSeconds: number;
}

/** The figure a scenario's latency columns show. */
export const LATENCY_OF: Record<Workload, string> = {
  put: 'put->INSERTED',
  drain: 'reserve->RESERVED',
  mixed: 'put->reserved (e2e)',
  rate: 'put->reserved (e2e)',
};

export interface Measurement {
  scenario: string;
  target: Target;
  round: number;
  commands: string[];
  /** Jobs put (put) or deleted (the others) in the window. */
  jobs: number;
  windowMs: number;
  latency: Histogram;
  load: PhaseResult;
  fill?: { jobs: number; ms: number };
  /** Unexpected replies and connection failures, fill included. */
  errors: Record<string, number>;
  check: LedgerCheck & { leftInServer: number; lost: number };
  /** CPU of every process in the window (client: this benchmark process). */
  cpu: CpuUse[];
}

const PRI = 100;
/** Backlog jobs rank behind the measured ones, so consumers keep taking fresh jobs and the backlog stays. */
const BACKLOG_PRI = 1000;
const WARMUP_MS = 1000;

export const tubeName = (i: number) => `tube-${i}`;

/** Assigns unique producer indices, spreads connections over the server's ports, and tubes over pairs of them. */
class Clients {
  private nextIndex = 0;
  private nextPort = 0;
  constructor(private readonly ports: number[], private readonly tubes: readonly string[]) {}

  private port(): number { return this.ports[this.nextPort++ % this.ports.length]!; }
  /** The k-th producer (consumer) of a phase: clients 2t and 2t+1 share a tube, on two ports when there are two. */
  private tube(k: number): string | undefined { return this.tubes.length ? this.tubes[Math.floor(k / 2) % this.tubes.length] : undefined; }

  producers(n: number, pri: number, limit: number, keyed = false): ProducerSpec[] {
    return Array.from({ length: n }, (_, k) => ({ port: this.port(), index: this.nextIndex++, pri, limit, tube: this.tube(k), keyed }));
  }

  consumers(n: number, untilEmpty: boolean): ConsumerSpec[] {
    return Array.from({ length: n }, (_, k) => ({ port: this.port(), untilEmpty, tube: this.tube(k) }));
  }
}

/** Jobs still in the server, any state; NaN (a failed check) when it does not answer. */
async function jobsLeft(port: number): Promise<number> {
  let wire: Wire | undefined;
  try {
    wire = await Wire.connect(port);
    const stats = yamlMap(await wire.cmd('stats'));
    return ['ready', 'reserved', 'delayed', 'buried'].reduce((sum, s) => sum + Number(stats[`current-jobs-${s}`] ?? NaN), 0);
  } catch {
    return NaN;
  } finally {
    wire?.close();
  }
}

/**
 * Plays `run` on a fresh server of the target, with a CPU meter on its
 * processes and on this one (as `client`), and stops the server afterwards.
 */
export async function onFreshTarget(
  scenario: Scenario, target: Target, round: number, client: string,
  run: (server: RunningTarget, meter: CpuMeter) => Promise<Measurement>,
): Promise<Measurement> {
  const server = await startTarget(target, scenario);
  process.stderr.write(`== ${scenario.name} on ${target} (round ${round}): ${server.commands.join(' + ')}\n`);
  try {
    const self: Watched = { role: 'client', label: client, pids: [process.pid] };
    const meter = await CpuMeter.open([self, ...server.watched]);
    try {
      return await run(server, meter);
    } finally {
      meter.close();
    }
  } finally {
    await server.stop();
  }
}

export function measure(scenario: Scenario, target: Target, round: number, settings: Settings): Promise<Measurement> {
  return onFreshTarget(scenario, target, round, 'load generator', (server, meter) => measureOn(server, meter, scenario, target, round, settings));
}

async function measureOn(server: RunningTarget, meter: CpuMeter, scenario: Scenario, target: Target, round: number, s: Settings): Promise<Measurement> {
  const ledger = new Ledger();
  const clients = new Clients(server.ports, scenario.tubeNames ?? Array.from({ length: scenario.tubes ?? 0 }, (_, i) => tubeName(i)));
  const label = `${scenario.name} ${target}`;
  const depth = scenario.pipelined ? scenario.depth ?? s.depth : 1;
  const durationMs = s.durationS * 1000;
  const warmupMs = Math.min(scenario.warmupMs ?? WARMUP_MS, durationMs / (scenario.warmupMs ? 2 : 10));
  const phase = { payload: s.payload, ledger, warmupMs };

  let fill: Measurement['fill'];
  const errors: Record<string, number> = {};
  const addErrors = (from: Record<string, number>) => { for (const [what, n] of Object.entries(from)) errors[what] = (errors[what] ?? 0) + n; };
  if (scenario.workload === 'drain' || scenario.backlog) {
    // Pipelined on every connection, whatever the scenario: the fill is preparation, not measurement.
    const perClient = Math.ceil(s.fill / s.clients);
    const result = await runPhase({
      ...phase, label: `${label} fill`, producers: clients.producers(s.clients, scenario.backlog ? BACKLOG_PRI : PRI, perClient),
      consumers: [], depth: s.depth, durationMs: scenario.backlog ? s.fillSeconds * 1000 : durationMs,
    });
    fill = { jobs: result.puts, ms: result.elapsedMs };
    addErrors(result.errors);
  }

  const producers = scenario.producers ?? (scenario.clientsEach ? s.clients : Math.floor(s.clients / 2));
  const consumers = scenario.consumers ?? (scenario.clientsEach ? s.clients : s.clients - producers);
  const plan = {
    put: () => ({ producers: clients.producers(s.clients, PRI, Infinity, scenario.keyed), consumers: [] }),
    drain: () => ({ producers: [], consumers: clients.consumers(s.clients, true) }),
    mixed: () => ({ producers: clients.producers(producers, PRI, Infinity, scenario.keyed), consumers: clients.consumers(consumers, false), maxWaiting: 2 * consumers }),
    rate: () => ({ producers: clients.producers(producers, PRI, Infinity), consumers: clients.consumers(consumers, false), rate: scenario.rate ?? s.rate }),
  }[scenario.workload]();
  // Workers take the consumers' place on redstalk: a drain's until they have handled all it queued; a
  // mixed run's until its end (its producers still hold back at 2 queued jobs per consumer).
  const workers = scenario.nodeWorkers && (target === 'redstalk' || target === 'baseline')
    ? {
      consumers: [],
      outsideConsumers: (took: (body: Buffer) => void, error: (what: string) => void) => startWorkers(server.ports, plan.consumers.length, took, error),
      outsideLimit: scenario.workload === 'drain' ? fill?.jobs : undefined,
    }
    : {};
  const dashboards = scenario.dashboards && server.http?.[0] ? openDashboards(server.http[0], scenario.dashboards) : null;
  const load = await runPhase({ ...phase, ...plan, ...workers, label, depth, durationMs, meter });
  dashboards?.close();
  if (dashboards) process.stderr.write(`  ${label}: ${scenario.dashboards} dashboards open got ${dashboards.events()} live events\n`);
  addErrors(load.errors);

  const leftInServer = await jobsLeft(server.ports[0]!);
  const checked = ledger.check();
  const putOnly = scenario.workload === 'put';
  const jobs = putOnly ? load.windowPuts : load.windowDeletes;
  return {
    scenario: scenario.name,
    target,
    round,
    commands: server.commands,
    jobs,
    windowMs: load.windowMs,
    latency: { put: load.putRtt, drain: load.reserveRtt, mixed: load.endToEnd, rate: load.endToEnd }[scenario.workload],
    load,
    fill,
    errors,
    check: { ...checked, leftInServer, lost: checked.inserted - checked.reserved - leftInServer },
    cpu: load.cpuWindow ? meter.use(load.cpuWindow.from, load.cpuWindow.to, jobs) : [],
  };
}
