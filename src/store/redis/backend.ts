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
  /** Upper bound for any Redis command, so a dead Redis answers INTERNAL_ERROR quickly. */
  timeoutMs: number;
  roomDefaults: RoomSettings;
  log: Logger;
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
    this.redis = connectRedis(options.url, commandLinkOptions(options.timeoutMs));
    this.redis.on('error', (err) => log.warn({ err }, 'redis error'));
    this.subscriber = connectRedis(options.url, { lazyConnect: true, retryStrategy: reconnectDelay });
    this.subscriber.on('error', (err) => log.warn({ err }, 'redis subscriber error'));
    const scripts = bindScripts(this.redis);
    const keys = this.layout.keys(0);
    this.jobs = new RedisJobStore(this.redis, scripts.jobs, keys);
    this.rooms = new RedisRoomStore(scripts.rooms, keys, options.roomDefaults);
  }

  async open(listener: ReadyListener): Promise<void> {
    await Promise.all([this.redis.connect(), this.subscriber.connect()]);
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
