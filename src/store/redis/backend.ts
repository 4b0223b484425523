// The Redis backend: the command link, the pub/sub link for wake-ups, the
// scripts (bound once for jobs and rooms), and the stores over them.
import type { Logger } from 'pino';
import type { Backend } from '../backend.js';
import type { ReadyListener } from '../job-store.js';
import { Layout } from '../layout.js';
import type { RoomSettings } from '../room-store.js';
import { commandLinkOptions, connectRedis, reconnectDelay, type RedisClient } from './connect.js';
import { RedisJobStore } from './job-store.js';
import { RedisRoomStore } from './room-store.js';
import { bindScripts } from './scripts.js';

export interface RedisBackendOptions {
  url: string;
  prefix: string;
  /** Upper bound for any Redis command, so a dead Redis answers INTERNAL_ERROR quickly (before the allowance for big jobs). */
  timeoutMs: number;
  /** The biggest job a command may carry (-z): the store must be able to hold it, and calls get time to move it. */
  maxJobSize: number;
  /** Writes are done once this many replicas have them (WAIT, within timeoutMs); 0: once the primary has them. */
  minReplicas: { count: number; timeoutMs: number };
  roomDefaults: RoomSettings;
  log: Logger;
}

/** Redis' default proto-max-bulk-len (512 MiB). */
const DEFAULT_PROTO_MAX_BULK_LEN = 512 * 1024 * 1024;
/** A job record holds its metadata before the body (includes/jobs.lua save_job). */
const JOB_RECORD_OVERHEAD = 1024;
/** A rate every Redis link moves bytes at, at least (a loopback does far better): 50 MB/s. */
const BYTES_PER_MS = 50_000;

/** Time on top of the base timeout for a call carrying the biggest job there may be. */
export function transferMs(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_MS);
}

export class RedisBackend implements Backend {
  readonly jobs: RedisJobStore;
  readonly rooms: RedisRoomStore;
  readonly layout: Layout;
  private readonly redis: RedisClient;
  private readonly subscriber: RedisClient;

  constructor(private readonly options: RedisBackendOptions) {
    const { log } = options;
    this.layout = new Layout(options.prefix);
    // A call may wait for replicas (WAIT) on top of moving the biggest job.
    const callMs = options.timeoutMs + transferMs(options.maxJobSize) + options.minReplicas.timeoutMs;
    this.redis = connectRedis(options.url, commandLinkOptions(callMs));
    this.redis.on('error', (err) => log.warn({ err }, 'redis error'));
    this.subscriber = connectRedis(options.url, { lazyConnect: true, retryStrategy: reconnectDelay });
    this.subscriber.on('error', (err) => log.warn({ err }, 'redis subscriber error'));
    const scripts = bindScripts(this.redis);
    const keys = this.layout.keys(0);
    this.jobs = new RedisJobStore(this.redis, scripts.jobs, keys, options.minReplicas);
    this.rooms = new RedisRoomStore(scripts.rooms, keys, options.roomDefaults);
  }

  async open(listener: ReadyListener): Promise<void> {
    await Promise.all([this.redis.connect(), this.subscriber.connect()]);
    await this.checkJobSize();
    await this.jobs.upgrade();
    let subscribed = false;
    this.subscriber.on('ready', () => {
      if (subscribed) listener.onResync();
    });
    // Job scripts PUBLISH "<count> <tube>" when they make jobs ready.
    this.subscriber.on('message', (_channel: string, message: string) => {
      const space = message.indexOf(' ');
      listener.onReady(message.slice(space + 1), Number(message.slice(0, space)));
    });
    await this.subscriber.subscribe(this.layout.keys(0).events);
    subscribed = true;
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
