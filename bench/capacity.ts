// capacity: what a Redis core spends per job when the calls are full bounds
// what one primary carries. Put and drain, pipelined (16 commands in flight on
// each client, so the sidecar's batch calls are full), on the 24 tubes of the
// scale scenarios (two in each of 12 shards), no persistence: redstalk on one
// Redis (--shards 1) against in-memory beanstalkd, and on a 3-primary Redis
// Cluster (--shards 12) against the one Redis. Reported after the table:
// - one Redis' CPU µs per job over beanstalkd's (below 1: one Redis core
//   carries more jobs than one beanstalkd core);
// - the cluster primaries' CPU µs per job added up, over the one Redis'
//   (what cutting the data set into shards costs in all), and the projected
//   capacity, primaries x one Redis' CPU per job / the summed: the multiple of
//   one Redis' throughput the cluster carries once Redis is the bottleneck and
//   the load is spread evenly (from the busiest primary, as scale.ts does, in
//   the JSON as busiestProjected).
import { roleUsPerJob } from './cpu.js';
import type { Row } from './report.js';
import { list, PRIMARIES, redisOf, SHARDS, TUBE_NAMES } from './scale.js';
import type { Scenario } from './scenarios.js';
import type { Target } from './servers.js';
import { formatNumber, formatTable } from './stats.js';

/** Commands in flight per client: enough that every batch call is full. */
const DEPTH = 16;
const WORKLOADS = ['put', 'drain'] as const;
type Workload = (typeof WORKLOADS)[number];

const COMMON = {
  group: 'capacity', persistence: 'memory', pipelined: true, depth: DEPTH, tubes: TUBE_NAMES.length, tubeNames: TUBE_NAMES,
} as const satisfies Partial<Scenario>;

const oneRedis = (w: Workload) => `capacity-${w}`;
const cluster = (w: Workload) => `capacity-${w}-cluster`;

export const CAPACITY_SCENARIOS: Scenario[] = WORKLOADS.flatMap((w): Scenario[] => [
  { ...COMMON, name: oneRedis(w), workload: w, shards: 1, what: `${w}, ${DEPTH} in flight per client, ${TUBE_NAMES.length} tubes; one Redis (no persistence, --shards 1) vs in-memory beanstalkd` },
  {
    ...COMMON, name: cluster(w), workload: w, clusterPrimaries: PRIMARIES, shards: SHARDS, targets: ['redstalk'], baseline: oneRedis(w),
    what: `${oneRedis(w)} on a ${PRIMARIES}-primary Redis Cluster, --shards ${SHARDS}`,
  },
]);

export interface CapacityFigures {
  workload: Workload;
  /** redstalk, or the baseline (an old commit, --baseline) */
  target: Target;
  /** Redis CPU µs per job: redstalk's one Redis; beanstalkd's (all of it) in the same run. */
  oneRedisUsPerJob: number;
  beanstalkdUsPerJob: number;
  /** oneRedis / beanstalkd: below 1, one Redis core carries 1/x what one beanstalkd core carries. */
  oneRedisVsBeanstalkd: number;
  oneRedisScriptCallsPerJob: number;
  cluster?: {
    primaries: number;
    shards: number;
    perPrimaryUsPerJob: number[];
    summedUsPerJob: number;
    /** summed / one Redis. */
    summedVsOneRedis: number;
    /** primaries x one Redis / summed. */
    projectedCapacity: number;
    /** one Redis / the busiest primary. */
    busiestProjected: number;
    scriptCallsPerJob: number;
  };
}

export function capacityFigures(rows: Row[]): CapacityFigures[] {
  const row = (scenario: string, target: Target) => rows.find((r) => r.scenario === scenario && r.target === target);
  const pairs = WORKLOADS.flatMap((workload) => (['redstalk', 'baseline'] as const).map((target) => ({ workload, target })));
  return pairs.flatMap(({ workload, target }): CapacityFigures[] => {
    const one = row(oneRedis(workload), target);
    const onCluster = row(cluster(workload), target);
    if (!one && !onCluster) return [];
    const bs = row(oneRedis(workload), 'beanstalkd');
    const oneUs = one ? roleUsPerJob(one.cpu, 'redis') : NaN;
    const bsUs = bs ? roleUsPerJob(bs.cpu, 'server') : NaN;
    const figures: CapacityFigures = {
      workload, target, oneRedisUsPerJob: oneUs, beanstalkdUsPerJob: bsUs, oneRedisVsBeanstalkd: oneUs / bsUs,
      oneRedisScriptCallsPerJob: one?.scriptCallsPerJob ?? NaN,
    };
    if (!onCluster) return [figures];
    const perPrimary = redisOf(onCluster).map((u) => u.usPerJob);
    const summed = roleUsPerJob(onCluster.cpu, 'redis');
    return [{
      ...figures,
      cluster: {
        primaries: perPrimary.length, shards: SHARDS, perPrimaryUsPerJob: perPrimary, summedUsPerJob: summed,
        summedVsOneRedis: summed / oneUs, projectedCapacity: (perPrimary.length * oneUs) / summed,
        busiestProjected: oneUs / Math.max(...perPrimary), scriptCallsPerJob: onCluster.scriptCallsPerJob,
      },
    }];
  });
}

/** The capacity section under the table. */
export function capacityLines(figures: CapacityFigures[]): string[] {
  if (!figures.length) return [];
  const x = (ratio: number) => (Number.isFinite(ratio) ? `${formatNumber(ratio)}x` : '-');
  return [
    '',
    `capacity: Redis CPU µs per job at full batches (${DEPTH} commands in flight per client, ${TUBE_NAMES.length} tubes, no persistence; beanstalkd in memory)`,
    formatTable(
      ['workload', 'target', 'one Redis µs', 'beanstalkd µs', 'x bs', 'cluster µs per primary', 'summed µs', 'x one Redis', 'projected capacity', 'scripts/job one / cluster'],
      figures.map((f) => [
        f.workload, f.target, f.oneRedisUsPerJob, f.beanstalkdUsPerJob, x(f.oneRedisVsBeanstalkd),
        f.cluster ? list(f.cluster.perPrimaryUsPerJob) : '', f.cluster?.summedUsPerJob ?? '', f.cluster ? x(f.cluster.summedVsOneRedis) : '',
        f.cluster ? `${x(f.cluster.projectedCapacity)} (busiest: ${x(f.cluster.busiestProjected)})` : '',
        `${formatNumber(f.oneRedisScriptCallsPerJob)} / ${formatNumber(f.cluster?.scriptCallsPerJob ?? NaN)}`,
      ]),
    ),
    'x bs: one Redis\' CPU per job over beanstalkd\'s (one Redis core carries 1/x what one beanstalkd core carries).',
    `projected capacity: ${PRIMARIES} primaries x one Redis' CPU per job / the primaries' summed (busiest: one Redis' / the busiest primary's): the multiple of one Redis' throughput the cluster carries once Redis is the bottleneck.`,
  ];
}
