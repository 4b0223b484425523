// A private Redis Cluster for tests: redis-server processes on free loopback
// ports (each with its bus port, port + 10000, free too), joined with
// `redis-cli --cluster create`. `startCluster(3)` (or `{ primaries: 3 }`):
// three primaries, no replicas. `{ replicasPerPrimary: 1 }`: a replica per
// primary, quick failovers (cluster-node-timeout 2000 ms,
// cluster-replica-validity-factor 0: a replica is always promotable), and the
// helpers of the fault drills: roles asked from the nodes, SIGKILL of a node,
// slot owners, resharding with `redis-cli --cluster reshard`, waiting for a
// failover. Every process is stopped by its PID; nothing touches 127.0.0.1:6379.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitForPort } from './ports.js';

export interface ClusterOptions {
  /** Primaries (slots split evenly by redis-cli). Default 3. */
  primaries?: number;
  /** Replicas of each primary. Default 0. */
  replicasPerPrimary?: number;
  /** AOF with `appendfsync always` (default: no persistence at all). */
  appendonly?: boolean;
  /** cluster-node-timeout: 2000 ms with replicas (quick failovers), else 5000 ms. */
  nodeTimeoutMs?: number;
}

/** One node as `CLUSTER NODES` describes it. */
export interface ClusterNode {
  id: string;
  port: number;
  flags: string[];
  /** The primary's node id, for a replica. */
  primaryId: string | null;
  connected: boolean;
  /** Slot ranges [from, to], for a primary. */
  slots: Array<[number, number]>;
}

export interface TestCluster {
  /** Every node started, primaries first as created (roles change: primaries() / replicas()). */
  ports: number[];
  /** redis-cluster://127.0.0.1:p1,... (every node as a seed). */
  url: string;
  /** Live nodes that report role master themselves (ROLE), sorted by port. */
  primaries(): Promise<number[]>;
  /** Live nodes that report role slave themselves, sorted by port. */
  replicas(): Promise<number[]>;
  /** The replicas of a primary, as a live node's CLUSTER NODES names them now (a dead primary's too, until one is promoted). */
  replicasOf(primaryPort: number): Promise<number[]>;
  /** CLUSTER NODES as seen by a live node (the first that answers). */
  nodes(): Promise<ClusterNode[]>;
  /** The port of the primary owning a slot, as a live node's CLUSTER SLOTS says. */
  nodeOfSlot(slot: number): Promise<number>;
  /** CLUSTER KEYSLOT of a key. */
  keySlot(key: string): Promise<number>;
  /** Slots of a primary, ascending (the order `redis-cli --cluster reshard` takes them in). */
  slotsOf(port: number): Promise<number[]>;
  /** A command to one node (a short-lived admin link per node, no retries). */
  call(port: number, ...args: Array<string | number>): Promise<unknown>;
  /** Whether the process on that port runs. */
  alive(port: number): boolean;
  /** SIGKILL of the process on that port; resolves once it has exited. */
  kill(port: number): Promise<void>;
  /**
   * Moves `slots` slots from one primary to another with `redis-cli --cluster
   * reshard` (non-interactive; the source's lowest slots first), then waits
   * until every live node agrees on the owners. Resolves to what redis-cli said.
   * `atomic`: by atomic slot migration (Valkey 9+: `--cluster-use-atomic-slot-migration`,
   * CLUSTER MIGRATESLOTS: the target takes the slots' keys in the background and
   * the slots change owner at once, instead of slot by slot and key by key).
   */
  reshard(fromPort: number, toPort: number, slots: number, opts?: { atomic?: boolean }): Promise<{ output: string; ms: number }>;
  /**
   * Resolves once a replica of the (dead) old primary (its replicas when kill()
   * stopped it) reports role master and every live node cluster_state:ok; to
   * that replica's port and the time.
   */
  waitForFailover(oldPrimaryPort: number, timeoutMs?: number): Promise<{ port: number; at: number }>;
  /** Every live node cluster_state:ok, agreeing on the slots, every replica's link up. */
  waitForHealthy(timeoutMs?: number): Promise<void>;
  /** The nodes' folders (<dir>/<port>/redis.log, nodes.conf). */
  dir: string;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

const started = new Set<ChildProcess>();
// Should the test process end without stop() (a crash, a timeout), take the nodes along.
process.once('exit', () => {
  for (const c of started) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
});

/** Whether 127.0.0.1:port can be bound right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free port whose bus port (+10000) is free too, neither one of `taken`, never 6379. */
async function freeNodePort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = await freePort();
    if (port > 55535 || port === 6379 || port + 10000 === 6379) continue;
    if (taken.has(port) || taken.has(port + 10000)) continue;
    if (!(await bindable(port + 10000))) continue;
    taken.add(port);
    taken.add(port + 10000);
    return port;
  }
  throw new Error('no free port pair (port, port + 10000) found');
}

