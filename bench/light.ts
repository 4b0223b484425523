// light: most queues run far below saturation, with many idle consumers
// blocked in reserve. 10 producers put 100-byte jobs at a fixed total rate
// (open loop, as `latency`), 50 consumers block in reserve-with-timeout 1 and
// loop; AOF everysec against beanstalkd's binlog. What counts here is what
// every job costs each process (at a low rate the wake-ups, timers and calls
// per job, not the work of a batch) and the put -> reserved latency; for
// redstalk also how many scripts Redis ran per job (INFO commandstats) and how
// many reads from its clients it processed per job (its wake-ups for input).
import { roleUsPerJob, serverSideUsPerJob } from './cpu.js';
import type { Row } from './report.js';
import type { Scenario } from './scenarios.js';
import type { Target } from './servers.js';
import { formatNumber } from './stats.js';

const PRODUCERS = 10;
const CONSUMERS = 50;
export const LIGHT_RATES = [200, 1000] as const;
/**
 * The sidecar's code paths warm up (JIT, first calls) in the first second or two, and at a
 * fixed rate the jobs held up meanwhile are caught up later: 2 s are left out of the window.
 */
const WARMUP_MS = 2000;

export const LIGHT_SCENARIOS: Scenario[] = LIGHT_RATES.map((rate) => ({
  name: `light-${rate}`, group: 'light', workload: 'rate', persistence: 'everysec', pipelined: false,
  producers: PRODUCERS, consumers: CONSUMERS, rate, warmupMs: WARMUP_MS,
  what: `${PRODUCERS} producers putting ${rate} jobs/s in all, ${CONSUMERS} consumers blocked in reserve-with-timeout; AOF everysec vs binlog`,
}));

/** One light scenario on one target; the ratios are to beanstalkd's row of the same run. */
export interface LightFigures {
  scenario: string;
  target: Target;
  jobsPerSec: number;
  /** CPU µs per job: client = the load generator; server = the sidecar(s) or beanstalkd; serverSide = server + redis. */
  cpuUsPerJob: { client: number; server: number; redis: number; serverSide: number };
  putToReservedMs: { p50: number; p99: number };
  /** Every redis-server added up: scripts run and reads from clients per job (NaN for beanstalkd). */
  scriptCallsPerJob: number;
  redisReadsPerJob: number;
  versusBeanstalkd?: { cpu: number; p99: number };
}

export function lightFigures(rows: Row[]): LightFigures[] {
  const names = new Set(LIGHT_SCENARIOS.map((s) => s.name));
  const figures = (r: Row): Omit<LightFigures, 'versusBeanstalkd'> => {
    const [client, server, redis] = (['client', 'server', 'redis'] as const).map((role) => roleUsPerJob(r.cpu, role)) as [number, number, number];
    return {
      scenario: r.scenario, target: r.target, jobsPerSec: r.jobsPerSec,
      cpuUsPerJob: { client, server, redis, serverSide: serverSideUsPerJob(r.cpu) },
      putToReservedMs: { p50: r.latency.p50, p99: r.latency.p99 },
      scriptCallsPerJob: r.scriptCallsPerJob, redisReadsPerJob: r.redisReadsPerJob,
    };
  };
  return rows.filter((r) => names.has(r.scenario)).map((r) => {
    const mine = figures(r);
    const bs = r.target !== 'beanstalkd' ? rows.find((b) => b.scenario === r.scenario && b.target === 'beanstalkd') : undefined;
    if (!bs) return mine;
    const theirs = figures(bs);
    return { ...mine, versusBeanstalkd: { cpu: mine.cpuUsPerJob.serverSide / theirs.cpuUsPerJob.serverSide, p99: mine.putToReservedMs.p99 / theirs.putToReservedMs.p99 } };
  });
}

/** The light section under the table: a line per scenario and target. */
export function lightLines(figures: LightFigures[]): string[] {
  if (!figures.length) return [];
  const n = formatNumber;
  const x = (ratio: number) => `${ratio.toFixed(2)}x beanstalkd's`;
  return [
    '',
    `light: ${PRODUCERS} producers at a fixed total rate, ${CONSUMERS} consumers blocked in reserve; CPU µs per job of each process, put -> reserved latency`,
    ...figures.map((f) => {
      const { client, server, redis, serverSide } = f.cpuUsPerJob;
      const v = f.versusBeanstalkd;
      const cpu = Number.isNaN(redis) ? `server ${n(server)}` : `sidecar ${n(server)} + redis ${n(redis)} = ${n(serverSide)}`;
      const calls = Number.isNaN(f.scriptCallsPerJob) ? '' : `; Redis per job: ${n(f.scriptCallsPerJob)} script calls, ${n(f.redisReadsPerJob)} reads`;
      return `${f.scenario} ${f.target}: ${n(f.jobsPerSec)} jobs/s; CPU µs per job ${cpu}${v ? ` (${x(v.cpu)})` : ''}, clients ${n(client)}; `
        + `put -> reserved p50 ${n(f.putToReservedMs.p50)} ms, p99 ${n(f.putToReservedMs.p99)} ms${v ? ` (${x(v.p99)})` : ''}${calls}`;
    }),
  ];
}
