// What the benchmark measures: each scenario is a workload (put / drain /
// mixed / fixed rate) under a persistence mode, played in the same way
// against redstalk and against beanstalkd, each time on a fresh server.
import { Wire, yamlMap } from '../test/helpers/wire.js';
import { Ledger, type LedgerCheck } from './ledger.js';
import { runPhase, type ConsumerSpec, type PhaseResult, type ProducerSpec } from './load.js';
import { startTarget, type Persistence, type RunningTarget, type Target } from './servers.js';
import type { Histogram } from './stats.js';

export type Workload = 'put' | 'drain' | 'mixed' | 'rate';

export interface Scenario {
  name: string;
  what: string;
  workload: Workload;
  persistence: Persistence;
  /** Up to `depth` commands in flight per connection instead of one. */
  pipelined: boolean;
  /** `fill` jobs queued (behind the measured ones) before the measurement. */
  backlog?: boolean;
  /** redstalk sidecars on the one Redis, clients spread across them. */
  sidecars?: number;
  /** redstalk's Redis gets a local replica, and the sidecars --min-replicas 1 (beanstalkd has no replication). */
  replica?: boolean;
  /** The scenario this one is compared with, target by target. */
  baseline?: string;
}

export const SCENARIOS: Scenario[] = [
  { name: 'put', workload: 'put', persistence: 'everysec', pipelined: false, what: 'all clients put; AOF everysec vs binlog (-b, fsync 50 ms)' },
  { name: 'drain', workload: 'drain', persistence: 'everysec', pipelined: false, what: 'a queue filled first, all clients reserve+delete until empty; AOF everysec vs binlog' },
  { name: 'mixed', workload: 'mixed', persistence: 'everysec', pipelined: false, what: 'half the clients put, half reserve+delete; AOF everysec vs binlog' },
  { name: 'mixed-backlog', workload: 'mixed', persistence: 'everysec', pipelined: false, backlog: true, baseline: 'mixed', what: 'mixed with --fill jobs already queued (at a lower priority), compared with mixed' },
  { name: 'mixed-2-sidecars', workload: 'mixed', persistence: 'everysec', pipelined: false, sidecars: 2, baseline: 'mixed', what: 'mixed, clients split across two sidecars on one Redis (beanstalkd: one server), compared with mixed' },
  { name: 'put-min-replicas', workload: 'put', persistence: 'everysec', pipelined: false, replica: true, baseline: 'put', what: 'put, with a local replica and --min-replicas 1 (a WAIT per batch), compared with put' },
  { name: 'mixed-min-replicas', workload: 'mixed', persistence: 'everysec', pipelined: false, replica: true, baseline: 'mixed', what: 'mixed, with a local replica and --min-replicas 1, compared with mixed' },
  { name: 'put-fsync-always', workload: 'put', persistence: 'always', pipelined: false, what: 'all clients put; appendfsync always vs -b -f 0' },
  { name: 'put-memory', workload: 'put', persistence: 'memory', pipelined: false, what: 'all clients put; no AOF vs in-memory beanstalkd' },
  { name: 'put-pipelined', workload: 'put', persistence: 'memory', pipelined: true, what: 'all clients put, pipelined; no AOF vs in-memory beanstalkd' },
  { name: 'drain-pipelined', workload: 'drain', persistence: 'memory', pipelined: true, what: 'drain, pipelined; no AOF vs in-memory beanstalkd' },
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
}

const PRI = 100;
/** Backlog jobs rank behind the measured ones, so consumers keep taking fresh jobs and the backlog stays. */
const BACKLOG_PRI = 1000;
const WARMUP_MS = 1000;

/** Assigns unique producer indices and spreads connections over the server's ports. */
class Clients {
  private nextIndex = 0;
  private nextPort = 0;
  constructor(private readonly ports: number[]) {}

  private port(): number { return this.ports[this.nextPort++ % this.ports.length]!; }

  producers(n: number, pri: number, limit: number): ProducerSpec[] {
    return Array.from({ length: n }, () => ({ port: this.port(), index: this.nextIndex++, pri, limit }));
  }

  consumers(n: number, untilEmpty: boolean): ConsumerSpec[] {
    return Array.from({ length: n }, () => ({ port: this.port(), untilEmpty }));
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

export async function measure(scenario: Scenario, target: Target, round: number, settings: Settings): Promise<Measurement> {
  const server = await startTarget(target, scenario.persistence, target === 'redstalk' ? scenario.sidecars : 1, scenario.replica === true);
  process.stderr.write(`== ${scenario.name} on ${target} (round ${round}): ${server.commands.join(' + ')}\n`);
  try {
    return await measureOn(server, scenario, target, round, settings);
  } finally {
    await server.stop();
  }
}

async function measureOn(server: RunningTarget, scenario: Scenario, target: Target, round: number, s: Settings): Promise<Measurement> {
  const ledger = new Ledger();
  const clients = new Clients(server.ports);
  const label = `${scenario.name} ${target}`;
  const depth = scenario.pipelined ? s.depth : 1;
  const durationMs = s.durationS * 1000;
  const warmupMs = Math.min(WARMUP_MS, durationMs / 10);
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

  const half = Math.floor(s.clients / 2);
  const plan = {
    put: () => ({ producers: clients.producers(s.clients, PRI, Infinity), consumers: [] }),
    drain: () => ({ producers: [], consumers: clients.consumers(s.clients, true) }),
    mixed: () => ({ producers: clients.producers(half, PRI, Infinity), consumers: clients.consumers(s.clients - half, false), maxWaiting: 2 * (s.clients - half) }),
    rate: () => ({ producers: clients.producers(half, PRI, Infinity), consumers: clients.consumers(s.clients - half, false), rate: s.rate }),
  }[scenario.workload]();
  const load = await runPhase({ ...phase, ...plan, label, depth, durationMs });
  addErrors(load.errors);

  const leftInServer = await jobsLeft(server.ports[0]!);
  const checked = ledger.check();
  const putOnly = scenario.workload === 'put';
  return {
    scenario: scenario.name,
    target,
    round,
    commands: server.commands,
    jobs: putOnly ? load.windowPuts : load.windowDeletes,
    windowMs: load.windowMs,
    latency: { put: load.putRtt, drain: load.reserveRtt, mixed: load.endToEnd, rate: load.endToEnd }[scenario.workload],
    load,
    fill,
    errors,
    check: { ...checked, leftInServer, lost: checked.inserted - checked.reserved - leftInServer },
  };
}
