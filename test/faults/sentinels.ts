// The pieces of the failover drill (failover.test.ts): three Sentinels as
// processes on loopback, a TCP proxy that delays every chunk both ways (the
// link of a replica to its primary), and the few questions the drill asks
// Redis and the Sentinels. Every process is registered with processes.ts
// (killed should the test process end without its cleanup) and stopped by its
// PID; nothing touches 127.0.0.1:6379.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { freePort, waitForPort } from '../helpers/ports.js';
import { listenOnLoopback, stopChild, track } from './processes.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export const MASTER = 'mymaster';

/**
 * The Sentinels' own user on the data nodes when the replication links go
 * through proxies: it may promote (`REPLICAOF NO ONE`) but not point a replica
 * elsewhere. Sentinel "fixes" a replica whose master address is not the one it
 * monitors (+fix-slave-config, after failover-timeout): it would point the
 * replica at the primary directly, around the delaying proxy.
 */
export const PINNED_LINKS = { user: 'drill-sentinel', pass: 'drill-sentinel-pw' };

/** redis-server arguments that create the Sentinels' user of PINNED_LINKS. */
export function pinnedLinkArgs(): string[] {
  return ['--user', PINNED_LINKS.user, 'on', `>${PINNED_LINKS.pass}`, '~*', '&*', '+@all', '-slaveof', '-replicaof', '+slaveof|no', '+replicaof|no'];
}

/** A short-lived admin connection to a Redis (or Sentinel) port: no retries, no offline queue. */
export function admin(port: number): Redis {
  return new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, connectTimeout: 2000, commandTimeout: 3000, retryStrategy: () => 200 });
}

/** `INFO replication` as a map. */
export async function replicationInfo(r: Redis): Promise<Record<string, string>> {
  const info = await r.info('replication');
  const out: Record<string, string> = {};
  for (const line of info.split('\r\n')) {
    const cut = line.indexOf(':');
    if (cut > 0) out[line.slice(0, cut)] = line.slice(cut + 1);
  }
  return out;
}

