// The Redis backend: the command link, the pub/sub link for wake-ups, the
// Lua functions (one library, loaded at start; bound once for jobs and rooms),
// and the stores over them: one job store per shard, and the whole data set
// over them (batched per shard).
import { Cluster } from 'ioredis';
import type { Logger } from 'pino';
import type { Backend } from '../backend.js';
import type { ReadyListener } from '../job-store.js';
import type { BatchLimits } from '../batcher.js';
import { Layout } from '../layout.js';
import type { RoomSettings } from '../room-store.js';
import { ShardedJobStore } from '../sharded.js';
import { commandLinkOptions, connectRedis, LOADING_POLL_MS, mapped, reconnectDelay, type RedisClient } from './connect.js';
import { RedisJobStore } from './job-store.js';
import { NodeCalls } from './node-calls.js';
import { RedisRoomStore } from './room-store.js';
import { checkEvictionPolicy, FunctionLibrary } from './functions.js';

export interface RedisBackendOptions {
  url: string;
  prefix: string;
  /** Shards of the data set (--shards): fixed when it is created. */
  shards: number;
  /** Upper bound for any Redis command, so a dead Redis answers INTERNAL_ERROR quickly (before the allowance for big jobs). */
  timeoutMs: number;
  /** The biggest job a command may carry (-z): the store must be able to hold it, and calls get time to move it. */
  maxJobSize: number;
  /** Writes are done once this many replicas have them (WAIT, within timeoutMs); 0: once the primary has them. */
  minReplicas: { count: number; timeoutMs: number };
  roomDefaults: RoomSettings;
  /** How big one batch call may grow, and how many go out at once (--batch-ops, --batch-bytes, --batch-in-flight). */
  batch: BatchLimits;
  log: Logger;
}

/** Redis' default proto-max-bulk-len (512 MiB). */
const DEFAULT_PROTO_MAX_BULK_LEN = 512 * 1024 * 1024;
/** A job record holds its metadata before the body (includes/jobs.lua save_job). */
const JOB_RECORD_OVERHEAD = 1024;
/**
 * A rate every Redis call moves a job's bytes at, at least: 10 MB/s. (A 100 MB
 * put took 4.8 s from the client's first byte to INSERTED on this project's
 * 2-core VM, its memory slow to touch: two loopback hops and the script's
 * copies. 50 MB/s, the figure before, cut such calls off as unknown.)
 */
const BYTES_PER_MS = 10_000;

/** Time on top of the base timeout for a call carrying the biggest job there may be. */
export function transferMs(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_MS);
}

export class RedisBackend implements Backend {
  readonly jobs: ShardedJobStore;
  /** Each shard's own store. */
  readonly shards: readonly RedisJobStore[];
  readonly rooms: RedisRoomStore;
  readonly layout: Layout;
  private readonly redis: RedisClient;
  private readonly subscriber: RedisClient;
  /** On a Redis Cluster, wake-ups travel over sharded pub/sub (SPUBLISH / SSUBSCRIBE). */
  private readonly sharded: boolean;
  private readonly functions: FunctionLibrary;

  constructor(private readonly options: RedisBackendOptions) {
    const { log } = options;
    const layout = new Layout(options.prefix, options.shards);
    this.layout = layout;
    // A call may wait for replicas (WAIT) on top of moving the biggest job.
    const callMs = options.timeoutMs + transferMs(options.maxJobSize) + options.minReplicas.timeoutMs;
    this.redis = connectRedis(options.url, commandLinkOptions(callMs));
    this.redis.on('error', (err) => log.warn({ err }, 'redis error'));
    this.sharded = this.redis instanceof Cluster;
    this.subscriber = connectRedis(options.url, { lazyConnect: true, retryStrategy: reconnectDelay, maxLoadingRetryTime: LOADING_POLL_MS }, { shardedSubscribers: this.sharded });
    this.subscriber.on('error', (err) => log.warn({ err }, 'redis subscriber error'));
    this.functions = new FunctionLibrary(this.redis, { shardedPubSub: this.sharded });
    const scripts = this.functions.bind();
    this.shards = Array.from({ length: layout.shards }, (_, i) => new RedisJobStore(this.redis, scripts.jobs, layout.keys(i), options.minReplicas));
    // With --min-replicas each call waits for its own node's replicas (WAIT): shards go in calls of their own.
    const nodeCalls = options.minReplicas.count === 0 ? new NodeCalls(this.redis, this.shards, layout, scripts.jobs) : null;
    this.jobs = new ShardedJobStore(this.shards, layout.map, options.batch, (err) => log.error({ err }, 'batched command completion failed (bug)'),
      (send) => this.corked(send), nodeCalls);
    this.rooms = new RedisRoomStore(scripts.rooms, layout, options.roomDefaults);
  }

