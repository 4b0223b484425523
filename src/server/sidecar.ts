// One redstalk process: the TCP listener, its connections, the Redis
// clients, and the background work (promotion timer, heartbeat, reaping of
// dead sidecars). Several sidecars on one Redis behave as one server.
import { randomBytes } from 'node:crypto';
import { lstatSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { Keys } from '../store/keys.js';
import { Batcher, type ReservedJob } from '../store/batcher.js';
import { Store } from '../store/store.js';
import { RoomStore, type RoomSettings } from '../rooms/room-store.js';
import { unhandledCommands } from './commands.js';
import { Connection } from './connection.js';
import { Counters } from './counters.js';
import { Waiters } from './waiters.js';

export interface SidecarOptions {
  host: string;
  port: number;
  redisUrl: string;
  prefix: string;
  maxJobSize: number;
  /** How often this sidecar proves it is alive; it counts as dead after 5 missed beats. */
  heartbeatMs: number;
  /** Upper bound for any Redis command, so a dead Redis answers INTERNAL_ERROR quickly. */
  redisTimeoutMs: number;
  /** Cross-connection batching caps (src/store/batcher.ts). */
  batchOps: number;
  batchBytes: number;
  batchInFlight: number;
  /** Settings of waiting rooms that have none of their own (room-config). */
  roomDefaults: RoomSettings;
}

/** Longest sleep of the promotion timer: how late a dead sidecar's expired reservations are noticed. */
const MAX_PROMOTE_SLEEP_MS = 1000;
const PROMOTE_CHUNK = 1000;
/** Coalesces counter changes into at most one snapshot write per interval. */
const SNAPSHOT_INTERVAL_MS = 20;

/**
 * `redis://` / `rediss://` URLs name one server; `redis-cluster://h1:p1,h2:p2`
 * names seed nodes of a Redis Cluster (every key of a script shares one hash
 * tag, so each script runs on the node owning that slot).
 */
export function connectRedis(url: string, options: RedisOptions): Redis | Cluster {
  const cluster = /^redis-cluster:\/\/(.+)$/.exec(url);
  if (!cluster) return new Redis(url, options);
  const seeds = cluster[1]!.split(',').map((hostPort) => {
    const [host, port] = hostPort.split(':');
    return { host: host!, port: Number(port ?? 6379) };
  });
  const { lazyConnect, enableOfflineQueue, ...redisOptions } = options;
  return new Cluster(seeds, { lazyConnect, enableOfflineQueue, redisOptions, clusterRetryStrategy: options.retryStrategy as (n: number) => number });
}

/** `-l unix:PATH` (beanstalkd >= 1.12) listens on a UNIX socket; -p is then ignored. */
export function unixSocketPath(listen: string): string | null {
  return listen.startsWith('unix:') ? listen.slice(5) : null;
}

/** A socket file left by a process that died; anything else at the path is an error. */
function removeStaleSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch { /* nothing there */ }
}

export class Sidecar {
  readonly nodeId = randomBytes(8).toString('hex');
  readonly startedAt = Date.now();
  readonly version = '1.13';
  readonly counters = new Counters();
  readonly waiters = new Waiters(this);
  readonly keys: Keys;
  readonly redis: Redis | Cluster;
  readonly store: Store;
  readonly rooms: RoomStore;
  readonly batcher: Batcher;
  draining = false;
  port = 0;

  private readonly subscriber: Redis | Cluster;
  private readonly server: net.Server;
  private readonly connections = new Set<Connection>();
  private readonly pending = new Set<Promise<unknown>>();
  private nextConnectionId = 1;
  private stopping = false;
  private promoteTimer: NodeJS.Timeout | null = null;
  private promoteAt = Infinity;
  private promoting = false;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private snapshotTimer: NodeJS.Timeout | null = null;
  private beats = 0;

