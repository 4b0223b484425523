// Which data set the integration and differential suites run against: one
// Redis with one shard (npm test's first pass), one Redis with
// TEST_SHARDS shards, or the Redis Cluster whose URL
// TEST_CLUSTER_URL gives (started once by test/variants/cluster-setup.ts).
// See test/variants/README.md.

import { Cluster, Redis } from 'ioredis';
export const testShards = Number(process.env.TEST_SHARDS ?? 1);
export const testClusterUrl = process.env.TEST_CLUSTER_URL ?? '';
/** The suites run on the shared test cluster: tests that drive or read one redis-server themselves are skipped. */
export const onCluster = testClusterUrl !== '';
/** Ids are not 1, 2, 3... with several shards (id = seq * shards + shard): the Wire helper shows them by put order. */
export const rankedIds = testShards > 1;

/** A Redis client of the data set the suites run against: the test's own Redis, or the shared cluster. */
export function dataSetClient(redisUrl: string): Redis | Cluster {
  if (!onCluster) return new Redis(redisUrl);
  // redis-cluster://host:port,host:port,...
  return new Cluster(testClusterUrl.slice('redis-cluster://'.length).split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host: host!, port: Number(port) };
  }));
}

/** The sidecar's port -> its data set (Redis and key prefix), so connections to sidecars of one data set share id ranks. */
const prefixes = new Map<number | string, string>();

/** `port`: a TCP port, or the path of a UNIX socket. */
export function registerSidecar(port: number | string, redis: string, prefix: string): void {
  prefixes.set(port, `${redis} ${prefix}`);
}

/** A stopped sidecar's port may be reused by anything (a beanstalkd): it no longer ranks ids. */
export function unregisterSidecar(port: number | string): void {
  prefixes.delete(port);
}

const ranksByPrefix = new Map<string, JobIdRanks>();

/** The id ranks of the data set a port serves, when ids are ranked. */
export function idRanksFor(port: number | string): JobIdRanks | null {
  if (!rankedIds) return null;
  const prefix = prefixes.get(port);
  if (prefix === undefined) return null;
  let ranks = ranksByPrefix.get(prefix);
  if (!ranks) { ranks = new JobIdRanks(); ranksByPrefix.set(prefix, ranks); }
  return ranks;
}

/**
 * Job ids as their rank in put order (1, 2, 3... as one shard numbers them),
 * the rule of the differential normaliser (job-id-placeholders): a put that
 * uses up an id without a job (EXPECTED_CRLF, DRAINING) takes a rank too.
 * (A job seen reserved before its put's reply was read takes the next rank
 * then.) An id never seen passes through unchanged.
 */
export class JobIdRanks {
  private readonly ids: string[] = [];
  private readonly ranks = new Map<string, number>();

  learn(id: string): string {
    let rank = this.ranks.get(id);
    if (rank === undefined) {
      this.ids.push(id);
      rank = this.ids.length;
      this.ranks.set(id, rank);
    }
    return String(rank);
  }

  burn(): void {
    this.ids.push('');
  }

  rankOf(id: string): string {
    const rank = this.ranks.get(id);
    return rank === undefined ? id : String(rank);
  }

  idOf(rank: string): string {
    return this.ids[Number(rank) - 1] || rank;
  }
}