/** Resolves once `check` is true (polled every `everyMs`), to the time it was seen; throws after timeoutMs. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<number> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return Date.now();
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------- Sentinels

export interface SentinelTimings { downAfterMs: number; failoverTimeoutMs: number }

export class SentinelProc {
  child!: ChildProcess;
  private constructor(readonly port: number, readonly dir: string) {}

  get pid(): number { return this.child.pid!; }
  get logFile(): string { return path.join(this.dir, 'sentinel.log'); }

  /** A Sentinel monitoring MASTER at 127.0.0.1:primaryPort, quorum 2. */
  static async start(primaryPort: number, t: SentinelTimings, pinned: boolean): Promise<SentinelProc> {
    const s = new SentinelProc(await freePort(), mkdtempSync(path.join(tmpdir(), 'redstalk-faults-sentinel-')));
    const conf = path.join(s.dir, 'sentinel.conf');
    writeFileSync(conf, [
      `port ${s.port}`, 'bind 127.0.0.1', `dir ${s.dir}`, `logfile ${s.logFile}`, 'loglevel notice',
      `sentinel monitor ${MASTER} 127.0.0.1 ${primaryPort} 2`,
      `sentinel down-after-milliseconds ${MASTER} ${t.downAfterMs}`,
      `sentinel failover-timeout ${MASTER} ${t.failoverTimeoutMs}`,
      `sentinel parallel-syncs ${MASTER} 1`,
      ...(pinned ? [`sentinel auth-user ${MASTER} ${PINNED_LINKS.user}`, `sentinel auth-pass ${MASTER} ${PINNED_LINKS.pass}`] : []),
      '',
    ].join('\n'));
    s.child = track(spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' }));
    await waitForPort(s.port, 10_000);
    return s;
  }

  /** The events of its log (+sdown, +odown, +elected-leader, +switch-master, ...), with their times. */
  events(): string[] {
    if (!existsSync(this.logFile)) return [];
    return readFileSync(this.logFile, 'utf8').split('\n').filter((l) => / [#*] [+-]/.test(l) || /switch-master|failover|tilt|convert|fix-slave/i.test(l));
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 'SIGTERM', 5000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `SENTINEL MASTER` as a map. */
export async function sentinelMaster(r: Redis): Promise<Record<string, string>> {
  const flat = (await r.call('SENTINEL', 'MASTER', MASTER)) as string[];
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

/** The port a Sentinel names as the current primary. */
export async function sentinelPrimaryPort(r: Redis): Promise<number> {
  const [, port] = (await r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER)) as [string, string];
  return Number(port);
}

// ---------------------------------------------------------------- delaying proxy

/**
 * A TCP proxy to a Redis port that holds every chunk for delayMs before passing
 * it on, both ways, in order (ends and resets too). For a replica's link to its
 * primary: `replicaof 127.0.0.1 <proxy port>`. sever() resets every link and
 * drops what it holds: the bytes on the wire when the primary's host goes.
 */
export class DelayProxy {
  private readonly links = new Set<net.Socket>();
  /** Each relay's held chunks, emptied by sever(). */
  private readonly queues = new Set<unknown[]>();
  /** Bytes held when sever() dropped them. */
  dropped = 0;
  port = 0;
  bytesUp = 0; // towards the target (replica → primary)
  bytesDown = 0;
  connections = 0;

  private constructor(private readonly server: net.Server, private readonly target: number, readonly delayMs: number) {}

  static async start(target: number, delayMs: number): Promise<DelayProxy> {
    const server = net.createServer();
    const proxy = new DelayProxy(server, target, delayMs);
    server.on('connection', (c) => proxy.accept(c));
    proxy.port = await listenOnLoopback(server);
    return proxy;
  }

  private accept(client: net.Socket): void {
    this.connections++;
    const upstream = net.connect(this.target, '127.0.0.1');
    for (const s of [client, upstream]) {
      s.on('error', () => {});
      s.setNoDelay(true);
      this.links.add(s);
      s.once('close', () => this.links.delete(s));
    }
    this.relay(client, upstream, (n) => { this.bytesUp += n; });
    this.relay(upstream, client, (n) => { this.bytesDown += n; });
  }

  /** from → to, each chunk (and the end, or a reset) delayMs later than it came, in order. */
  private relay(from: net.Socket, to: net.Socket, count: (n: number) => void): void {
    type Item = { due: number; data: Buffer | 'end' | 'destroy' };
    const queue: Item[] = [];
    this.queues.add(queue);
    from.once('close', () => { if (!queue.length) this.queues.delete(queue); });
    let timer: NodeJS.Timeout | null = null;
    const pump = () => {
      timer = null;
      const t = performance.now();
      while (queue.length && queue[0]!.due <= t) {
        const { data } = queue.shift()!;
        if (data === 'end') to.end();
        else if (data === 'destroy') to.destroy();
        else if (!to.destroyed) { count(data.length); to.write(data); }
      }
      if (queue.length) timer = setTimeout(pump, Math.max(0, queue[0]!.due - performance.now()));
    };
    const push = (data: Item['data']) => {
      queue.push({ due: performance.now() + this.delayMs, data });
      timer ??= setTimeout(pump, this.delayMs);
    };
    from.on('data', (d: Buffer) => push(d));
    from.once('close', (hadError: boolean) => push(hadError ? 'destroy' : 'end'));
  }

  /** Drops every chunk held and resets every link, at once (new connections still go through). */
  sever(): void {
    for (const q of this.queues) {
      for (const item of q as Array<{ data: unknown }>) if (Buffer.isBuffer(item.data)) this.dropped += item.data.length;
      q.length = 0;
    }
    this.queues.clear();
    for (const s of [...this.links]) s.resetAndDestroy();
    this.links.clear();
  }

  async close(): Promise<void> {
    for (const s of [...this.links]) s.destroy();
    this.links.clear();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