  constructor(readonly options: SidecarOptions, readonly log: Logger) {
    this.keys = new Keys(options.prefix);
    const redisOptions = {
      lazyConnect: true,
      // Job commands are batched by src/store/batcher.ts; auto-pipelining would only wrap each call in a pipeline.
      enableAutoPipelining: false,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.redisTimeoutMs,
      connectTimeout: options.redisTimeoutMs,
      retryStrategy: (times: number) => Math.min(times * 100, 1000),
    };
    this.redis = connectRedis(options.redisUrl, redisOptions);
    this.redis.on('error', (err) => this.log.warn({ err }, 'redis error'));
    this.subscriber = connectRedis(options.redisUrl, { lazyConnect: true, retryStrategy: redisOptions.retryStrategy });
    this.subscriber.on('error', (err) => this.log.warn({ err }, 'redis subscriber error'));
    this.store = new Store(this.redis, this.keys);
    this.rooms = new RoomStore(this.redis, this.keys, options.roomDefaults);
    this.batcher = new Batcher(
      (ops) => this.store.applyBatch(ops),
      { maxOps: options.batchOps, maxBytes: options.batchBytes, maxInFlight: options.batchInFlight },
      (err) => this.log.error({ err }, 'batched command completion failed (bug)'),
    );
    this.server = net.createServer({ allowHalfOpen: true }, (socket) => this.accept(socket));
    this.server.on('error', (err) => this.log.error({ err }, 'listener error'));
  }

