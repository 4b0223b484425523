// scale: does redstalk's work spread over a Redis Cluster? 24 tubes, --clients
// producers and --clients consumers (mixed, blocking reserve) over 2
// sidecars, played (a) on one Redis with --shards 1, (b) on a 3-primary Redis
// Cluster with --shards 12 (4 shards on each primary), (c) as (b) with
// --workers 2 on each sidecar. No persistence on either Redis (the cluster
// helper's nodes have none), so Redis' CPU is its commands and its network.
//
// The 2-core machine cannot run three primaries at full speed beside the
// sidecars and the generator, so the cluster's capacity is projected from CPU
// per job: one primary's Redis CPU per job over the busiest cluster primary's
// is how many times one primary's throughput the cluster carries when Redis
// is the bottleneck, as it is once the sidecars run on machines of their own.
import { Layout } from '../src/store/layout.js';
import { roleUsPerJob, type CpuUse } from './cpu.js';
import type { Row } from './report.js';
import { tubeName, type Scenario } from './scenarios.js';
import { formatNumber, formatTable } from './stats.js';

const TUBES = 24;
export const PRIMARIES = 3;
export const SHARDS = 12;

/**
 * 24 tube names, two in each of the 12 shards: a tube's shard is a hash of its
 * name, and 24 names taken as they come put 9, 11 and 4 tubes on the three
 * primaries (tube-0 .. tube-23); with thousands of tubes the hash evens out by
 * itself, with 24 it needs names chosen so.
 */
function evenTubeNames(): string[] {
  const layout = new Layout('bench', SHARDS);
  const perShard = new Array<number>(SHARDS).fill(0);
  const names: string[] = [];
  for (let i = 0; names.length < TUBES; i++) {
    const s = layout.shardOf(tubeName(i));
    if (perShard[s]! < TUBES / SHARDS) { perShard[s]!++; names.push(tubeName(i)); }
  }
  return names;
}
export const TUBE_NAMES = evenTubeNames();

const COMMON: Omit<Scenario, 'name' | 'what'> = {
  group: 'scale', workload: 'mixed', persistence: 'memory', pipelined: false, targets: ['redstalk'],
  sidecars: 2, tubes: TUBES, tubeNames: TUBE_NAMES, clientsEach: true,
};

export const SCALE_SCENARIOS: Scenario[] = [
  { ...COMMON, name: 'scale', shards: 1, what: '24 tubes, --clients producers + --clients consumers over 2 sidecars; 1 Redis, --shards 1' },
  { ...COMMON, name: 'scale-cluster', clusterPrimaries: PRIMARIES, shards: SHARDS, baseline: 'scale', what: 'scale on a 3-primary Redis Cluster, --shards 12' },
  { ...COMMON, name: 'scale-cluster-workers2', clusterPrimaries: PRIMARIES, shards: SHARDS, workers: 2, baseline: 'scale', what: 'scale-cluster with --workers 2 on each sidecar' },
];

/** Within this spread of the primaries' CPU per job the shards count as evenly spread. */
const SPREAD_TARGET = 0.15;

export const redisOf = (row: Row): CpuUse[] => row.cpu.filter((u) => u.role === 'redis');
const sidecarsUs = (row: Row) => roleUsPerJob(row.cpu, 'server');
const spread = (xs: number[]) => Math.max(...xs) / Math.min(...xs) - 1;
const percent = (x: number) => `${(x * 100).toFixed(1)}%`;
export const list = (xs: number[]) => xs.map(formatNumber).join(' / ');

/**
 * How many of the tubes each primary holds: a tube's shard is a hash of its
 * name, and shard i of 12 lies in the i-th twelfth of the slots, so on
 * primary floor(i / 4) of the three (in slot order).
 */
function tubesPerPrimary(): number[] {
  const layout = new Layout('bench', SHARDS);
  const counts = new Array<number>(PRIMARIES).fill(0);
  for (const name of TUBE_NAMES) counts[Math.floor((layout.shardOf(name) * PRIMARIES) / SHARDS)]!++;
  return counts;
}

/** The scale section under the table: per primary CPU per job, spread, projected capacity, workers 2 vs 1. */
export function scaleReport(rows: Row[]): string[] {
  const row = (name: string) => rows.find((r) => r.scenario === name && r.target === 'redstalk');
  const measured = SCALE_SCENARIOS.map((s) => row(s.name)).filter((r): r is Row => r !== undefined);
  if (!measured.length) return [];
  const perPrimary = (r: Row) => ({
    proc: redisOf(r).map((u) => u.usPerJob),
    commands: redisOf(r).map((u) => u.commandUsPerJob ?? NaN),
    scripts: redisOf(r).map((u) => u.scriptCallsPerJob ?? NaN),
  });
  const lines = [
    '',
    `scale: ${TUBES} tubes, producers and consumers over 2 sidecars, no persistence; per Redis primary (in slot order): CPU µs per job from /proc and from INFO commandstats, scripts run per job`,
    formatTable(
      ['scenario', 'jobs/s', 'sidecars µs', 'redis µs /proc', 'redis µs cmdstats', 'scripts/job', 'spread /proc', 'spread cmdstats'],
      measured.map((r) => {
        const p = perPrimary(r);
        const several = p.proc.length > 1;
        return [r.scenario, r.jobsPerSec, sidecarsUs(r), list(p.proc), list(p.commands), list(p.scripts), several ? percent(spread(p.proc)) : '', several ? percent(spread(p.commands)) : ''];
      }),
    ),
  ];
  if (measured.some((r) => redisOf(r).length > 1)) {
    lines.push(`tubes per primary on the cluster: ${tubesPerPrimary().join(' / ')} (names hashed to ${SHARDS} shards, ${SHARDS / PRIMARIES} shards on each primary)`);
  }
  const single = row('scale');
  for (const cluster of measured.filter((r) => r !== single)) {
    const p = perPrimary(cluster);
    const within = (x: number) => (x <= SPREAD_TARGET ? 'within' : 'NOT within');
    lines.push(`${cluster.scenario}: primaries' CPU per job spread ${percent(spread(p.proc))} (/proc), ${percent(spread(p.commands))} (commandstats): ${within(spread(p.proc))} the ${percent(SPREAD_TARGET)} target`);
    if (single) {
      const one = perPrimary(single);
      lines.push(`${cluster.scenario}: projected capacity with Redis the bottleneck: ${formatNumber(one.proc[0]! / Math.max(...p.proc))}x one primary (/proc), ${formatNumber(one.commands[0]! / Math.max(...p.commands))}x (commandstats)`);
    }
  }
  const [withOne, withTwo] = [row('scale-cluster'), row('scale-cluster-workers2')];
  if (withOne && withTwo) lines.push(`--workers 2 vs 1 (scale-cluster-workers2 / scale-cluster): ${formatNumber(withTwo.jobsPerSec / withOne.jobsPerSec)}x jobs/s, sidecar CPU per job ${formatNumber(sidecarsUs(withTwo) / sidecarsUs(withOne))}x`);
  lines.push(
    'This machine has 2 cores for the primaries, the sidecars and the load generator together: it cannot show the cluster\'s 3x in jobs/s.',
    'The projected capacity is one primary\'s Redis CPU per job over the busiest cluster primary\'s: the multiple of one primary\'s throughput once Redis is the bottleneck.',
  );
  return lines;
}
