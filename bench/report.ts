// Turns measurements into the table (stdout) and the JSON file: rounds of the
// same scenario and target are added up (jobs over time, histograms merged,
// CPU seconds over jobs), and each redstalk row is divided by the beanstalkd
// and the bullmq row of the same run, and by the baseline's (an old redstalk
// commit, run.ts --baseline).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { combineUse, rolePerJob, roleUsPerJob, serverSideUsPerJob, type CpuUse } from './cpu.js';
import { LATENCY_OF, SCENARIOS, type Measurement, type Settings } from './scenarios.js';
import { beanstalkdBinary, ROOT, TARGETS, type Target } from './servers.js';
import { formatNumber, formatTable, Histogram, type LatencySummary } from './stats.js';

export interface Row {
  scenario: string;
  target: Target;
  jobsPerSec: number;
  latencyOf: string;
  latency: LatencySummary;
  /** Fixed-rate runs: end-to-end from the actual send, and how late the generator sent. */
  openLoop?: { fromSend: LatencySummary; sendLag: LatencySummary };
  lost: number;
  duplicates: number;
  unknown: number;
  errors: number;
  /** CPU per job of each process (by label), all rounds together. */
  cpu: CpuUse[];
  /** Every redis-server added up (NaN without one): scripts run (EVALSHA, EVAL, FCALL) and reads from clients, per job. */
  scriptCallsPerJob: number;
  redisReadsPerJob: number;
}

function sum<T>(items: T[], of: (t: T) => number): number {
  return items.reduce((total, t) => total + of(t), 0);
}

function merged(ms: Measurement[], of: (m: Measurement) => Histogram): LatencySummary {
  const h = new Histogram();
  for (const m of ms) h.add(of(m));
  return h.summary();
}