  async start(): Promise<void> {
    const missing = unhandledCommands();
    if (missing.length) throw new Error(`no handler for: ${missing.join(', ')}`);
    await Promise.all([this.redis.connect(), this.subscriber.connect()]);
    let subscribed = false;
    this.subscriber.on('ready', () => {
      // Reconnected: wake-ups may have been missed while the link was down.
      if (subscribed) this.waiters.wakeAll();
    });
    this.subscriber.on('message', (_channel: string, message: string) => {
      const space = message.indexOf(' ');
      this.waiters.onReady(message.slice(space + 1), Number(message.slice(0, space)));
    });
    await this.subscriber.subscribe(this.keys.events);
    subscribed = true;
    await this.beat();
    this.armPromote(0);
    const socketPath = unixSocketPath(this.options.host);
    if (socketPath) removeStaleSocket(socketPath);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      const listening = () => {
        this.server.off('error', reject);
        resolve();
      };
      if (socketPath) this.server.listen(socketPath, listening);
      else this.server.listen(this.options.port, this.options.host, listening);
    });
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    this.log.info({ listen: socketPath ?? `${this.options.host}:${this.port}`, node: this.nodeId }, 'redstalk listening');
  }

  private accept(socket: net.Socket): void {
    if (this.stopping) { socket.destroy(); return; }
    const c = new Connection(this.nextConnectionId++, socket, this);
    this.connections.add(c);
    this.counters.connections++;
    this.counters.totalConnections++;
    this.reference('default', 'using', 1);
    this.reference('default', 'watching', 1);
  }

  // ---- bookkeeping used by commands ----

  countCommand(counter: string): void {
    this.counters.count(counter);
    this.statsChanged();
  }

  setProducer(c: Connection): void {
    if (c.isProducer) return;
    c.isProducer = true;
    this.counters.producers++;
  }

  setWorker(c: Connection): void {
    if (c.isWorker) return;
    c.isWorker = true;
    this.counters.workers++;
  }

  /**
   * A connection starts/stops using or watching a tube. When this sidecar
   * starts referencing the tube, the tube is created in Redis first (the
   * returned promise); when it stops, the tube may disappear.
   */
  reference(tube: string, field: 'using' | 'watching', delta: 1 | -1): Promise<void> | undefined {
    const change = this.counters.reference(tube, field, delta);
    this.statsChanged();
    // The sidecar holds `default` for its whole life (see start), so only other tubes go to Redis.
    if (change === 0 || tube === 'default') return undefined;
    const p = this.store.refTube(tube, this.nodeId, change);
    if (change === 1) {
      return p.catch((err: unknown) => {
        this.counters.reference(tube, field, -1);
        throw err;
      });
    }
    this.track(p, 'unref tube');
    return undefined;
  }

  /** A job reserved for a connection that is already gone goes back at once. */
  giveBack(owner: string, job: ReservedJob): void {
    this.track(this.store.releaseOwned(owner, [[job.id, job.tube]]), 'give back job');
  }

  connectionClosed(c: Connection): void {
    this.connections.delete(c);
    this.counters.connections--;
    if (c.isProducer) this.counters.producers--;
    if (c.isWorker) this.counters.workers--;
    if (c.waiter) this.waiters.cancel(c.waiter);
    if (c.reserved.size > 0) {
      const jobs = [...c.reserved].map(([id, r]): [string, string] => [id, r.tube]);
      c.reserved.clear();
      this.track(this.store.releaseOwned(c.owner, jobs), 'release on close');
    }
    this.reference(c.used, 'using', -1);
    for (const t of c.watched) this.reference(t, 'watching', -1);
  }

  /** Counter snapshots of the other live sidecars. */
  async otherSnapshots(): Promise<Array<Record<string, string>>> {
    const { live } = await this.store.nodes();
    return this.store.nodeSnapshots(live.filter((n) => n !== this.nodeId));
  }

  /** Counters changed: publish a fresh snapshot soon. */
  statsChanged(): void {
    if (this.snapshotTimer || this.stopping) return;
    this.snapshotTimer = setTimeout(() => {
      this.snapshotTimer = null;
      this.track(this.beat(), 'heartbeat');
    }, SNAPSHOT_INTERVAL_MS);
  }

  private track(p: Promise<unknown>, what: string): void {
    const tracked = p.catch((err: unknown) => this.log.warn({ err }, `${what} failed`));
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  // ---- background work ----

  private async beat(): Promise<void> {
    const fresh = await this.store.heartbeat(this.nodeId, this.options.heartbeatMs * 5, this.counters.snapshot());
    if (fresh) await this.registerReferences();
  }

  /**
   * (Re)claims every tube this sidecar references: at start (`default`, held
   * for the sidecar's life), and after its lease lapsed (Redis unreachable for
   * a while) and another sidecar may have reaped it.
   */
  private async registerReferences(): Promise<void> {
    const tubes = new Set(['default']);
    for (const [tube, use] of this.counters.tubes) if (use.using + use.watching > 0) tubes.add(tube);
    for (const tube of tubes) {
      await this.store.refTube(tube, this.nodeId, 'drop');
      await this.store.refTube(tube, this.nodeId, 1);
    }
  }

  private scheduleHeartbeat(): void {
    this.heartbeatTimer = setTimeout(() => {
      this.track(this.beat(), 'heartbeat');
      if (++this.beats % 5 === 0) this.track(this.reapDeadSidecars(), 'reaping');
      this.scheduleHeartbeat();
    }, this.options.heartbeatMs);
  }

  /** Drops the tube references of sidecars whose heartbeat stopped. */
  private async reapDeadSidecars(): Promise<void> {
    const { dead } = await this.store.nodes();
    for (const node of dead) {
      const [snapshot] = await this.store.nodeSnapshots([node]);
      const tubes = new Set<string>();
      for (const field of Object.keys(snapshot ?? {})) {
        const m = /^(?:using|watching):(.+)$/.exec(field);
        if (m) tubes.add(m[1]!);
      }
      tubes.add('default');
      for (const t of tubes) await this.store.refTube(t, node, 'drop');
      await this.store.forgetNode(node);
      this.log.info({ node }, 'reaped a dead sidecar');
    }
  }

  /** Makes sure the promotion timer runs within ms. */
  armPromote(ms: number): void {
    if (this.stopping) return;
    const at = Date.now() + ms;
    if (this.promoting || at >= this.promoteAt) return;
    if (this.promoteTimer) clearTimeout(this.promoteTimer);
    this.promoteAt = at;
    this.promoteTimer = setTimeout(() => void this.promote(), ms);
  }

  private async promote(): Promise<void> {
    this.promoteTimer = null;
    this.promoteAt = Infinity;
    this.promoting = true;
    let next = MAX_PROMOTE_SLEEP_MS;
    try {
      const { moved, nextDueMs } = await this.store.promoteDue(PROMOTE_CHUNK);
      // Due now but nothing moved: our estimate of Redis' clock was off; retry soon, not in a tight loop.
      if (nextDueMs >= 0) next = Math.min(nextDueMs === 0 && moved === 0 ? 10 : nextDueMs, MAX_PROMOTE_SLEEP_MS);
    } catch (err) {
      this.log.warn({ err }, 'promotion failed');
    }
    this.promoting = false;
    this.armPromote(next);
  }

  startBackground(): void {
    this.scheduleHeartbeat();
  }

  /** SIGUSR1: new puts answer DRAINING (cannot be undone, as in beanstalkd). */
  drain(): void {
    this.draining = true;
    this.log.info('entering drain mode');
  }

  /** Stops accepting, closes connections (their reservations go back), leaves Redis clean. */
  async close(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const c of [...this.connections]) c.close();
    for (const t of [this.promoteTimer, this.heartbeatTimer, this.snapshotTimer]) if (t) clearTimeout(t);
    while (this.batcher.pending > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    try {
      for (const t of this.counters.tubes.keys()) await this.store.refTube(t, this.nodeId, 'drop');
      await this.store.refTube('default', this.nodeId, 'drop');
      await this.store.forgetNode(this.nodeId);
    } catch (err) {
      this.log.warn({ err }, 'could not clean up in Redis');
    }
    await closed;
    this.subscriber.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
    this.log.info('redstalk stopped');
  }
}
