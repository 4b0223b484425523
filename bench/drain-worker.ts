// drain-worker: the `drain` workload with redstalk-client's Worker as the
// consumers (reserve-many with a prefetch of 16, handlers fed from the buffer,
// deletes pipelined), beside the plain reserve + delete `drain`. beanstalkd has
// no reserve-many: on it this scenario plays the plain drain, so the x bs
// column compares the worker with beanstalkd's plain drain of the same run.
import { Client } from '../clients/node/src/index.js';
import type { CpuMeter } from './cpu.js';
import { clock, Ledger } from './ledger.js';
import { runPhase, type PhaseResult, type ProducerSpec } from './load.js';
import { PREFETCH, startWorkers } from './node-workers.js';
import { measure, onFreshTarget, type Measurement, type Scenario, type Settings } from './scenarios.js';
import type { RunningTarget, Target } from './servers.js';
import { Histogram } from './stats.js';

export const DRAIN_WORKER: Scenario = {
  name: 'drain-worker', workload: 'drain', persistence: 'everysec', pipelined: false, baseline: 'drain', nodeWorkers: true,
  what: `drain by redstalk-client Workers (reserve-many, prefetch ${PREFETCH}); beanstalkd: plain drain`,
};

const PRI = 100;
const WARMUP_MS = 1000;
const POLL_MS = 20;
const PROGRESS_MS = 1000;

export async function measureDrainWorker(scenario: Scenario, target: Target, round: number, settings: Settings): Promise<Measurement> {
  if (target === 'beanstalkd') return measure(scenario, target, round, settings);
  return onFreshTarget(scenario, target, round, 'redstalk-client Workers', (server, meter) => drainWithWorkers(server, meter, scenario, target, round, settings));
}

/** Jobs still in the server, any state; NaN (a failed check) when it does not answer. */
async function jobsLeft(port: number): Promise<number> {
  const c = await Client.connect({ port }).catch(() => null);
  if (!c) return NaN;
  try {
    const s = await c.stats();
    return s['current-jobs-ready'] + s['current-jobs-reserved'] + s['current-jobs-delayed'] + s['current-jobs-buried'];
  } catch {
    return NaN;
  } finally {
    await c.close();
  }
}

async function drainWithWorkers(server: RunningTarget, meter: CpuMeter, scenario: Scenario, target: Target, round: number, s: Settings): Promise<Measurement> {
  const label = `${scenario.name} ${target}`;
  const ledger = new Ledger();
  const durationMs = s.durationS * 1000;
  const warmupMs = Math.min(WARMUP_MS, durationMs / 10);
  const errors: Record<string, number> = {};
  const error = (what: string) => { errors[what] = (errors[what] ?? 0) + 1; };
  const port = (i: number) => server.ports[i % server.ports.length]!;

  // The same fill as `drain`: pipelined puts on every connection, at most --fill jobs or --duration.
  const perClient = Math.ceil(s.fill / s.clients);
  const producers: ProducerSpec[] = Array.from({ length: s.clients }, (_, i) => ({ port: port(i), index: i, pri: PRI, limit: perClient }));
  const filled = await runPhase({ label: `${label} fill`, producers, consumers: [], depth: s.depth, payload: s.payload, durationMs, warmupMs, ledger });
  for (const [what, n] of Object.entries(filled.errors)) errors[what] = (errors[what] ?? 0) + n;

  let handled = 0;
  const took = (body: Buffer) => {
    if (!ledger.reserved(body, 0, body.length, s.payload)) error('reserved a body the generator did not write');
    handled++;
  };
  const t0 = clock();
  const workers = await startWorkers(server.ports, s.clients, took, error);

  const started = { at: t0, handled: 0, cpu: meter.sample() };
  let windowStart = started;
  let last = { at: t0, handled: 0 };
  let nextProgress = t0 + PROGRESS_MS;
  let measuring = false;
  for (let now = clock(); handled < filled.puts && now - t0 < durationMs; now = clock()) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (!measuring && now - t0 >= warmupMs) {
      measuring = true;
      windowStart = { at: now, handled, cpu: meter.sample() };
    }
    if (now >= nextProgress) {
      process.stderr.write(`  ${label}  ${((now - t0) / 1000).toFixed(0).padStart(3)}s  handled ${handled}  (${Math.round(((handled - last.handled) * 1000) / (now - last.at))} jobs/s)\n`);
      last = { at: now, handled };
      nextProgress += PROGRESS_MS;
    }
  }
  const end = { at: clock(), handled, cpu: meter.sample() };
  if (!measuring) windowStart = started; // over before the warm-up was
  // Graceful: the prefetched and unstarted go back to the server, every delete is answered.
  await workers.stop();

  const leftInServer = await jobsLeft(server.ports[0]!);
  const checked = ledger.check();
  const windowJobs = end.handled - windowStart.handled;
  const load: PhaseResult = {
    windowMs: end.at - windowStart.at,
    elapsedMs: end.at - t0,
    puts: 0,
    reserves: handled,
    deletes: handled,
    windowPuts: 0,
    windowDeletes: windowJobs,
    errors,
    putRtt: new Histogram(),
    reserveRtt: new Histogram(),
    endToEnd: new Histogram(),
    endToEndFromSend: new Histogram(),
    sendLag: new Histogram(),
  };
  return {
    scenario: scenario.name,
    target,
    round,
    commands: server.commands,
    jobs: windowJobs,
    windowMs: load.windowMs,
    // The Worker reserves in batches and hands jobs out of its buffer: there is no per-job reserve round trip to time.
    latency: load.reserveRtt,
    load,
    fill: { jobs: filled.puts, ms: filled.elapsedMs },
    errors,
    check: { ...checked, leftInServer, lost: checked.inserted - checked.reserved - leftInServer },
    cpu: meter.use(await windowStart.cpu, await end.cpu, windowJobs),
  };
}