  /** Runs `send` with the command link's sockets corked: what it writes leaves in one write per node. */
  private corked(send: () => void): void {
    const streams = (this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis]).map((r) => r.stream).filter((s) => s?.writable);
    for (const s of streams) s.cork();
    try {
      send();
    } finally {
      for (const s of streams) s.uncork();
    }
  }

  async open(listener: ReadyListener): Promise<void> {
    await Promise.all([this.redis.connect(), this.subscriber.connect()]);
    // A Redis that evicts keys is refused before anything is written to it; the
    // rest goes out together (one round trip rather than one each).
    await checkEvictionPolicy(this.redis);
    await Promise.all([
      this.functions.open(),
      this.checkJobSize(),
      this.checkShardCount(),
      this.subscribe(listener),
    ]);
    // Upgrades run the library's functions: loaded by now. Each shard's keys are its own.
    await Promise.all(this.shards.map((shard) => shard.upgrade()));
  }

  /** Wake-ups: job scripts PUBLISH (on a cluster, SPUBLISH) "<count> <tube>" when they make jobs ready. */
  private async subscribe(listener: ReadyListener): Promise<void> {
    let subscribed = false;
    this.subscriber.on('ready', () => {
      if (subscribed) listener.onResync();
    });
    const onMessage = (_channel: string, message: string) => {
      const space = message.indexOf(' ');
      listener.onReady(message.slice(space + 1), Number(message.slice(0, space)));
    };
    const channels = this.shards.map((_, i) => this.layout.keys(i).events);
    if (this.sharded) {
      this.subscriber.on('smessage', onMessage);
      // One SSUBSCRIBE per channel: each goes to the node that owns its slot.
      for (const channel of channels) await this.subscriber.ssubscribe(channel);
    } else {
      this.subscriber.on('message', onMessage);
      await this.subscriber.subscribe(...channels);
    }
    subscribed = true;
  }

  /**
   * The shard count is recorded when the data set is created, and every
   * sidecar must use it: with another count, tubes and job ids would be
   * looked for in the wrong shards. (A data set from before shards has one.)
   */
  private async checkShardCount(): Promise<void> {
    const key = this.layout.shardCountKey;
    const legacy = await mapped(this.redis.exists(this.layout.oneShardSeqKey));
    const created = legacy ? 1 : this.options.shards;
    await mapped(this.redis.set(key, created, 'NX'));
    const recorded = Number(await mapped(this.redis.get(key)));
    if (recorded !== this.options.shards) {
      throw new Error(`the data set at prefix "${this.options.prefix}" has ${recorded} shard${recorded === 1 ? '' : 's'}, `
        + `and this sidecar was started with --shards ${this.options.shards}: start it with --shards ${recorded}, `
        + `or move the jobs to a data set with ${this.options.shards} (redstalk reshard, see the README)`);
    }
  }

  /**
   * A job goes to Redis as one argument and comes back as one reply, and
   * Redis takes none longer than proto-max-bulk-len: a bigger -z would
   * acknowledge jobs that can never be delivered.
   */
  private async checkJobSize(): Promise<void> {
    let limit = DEFAULT_PROTO_MAX_BULK_LEN;
    try {
      const [, value] = (await this.redis.call('CONFIG', 'GET', 'proto-max-bulk-len')) as [string, string];
      if (value) limit = Number(value);
    } catch { /* CONFIG may be renamed away (managed Redis): assume Redis' default */ }
    const carried = limit - JOB_RECORD_OVERHEAD;
    if (this.options.maxJobSize > carried) {
      throw new Error(`maximum job size ${this.options.maxJobSize} (-z) is more than this Redis can hold in one value `
        + `(proto-max-bulk-len ${limit}, so at most ${carried}): lower -z, or raise proto-max-bulk-len in Redis`);
    }
  }

  /** One wait for the command link's next 'ready', however many wait. */
  private readyWait: Promise<void> | null = null;

  linkWait(): Promise<void> | null {
    if (this.redis.status === 'ready') return null;
    this.readyWait ??= new Promise<void>((resolve) => this.redis.once('ready', () => {
      this.readyWait = null;
      resolve();
    }));
    return this.readyWait;
  }

  async health(timeoutMs: number): Promise<string | null> {
    if (this.redis.status !== 'ready') return `redis: command link ${this.redis.status}`;
    if (this.subscriber.status !== 'ready') return `redis: wake-up link ${this.subscriber.status}`;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => { timer = setTimeout(() => resolve(`redis: no reply to PING within ${timeoutMs} ms`), timeoutMs); });
    try {
      return await Promise.race([this.redis.ping().then(() => null, (err: Error) => `redis: ${err.message}`), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