/** A redis-cli run, asynchronous (the caller's event loop keeps running load). */
function redisCli(args: string[], timeoutMs = 120_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    started.add(child);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => { output += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
    const timer = setTimeout(() => { if (running(child)) child.kill('SIGKILL'); }, timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); started.delete(child); reject(e); });
    child.once('exit', (code) => { clearTimeout(timer); started.delete(child); resolve({ code, output }); });
  });
}

/** `CLUSTER NODES` parsed. */
export function parseClusterNodes(text: string): ClusterNode[] {
  return text.split('\n').filter((l) => l.trim()).map((line) => {
    const [id, addr, flags, primary, , , , link, ...slots] = line.trim().split(' ');
    const port = Number(/:(\d+)@/.exec(addr!)?.[1] ?? /:(\d+)$/.exec(addr!)?.[1]);
    return {
      id: id!,
      port,
      flags: flags!.split(','),
      primaryId: primary === '-' ? null : primary!,
      connected: link === 'connected',
      slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
        const [from, to] = s.split('-').map(Number);
        return [from!, to ?? from!] as [number, number];
      }),
    };
  });
}

const infoField = (info: string, field: string) => new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();

/** A Redis Cluster on loopback; `startCluster(3)` is `startCluster({ primaries: 3 })`. */
export async function startCluster(options: number | ClusterOptions = {}): Promise<TestCluster> {
  const o: ClusterOptions = typeof options === 'number' ? { primaries: options } : options;
  const primaries = o.primaries ?? 3;
  const perPrimary = o.replicasPerPrimary ?? 0;
  const nodeTimeout = o.nodeTimeoutMs ?? (perPrimary > 0 ? 2000 : 5000);
  const total = primaries * (1 + perPrimary);
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-test-cluster-'));
  const taken = new Set<number>();
  const ports: number[] = [];
  const children = new Map<number, ChildProcess>();
  const admins = new Map<number, Redis>();
  const replicasAtKill = new Map<number, number[]>();

  const launch = (port: number) => {
    const nodeDir = path.join(dir, String(port));
    mkdirSync(nodeDir, { recursive: true });
    const child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir, '--cluster-enabled', 'yes',
      '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeout),
      // A replica is promotable however long it was cut off from its primary.
      '--cluster-replica-validity-factor', '0',
      // Redis 7 holds every full sync 5 s by default (for more replicas to join it).
      '--repl-diskless-sync-delay', '0',
      '--save', '', '--appendonly', o.appendonly ? 'yes' : 'no', ...(o.appendonly ? ['--appendfsync', 'always'] : []),
      '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'notice', '--logfile', 'redis.log',
    ], { stdio: 'ignore' });
    started.add(child);
    child.once('exit', () => started.delete(child));
    children.set(port, child);
  };

  const alive = (port: number) => { const c = children.get(port); return !!c && running(c); };

  const admin = (port: number): Redis => {
    let r = admins.get(port);
    if (r && r.status !== 'end') return r;
    r = new Redis({
      port, host: '127.0.0.1', maxRetriesPerRequest: 0, enableOfflineQueue: true, connectTimeout: 2000, commandTimeout: 5000,
      retryStrategy: () => null, enableReadyCheck: false, lazyConnect: false,
    });
    r.on('error', () => {});
    admins.set(port, r);
    return r;
  };
  const call = (port: number, ...args: Array<string | number>) => {
    if (!alive(port)) return Promise.reject(new Error(`node ${port} is not running`));
    return admin(port).call(String(args[0]), ...args.slice(1));
  };
  const info = async (port: number, section: string) => String(await call(port, 'INFO', section));
  const livePorts = () => ports.filter(alive);

  /** The first live node's answer (a dead or busy node is skipped). */
  async function ask<T>(f: (port: number) => Promise<T>): Promise<T> {
    let last: unknown = new Error('no node is running');
    for (const port of livePorts()) {
      try { return await f(port); } catch (e) { last = e; }
    }
    throw last;
  }
  const nodes = () => ask(async (p) => parseClusterNodes(String(await call(p, 'CLUSTER', 'NODES'))));
  const roleOf = async (port: number) => {
    try { return String(((await call(port, 'ROLE')) as unknown[])[0]); } catch { return 'unknown'; }
  };
  const withRole = async (role: string) => {
    const live = livePorts();
    const roles = await Promise.all(live.map(roleOf));
    return live.filter((_, i) => roles[i] === role).sort((a, b) => a - b);
  };
  const replicasOf = async (primaryPort: number) => {
    const all = await nodes();
    const primary = all.find((n) => n.port === primaryPort);
    if (!primary) return [];
    return all.filter((n) => n.primaryId === primary.id).map((n) => n.port).sort((a, b) => a - b);
  };

  /**
   * Every live node: cluster_state:ok, knows every node (none in handshake),
   * no slot migrating or importing, the same slot owners as the others, and
   * every live node's role as that node reports it (ROLE), a replica with the
   * primary it replicates from; every live replica's link up, and listed by
   * its primary. The reason it is not healthy yet, or null.
   */
  async function healthy(): Promise<string | null> {
    const live = livePorts();
    const ids = new Map<number, string>();
    const roles = new Map<number, { role: string; primary?: number; replicas: number[] }>();
    for (const port of live) {
      ids.set(port, String(await call(port, 'CLUSTER', 'MYID')));
      const role = (await call(port, 'ROLE')) as unknown[];
      if (role[0] === 'master') {
        roles.set(port, { role: 'master', replicas: (role[2] as Array<[string, string, string]>).map((r) => Number(r[1])) });
      } else {
        if (role[3] !== 'connected') return `${port}: replica link ${String(role[3])}`;
        const repl = await info(port, 'replication');
        if (infoField(repl, 'master_link_status') !== 'up') return `${port}: replica link down`;
        roles.set(port, { role: 'slave', primary: Number(role[2]), replicas: [] });
      }
    }
    for (const [port, r] of roles) {
      if (r.role === 'slave' && !roles.get(r.primary!)?.replicas.includes(port)) return `${port}: not listed by its primary ${r.primary}`;
    }
    const views: string[] = [];
    for (const port of live) {
      const state = String(await call(port, 'CLUSTER', 'INFO'));
      if (!state.includes('cluster_state:ok')) return `${port}: cluster_state not ok`;
      const raw = String(await call(port, 'CLUSTER', 'NODES'));
      const view = parseClusterNodes(raw);
      if (view.some((n) => n.flags.includes('handshake') || n.flags.includes('noaddr'))) return `${port}: a node in handshake`;
      if (view.length < total) return `${port}: knows ${view.length} of ${total} nodes`;
      if (/\[\d+-[<>]-/.test(raw)) return `${port}: a slot is migrating or importing`;
      for (const [other, r] of roles) {
        const seen = view.find((n) => n.id === ids.get(other));
        if (!seen) return `${port} does not know ${other}`;
        if (!seen.flags.includes(r.role)) return `${port} sees ${other} as ${seen.flags.join(',')}, it is ${r.role}`;
        if (r.role === 'slave' && seen.primaryId !== ids.get(r.primary!)) return `${port} sees ${other} replicate another primary`;
      }
      views.push(view.filter((n) => n.slots.length && !n.flags.includes('fail')).map((n) => `${n.port}:${n.slots.map((x) => x.join('-')).join(',')}`).sort().join(' '));
    }
    if (new Set(views).size > 1) return `the nodes disagree about the slots: ${views.join(' | ')}`;
    return null;
  }

  async function waitForHealthy(timeoutMs = 60_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    let why: string | null = 'not asked';
    while (Date.now() < end) {
      why = await healthy().catch((e: unknown) => String(e));
      if (why === null) return;
      await sleep(100);
    }
    throw new Error(`cluster not healthy within ${timeoutMs} ms: ${why}`);
  }

  async function stop(): Promise<void> {
    for (const r of admins.values()) r.disconnect();
    admins.clear();
    await Promise.all([...children.values()].map((c) => new Promise<void>((resolve) => {
      if (!running(c)) return resolve();
      const timer = setTimeout(() => { if (running(c)) c.kill('SIGKILL'); }, 5000);
      c.once('exit', () => { clearTimeout(timer); resolve(); });
      try { process.kill(c.pid!, 'SIGCONT'); } catch { /* gone */ }
      c.kill('SIGTERM');
    })));
    rmSync(dir, { recursive: true, force: true });
  }

  try {
    for (let i = 0; i < total; i++) {
      const port = await freeNodePort(taken);
      ports.push(port);
      launch(port);
    }
    for (const p of ports) await waitForPort(p, 15_000);
    // redis-cli makes the first `primaries` nodes primaries and gives them the others as replicas.
    const create = await redisCli(['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(perPrimary), '--cluster-yes']);
    if (create.code !== 0) throw new Error(`cluster create failed: ${create.output}`);
    await waitForHealthy(90_000);
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    ports,
    url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    dir,
    primaries: () => withRole('master'),
    replicas: () => withRole('slave'),
    replicasOf,
    nodes,
    async nodeOfSlot(slot) {
      const slots = (await ask((p) => call(p, 'CLUSTER', 'SLOTS'))) as Array<[number, number, [string, number, string?]]>;
      const owner = slots.find(([from, to]) => slot >= from && slot <= to);
      if (!owner) throw new Error(`no node owns slot ${slot}`);
      return Number(owner[2][1]);
    },
    keySlot: async (key) => Number(await ask((p) => call(p, 'CLUSTER', 'KEYSLOT', key))),
    async slotsOf(port) {
      const node = (await nodes()).find((n) => n.port === port);
      if (!node) throw new Error(`no node on ${port}`);
      return node.slots.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => from + i)).sort((a, b) => a - b);
    },
    call,
    alive,
    async kill(port) {
      const c = children.get(port);
      if (!c || !running(c)) return;
      // Its replicas as they are now (once one is promoted, the nodes no longer name them so).
      replicasAtKill.set(port, await replicasOf(port).catch(() => []));
      const exited = new Promise((r) => c.once('exit', r));
      process.kill(c.pid!, 'SIGKILL');
      await exited;
      admins.get(port)?.disconnect();
      admins.delete(port);
    },
    async reshard(fromPort, toPort, slots, opts = {}) {
      const all = await nodes();
      const from = all.find((n) => n.port === fromPort);
      const to = all.find((n) => n.port === toPort);
      if (!from || !to) throw new Error(`reshard: no node on ${from ? toPort : fromPort}`);
      const t0 = Date.now();
      const r = await redisCli([
        '--cluster', 'reshard', `127.0.0.1:${toPort}`, '--cluster-from', from.id, '--cluster-to', to.id,
        '--cluster-slots', String(slots), '--cluster-yes', '--cluster-timeout', '60000', '--cluster-pipeline', '10',
        ...(opts.atomic ? ['--cluster-use-atomic-slot-migration'] : []),
      ], 600_000);
      const ms = Date.now() - t0;
      if (r.code !== 0) throw new Error(`redis-cli --cluster reshard failed (${r.code}): ${r.output.slice(-3000)}`);
      await waitForHealthy(60_000);
      return { output: r.output, ms };
    },
    async waitForFailover(oldPrimaryPort, timeoutMs = 60_000) {
      const candidates = replicasAtKill.get(oldPrimaryPort) ?? await replicasOf(oldPrimaryPort);
      if (!candidates.length) throw new Error(`the primary on ${oldPrimaryPort} has no replica`);
      const end = Date.now() + timeoutMs;
      let why = '';
      while (Date.now() < end) {
        const promoted = [];
        for (const p of candidates.filter(alive)) if ((await roleOf(p)) === 'master') promoted.push(p);
        if (promoted.length) {
          const states = await Promise.all(livePorts().map((p) => call(p, 'CLUSTER', 'INFO').then(String, () => '')));
          if (states.every((s) => s.includes('cluster_state:ok'))) return { port: promoted[0]!, at: Date.now() };
          why = 'promoted, cluster_state not ok everywhere';
        } else {
          why = `no replica of ${oldPrimaryPort} (${candidates.join(', ')}) reports role master`;
        }
        await sleep(20);
      }
      throw new Error(`no failover of ${oldPrimaryPort} within ${timeoutMs} ms: ${why}`);
    },
    waitForHealthy,
    stop,
  };
}