export function aggregate(measurements: Measurement[]): Row[] {
  const groups = new Map<string, Measurement[]>();
  for (const m of measurements) {
    const key = `${m.scenario}\0${m.target}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const order = (r: Row) => SCENARIOS.findIndex((s) => s.name === r.scenario) * TARGETS.length + TARGETS.indexOf(r.target);
  return [...groups.values()].map((ms): Row => {
    const { scenario, target } = ms[0]!;
    const { workload } = SCENARIOS.find((s) => s.name === scenario)!;
    const cpu = combineUse(ms);
    return {
      scenario,
      target,
      jobsPerSec: (sum(ms, (m) => m.jobs) * 1000) / sum(ms, (m) => m.windowMs),
      latencyOf: LATENCY_OF[workload],
      latency: merged(ms, (m) => m.latency),
      openLoop: workload === 'rate' ? { fromSend: merged(ms, (m) => m.load.endToEndFromSend), sendLag: merged(ms, (m) => m.load.sendLag) } : undefined,
      lost: sum(ms, (m) => Math.abs(m.check.lost)),
      duplicates: sum(ms, (m) => m.check.duplicates),
      unknown: sum(ms, (m) => m.check.unknown),
      errors: sum(ms, (m) => sum(Object.values(m.errors), (n) => n)),
      cpu,
      scriptCallsPerJob: rolePerJob(cpu, 'redis', 'scriptCallsPerJob'),
      redisReadsPerJob: rolePerJob(cpu, 'redis', 'readsPerJob'),
    };
  }).sort((a, b) => order(a) - order(b));
}

export function failed(row: Row): boolean {
  return row.lost !== 0 || row.duplicates !== 0 || row.unknown !== 0 || row.errors !== 0;
}

function peer(rows: Row[], row: Row, target: Target): Row | undefined {
  return rows.find((r) => r.scenario === row.scenario && r.target === target);
}

/** Both redstalks (this checkout's and the old commit's) and the floor on Redis get the x bs and x bullmq columns. */
const hasPeerColumns = (row: Row) => row.target === 'redstalk' || row.target === 'baseline' || row.target === 'floor-redis';

/**
 * BullMQ's row to compare a redstalk row with: the same scenario's, or, for
 * redstalk's Workers (drain-worker, mixed-worker: BullMQ does not play them),
 * that of the plain scenario they are compared with.
 */
function bullmqPeer(rows: Row[], row: Row): Row | undefined {
  const scenario = SCENARIOS.find((s) => s.name === row.scenario);
  const name = scenario?.nodeWorkers && scenario.baseline ? scenario.baseline : row.scenario;
  return rows.find((r) => r.scenario === name && r.target === 'bullmq');
}

export function table(rows: Row[]): string {
  const body = rows.map((r) => {
    const [bs, bullmq] = hasPeerColumns(r) ? [peer(rows, r, 'beanstalkd'), bullmqPeer(rows, r)] : [];
    return [
      r.scenario, r.target, r.jobsPerSec, bs ? r.jobsPerSec / bs.jobsPerSec : '', bullmq ? r.jobsPerSec / bullmq.jobsPerSec : '',
      roleUsPerJob(r.cpu, 'client'), roleUsPerJob(r.cpu, 'server'), roleUsPerJob(r.cpu, 'redis'), r.scriptCallsPerJob,
      r.latency.p50, r.latency.p99, r.latency.p999, bs ? r.latency.p99 / bs.latency.p99 : '',
      r.latencyOf, r.lost, r.duplicates + r.unknown, r.errors,
    ];
  });
  return formatTable(
    ['scenario', 'target', 'jobs/s', 'x bs', 'x bullmq', 'client µs', 'server µs', 'redis µs', 'scripts/job', 'p50 ms', 'p99 ms', 'p99.9 ms', 'p99 x bs', 'latency of', 'lost', 'dup', 'errors'],
    body,
  );
}

const ms = (n: number) => `${formatNumber(n)} ms`;

/** A figure of redstalk's, the baseline's, and redstalk's over the baseline's. */
interface Versus { redstalk: number; baseline: number; ratio: number }

/** redstalk against the baseline (an old commit) in one scenario of the run. */
export interface VersusBaseline { scenario: string; jobsPerSec: Versus; sidecarUsPerJob: Versus; redisUsPerJob: Versus }

const versus = (redstalk: number, baseline: number): Versus => ({ redstalk, baseline, ratio: redstalk / baseline });

/** Every scenario both redstalk and the baseline played, with the CPU per job the table shows (server = the sidecars). */
export function versusBaseline(rows: Row[]): VersusBaseline[] {
  return rows.flatMap((r) => {
    const base = r.target === 'redstalk' ? peer(rows, r, 'baseline') : undefined;
    if (!base) return [];
    const us = (role: 'server' | 'redis') => versus(roleUsPerJob(r.cpu, role), roleUsPerJob(base.cpu, role));
    return [{ scenario: r.scenario, jobsPerSec: versus(r.jobsPerSec, base.jobsPerSec), sidecarUsPerJob: us('server'), redisUsPerJob: us('redis') }];
  });
}

function versusLine(v: VersusBaseline): string {
  // Two decimals: old and new commits differ by percents, where 3 significant digits would print 1.0025 as "1".
  const x = (f: Versus) => (Number.isFinite(f.ratio) ? `${f.ratio.toFixed(2)}x` : '-');
  const cpu = (f: Versus) => `${formatNumber(f.redstalk)} vs ${formatNumber(f.baseline)} (${x(f)})`;
  return `${v.scenario} redstalk / baseline: jobs/s ${x(v.jobsPerSec)}; CPU µs per job: sidecar ${cpu(v.sidecarUsPerJob)}, redis ${cpu(v.redisUsPerJob)}`;
}

/**
 * Lines under the table: "mixed-backlog vs mixed: redstalk -3.1% jobs/s, ..." for
 * scenarios that name a baseline, and the fixed-rate runs' latency without the
 * generator's own timer lag.
 */
export function comparisons(rows: Row[]): string[] {
  const lines: string[] = [];
  for (const r of rows) {
    if (!r.openLoop) continue;
    const { fromSend, sendLag } = r.openLoop;
    lines.push(`${r.scenario} ${r.target}: from the actual send p50 ${ms(fromSend.p50)}, p99 ${ms(fromSend.p99)}, p99.9 ${ms(fromSend.p999)}; generator send lag p50 ${ms(sendLag.p50)}, p99 ${ms(sendLag.p99)}`);
  }
  for (const s of SCENARIOS) {
    if (!s.baseline) continue;
    const parts = rows.filter((r) => r.scenario === s.name).flatMap((r) => {
      const base = rows.find((b) => b.scenario === s.baseline && b.target === r.target);
      if (!base) return [];
      const change = (r.jobsPerSec / base.jobsPerSec - 1) * 100;
      return [`${r.target} ${change >= 0 ? '+' : ''}${change.toFixed(1)}% jobs/s`];
    });
    if (parts.length) lines.push(`${s.name} vs ${s.baseline}: ${parts.join(', ')}`);
  }
  for (const r of rows) {
    const bullmq = r.target === 'redstalk' ? bullmqPeer(rows, r) : undefined;
    if (!bullmq) continue;
    const us = (row: Row) => sum(row.cpu, (u) => u.usPerJob);
    const of = bullmq.scenario === r.scenario ? '' : ` (${bullmq.scenario})`;
    lines.push(`${r.scenario} redstalk / bullmq${of}: ${formatNumber(r.jobsPerSec / bullmq.jobsPerSec)}x jobs/s; CPU µs per job, all processes: `
      + `redstalk ${formatNumber(us(r))} (generator + sidecar + redis), bullmq ${formatNumber(us(bullmq))} (BullMQ clients + redis): ${formatNumber(us(r) / us(bullmq))}x`);
  }
  return [...lines, ...versusBaseline(rows).map(versusLine), ...floorLines(rows)];
}

/**
 * The sidecars' CPU per job beside the floor's (a Node server with no store) in the same scenario,
 * and sidecar + Redis beside floor-redis' (that server with its jobs in Redis).
 */
function floorLines(rows: Row[]): string[] {
  return rows.flatMap((r) => {
    if (r.target !== 'redstalk') return [];
    const base = peer(rows, r, 'baseline');
    const redstalks = base ? [r, base] : [r];
    const lines: string[] = [];
    const floor = peer(rows, r, 'floor');
    if (floor) {
      const least = roleUsPerJob(floor.cpu, 'server');
      const sidecar = (row: Row) => {
        const us = roleUsPerJob(row.cpu, 'server');
        return `${row.target} ${formatNumber(us)} (${(us / least).toFixed(2)}x the floor)`;
      };
      lines.push(`${r.scenario} sidecar CPU µs per job: floor ${formatNumber(least)}, ${redstalks.map(sidecar).join(', ')}`);
    }
    const onRedis = peer(rows, r, 'floor-redis');
    if (onRedis) {
      const total = (row: Row) => serverSideUsPerJob(row.cpu);
      const parts = (row: Row) => `${formatNumber(roleUsPerJob(row.cpu, 'server'))} + ${formatNumber(roleUsPerJob(row.cpu, 'redis'))}`;
      const least = total(onRedis);
      const bs = peer(rows, r, 'beanstalkd');
      const ofBs = (row: Row) => (bs ? `, ${(total(row) / total(bs)).toFixed(2)}x beanstalkd's` : '');
      lines.push(`${r.scenario} sidecar + Redis CPU µs per job: floor-redis ${parts(onRedis)} = ${formatNumber(least)}${ofBs(onRedis)}, `
        + redstalks.map((row) => `${row.target} ${parts(row)} = ${formatNumber(total(row))} (${(total(row) / least).toFixed(2)}x floor-redis${ofBs(row)})`).join(', '));
    }
    return lines;
  });
}

