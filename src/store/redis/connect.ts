// The ioredis clients: `redis://` / `rediss://` URLs name one server, and
// `unix:///path/to/redis.sock[?db=N&password=P]` one on this machine (a unix
// socket costs the kernel less per call than loopback TCP);
// `redis-sentinel://[:password@]h1:p1,h2:p2[/db][?master=NAME]` names the
// Sentinels that know the current primary (followed through failovers);
// `redis-cluster://h1:p1,h2:p2` names seed nodes of a Redis Cluster (every
// key of a script shares one hash tag, so each script runs on the node
// owning that slot). And the mapping of Redis errors to store errors.
import { Cluster, Redis, type ChainableCommander, type RedisOptions } from 'ioredis';
import { StoreError } from '../errors.js';

export type RedisClient = Redis | Cluster;

function hostPorts(list: string, defaultPort: number): Array<{ host: string; port: number }> {
  return list.split(',').map((hostPort) => {
    const [host, port] = hostPort.split(':');
    return { host: host!, port: Number(port || defaultPort) };
  });
}

/**
 * `redis-sentinel://[:password@]host1[:port1][,host2[:port2]...][/db][?master=NAME]`
 * (asynq's form; the password is the primary's and, unless
 * `sentinelPassword` is given, the Sentinels' too; master defaults to mymaster).
 */
export function sentinelOptions(url: string): RedisOptions {
  const m = /^redis-sentinel:\/\/(?:(?:([^:@/]*):)?([^@/]*)@)?([^/?]+)(?:\/(\d+))?(?:\?(.*))?$/.exec(url);
  if (!m) throw new Error('not a redis-sentinel:// URL (redis-sentinel://[:password@]host1[:port1][,host2[:port2]...][/db][?master=NAME])');
  const query = new URLSearchParams(m[5] ?? '');
  const password = m[2] ? decodeURIComponent(m[2]) : undefined;
  const options: RedisOptions = {
    sentinels: hostPorts(m[3]!, 26379),
    name: query.get('master') ?? 'mymaster',
    db: Number(m[4] ?? 0),
    // Listen to the Sentinels' +switch-master: after a switchover the old primary
    // stays up (a primary still, for seconds) and would take writes it then loses.
    failoverDetector: true,
  };
  if (m[1]) options.username = decodeURIComponent(m[1]);
  if (password) options.password = password;
  const sentinelPassword = query.get('sentinelPassword') ?? password;
  if (sentinelPassword) options.sentinelPassword = sentinelPassword;
  return options;
}

/**
 * A primary demoted by a failover answers writes READONLY: reconnect (through
 * the Sentinels, to the new primary) and send the command again.
 */
function reconnectOnReadonly(err: Error): 2 | false {
  return err.message.startsWith('READONLY') ? 2 : false;
}

/** `unix:///path/to/redis.sock[?db=N&password=P]` (go-redis' and redis-py's form). */
export function unixSocketOptions(url: string): RedisOptions {
  const m = /^unix:\/\/(\/[^?]+)(?:\?(.*))?$/.exec(url);
  if (!m) throw new Error('not a unix:// URL (unix:///path/to/redis.sock[?db=N&password=P])');
  const query = new URLSearchParams(m[2] ?? '');
  const options: RedisOptions = { path: decodeURIComponent(m[1]!), db: Number(query.get('db') ?? 0) };
  const password = query.get('password');
  if (password) options.password = password;
  return options;
}

/** `clusterOptions.shardedSubscribers`: on a Redis Cluster, SSUBSCRIBE on the node of each channel's slot. */
export function connectRedis(url: string, options: RedisOptions, clusterOptions: { shardedSubscribers?: boolean } = {}): RedisClient {
  if (url.startsWith('redis-sentinel://')) return new Redis({ ...options, ...sentinelOptions(url), reconnectOnError: reconnectOnReadonly });
  if (url.startsWith('unix://')) return new Redis({ ...options, ...unixSocketOptions(url), reconnectOnError: reconnectOnReadonly });
  const cluster = /^redis-cluster:\/\/(.+)$/.exec(url);
  if (!cluster) return new Redis(url, { ...options, reconnectOnError: reconnectOnReadonly });
  const seeds = hostPorts(cluster[1]!, 6379);
  const { lazyConnect, enableOfflineQueue, ...redisOptions } = options;
  return new Cluster(seeds, {
    lazyConnect, enableOfflineQueue, redisOptions, clusterRetryStrategy: options.retryStrategy as (n: number) => number,
    shardedSubscribers: clusterOptions.shardedSubscribers ?? false,
    // A command whose link closed while it was in flight may have run: never send it
    // again (a script would run twice); it fails, and its outcome counts as unknown.
    retryDelayOnFailover: 0,
  });
}

/**
 * While Redis loads its data set, the client asks again this often whether it
 * is done (ioredis waits min(Redis' loading ETA, maxLoadingRetryTime), 10 s by
 * default: an ETA misjudged by a data set of uneven keys kept a sidecar
 * unready for seconds after Redis had loaded).
 */
export const LOADING_POLL_MS = 100;

/** Options of the command link: fail fast rather than queue, so a dead Redis answers INTERNAL_ERROR quickly. */
export function commandLinkOptions(timeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    maxLoadingRetryTime: LOADING_POLL_MS,
    // Job commands are batched by src/store/batcher.ts; auto-pipelining would only wrap each call in a pipeline.
    enableAutoPipelining: false,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    retryStrategy: reconnectDelay,
  };
}

export function reconnectDelay(times: number): number {
  return Math.min(times * 100, 1000);
}

/**
 * A Redis error as a store error. Only the message is kept: ioredis errors
 * carry the command's arguments (a job body, for a put), which must never
 * reach a log.
 */
export function storeError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  // Redis refuses a script that may write while over maxmemory: "OOM command not allowed ...".
  if (message.startsWith('OOM')) return new StoreError('full', message);
  // ioredis: the command was written but no reply came in time, or the link closed with it in flight
  // (with maxRetriesPerRequest 0, a command in flight on a link that breaks is not sent again).
  const name = err instanceof Error ? err.name : '';
  // A Redis Cluster gives up after redirections (a failover, a resharding): one try may have run.
  if (message === 'Command timed out' || message === 'Connection is closed.' || name === 'MaxRetriesPerRequestError'
    || message.startsWith('Too many Cluster redirections')) {
    return new StoreError('unknown', message);
  }
  return new StoreError('failed', message);
}

/**
 * Runs a pipeline: its replies, or the first of its errors as a StoreError
 * (a pipeline resolves with each command's error in place; a timed-out one
 * leaves its reply undefined).
 */
export async function pipelined(p: ChainableCommander): Promise<unknown[]> {
  const results = (await mapped(p.exec())) ?? [];
  for (const [err] of results) if (err) throw storeError(err);
  return results.map(([, value]) => value);
}

/** Runs a Redis call, turning its failure into a StoreError. */
export function mapped<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => { throw storeError(err); });
}