function firstLine(binary: string, args: string[], otherwise = 'not installed'): string {
  try {
    return execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n')[0]!;
  } catch {
    return otherwise;
  }
}

/** A checkout and its HEAD (redstalk's may also have uncommitted edits). */
function checkout(dir: string): { dir: string; head: string } {
  return { dir, head: firstLine('git', ['-C', dir, 'rev-parse', 'HEAD'], 'unknown') };
}

export function machine(): Record<string, string | number> {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    redis: firstLine('redis-server', ['--version']),
    beanstalkd: `${firstLine(beanstalkdBinary, ['-v'])} (${beanstalkdBinary})`,
  };
}

function summaries(m: Measurement): Record<string, LatencySummary> {
  const { putRtt, reserveRtt, endToEnd, endToEndFromSend, sendLag } = m.load;
  return {
    putRtt: putRtt.summary(), reserveRtt: reserveRtt.summary(), endToEnd: endToEnd.summary(),
    endToEndFromSend: endToEndFromSend.summary(), sendLag: sendLag.summary(),
  };
}

/**
 * `baseline`: the --baseline checkout, if any; then the JSON has `versusBaseline`.
 * `sections`: the sections under the table (light, capacity), each written when it has figures.
 */
export function writeJson(file: string, settings: Settings, measurements: Measurement[], rows: Row[], baseline?: string, sections: Record<string, unknown[]> = {}): void {
  const out = {
    date: new Date().toISOString(),
    command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    machine: machine(),
    settings,
    rows,
    comparisons: comparisons(rows),
    ...Object.fromEntries(Object.entries(sections).filter(([, figures]) => figures.length)),
    ...(baseline !== undefined && {
      versusBaseline: { redstalk: checkout(ROOT), baseline: checkout(path.resolve(baseline)), scenarios: versusBaseline(rows) },
    }),
    measurements: measurements.map((m) => ({
      scenario: m.scenario,
      target: m.target,
      round: m.round,
      commands: m.commands,
      jobsPerSec: (m.jobs * 1000) / m.windowMs,
      windowMs: m.windowMs,
      puts: m.load.puts,
      reserves: m.load.reserves,
      deletes: m.load.deletes,
      fill: m.fill && { ...m.fill, perSec: (m.fill.jobs * 1000) / m.fill.ms },
      latency: summaries(m),
      check: m.check,
      errors: m.errors,
      cpu: m.cpu,
    })),
  };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(out, (_, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
}
