// The store: every job-state change is one Lua script call (lua/), keys in
// KEYS, time from Redis. Methods take plain values and return plain values;
// the connection layer never sees Redis. Reads that need no atomicity use
// plain commands.
import type { Cluster, Redis } from 'ioredis';
import type { BatchOp, BatchResult, ReservedJob } from './batcher.js';
import { Keys, memberTube } from './keys.js';
import { defineScripts, loadScripts, scriptMethod } from './scripts.js';

export interface JobStats {
  id: string; tube: string; state: 'ready' | 'delayed' | 'reserved' | 'buried';
  pri: number; ageMs: number; delay: number; ttr: number; timeLeftMs: number;
  reserves: number; timeouts: number; releases: number; buries: number; kicks: number;
}

export interface TubeCounts {
  urgent: number; ready: number; reserved: number; delayed: number; buried: number;
  totalJobs: number; cmdDelete: number; cmdPauseTube: number; pause: number; pauseLeftMs: number;
}

export interface TotalCounts { tubes: Map<string, TubeCounts>; totalJobs: number; jobTimeouts: number }

const STATES = ['', 'ready', 'delayed', 'reserved', 'buried'] as const;
const TUBE_COUNT_FIELDS = 11;

type ScriptFn = (...args: Array<string | number | Buffer>) => Promise<unknown>;

/** Redis' TIME reply ([seconds, microseconds]) in milliseconds. */
function redisMs([seconds, micros]: [string, string]): number {
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

function str(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('latin1') : String(v);
}

export class Store {
  private readonly scripts: Map<string, ScriptFn> = new Map();

  constructor(readonly redis: Redis | Cluster, readonly keys: Keys) {
    const sources = loadScripts();
    defineScripts(redis, sources);
    const r = redis as unknown as Record<string, ScriptFn>;
    for (const name of sources.keys()) {
      const method = scriptMethod(name);
      this.scripts.set(name, r[method]!.bind(redis));
      this.scripts.set(`${name}Buffer`, r[`${method}Buffer`]!.bind(redis));
    }
  }

  /** Calls a script with the 8 global keys, then 5 keys per tube, then args. */
  private run(name: string, tubes: readonly string[], args: Array<string | number | Buffer>, buffers = false): Promise<unknown> {
    const keys = [...this.keys.globals];
    for (const t of tubes) keys.push(...this.keys.tube(t));
    return this.scripts.get(buffers ? `${name}Buffer` : name)!(keys.length, ...keys, ...args);
  }

  /** One lua/batch.lua call for ops from any connections; one result per op, in order. */
  async applyBatch(ops: readonly BatchOp[]): Promise<BatchResult[]> {
    const tubes: string[] = [];
    const index = new Map<string, number>();
    const tubeIndex = (name: string): number => {
      let i = index.get(name);
      if (i === undefined) {
        tubes.push(name);
        i = tubes.length;
        index.set(name, i);
      }
      return i;
    };
    const fields: Array<string | number | Buffer> = [];
    for (const op of ops) {
      switch (op.code) {
        case 'p': fields.push('p', tubeIndex(op.tube), op.pri, op.delay, op.ttr, op.body!); break;
        case 'i': fields.push('i'); break;
        case 'd': case 't': fields.push(op.code, op.owner, op.id, tubeIndex(op.tube)); break;
        case 'r': fields.push('r', op.owner, op.id, tubeIndex(op.tube), op.pri, op.delay); break;
        case 'b': fields.push('b', op.owner, op.id, tubeIndex(op.tube), op.pri); break;
        case 'v':
          fields.push('v', op.owner, op.tubes.length);
          for (const t of op.tubes) fields.push(tubeIndex(t));
          break;
      }
    }
    const head: Array<string | number | Buffer> = [this.keys.events, this.keys.shards, this.keys.shard, tubes.length, ...tubes];
    const raw = (await this.run('batch', tubes, head.concat(fields), true)) as unknown[];
    const results: BatchResult[] = new Array(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const r = raw[i];
      if (Array.isArray(r)) results[i] = { id: str(r[0]), ttr: r[1] as number, body: r[2] as Buffer, tube: tubes[(r[3] as number) - 1]! };
      else results[i] = typeof r === 'number' ? r : str(r);
    }
    return results;
  }

  /** The tube of a job, or null when it does not exist. */
  async jobTube(id: string): Promise<string | null> {
    const t = await this.run('jobTube', [], [id]);
    return t === null ? null : String(t);
  }

  async reserveJob(owner: string, id: string, tube: string): Promise<ReservedJob | null> {
    const r = (await this.run('reserveJob', [tube], [owner, id, tube], true)) as unknown[];
    if (r[0] === 0) return null;
    return { id, tube, ttr: r[2] as number, body: r[3] as Buffer };
  }

  /** kick in chunks so one huge bound never blocks Redis for long. */
  async kick(tube: string, bound: number, chunk = 1000): Promise<number> {
    let kicked = 0;
    let mode = '';
    while (kicked < bound) {
      const step = Math.min(chunk, bound - kicked);
      const [n, used] = (await this.run('kick', [tube], [this.keys.events, step, mode, tube])) as [number, string];
      kicked += n;
      mode = used;
      if (n < step) break;
    }
    return kicked;
  }

  async kickJob(id: string, tube: string): Promise<boolean> {
    return (await this.run('kickJob', [tube], [this.keys.events, id, tube])) === 1;
  }

  /** A closed connection's reservations go back to ready. */
  async releaseOwned(owner: string, jobs: Iterable<[string, string]>): Promise<number> {
    const tubes: string[] = [];
    const index = new Map<string, number>();
    const pairs: Array<string | number> = [];
    for (const [id, tube] of jobs) {
      let i = index.get(tube);
      if (i === undefined) { tubes.push(tube); i = tubes.length; index.set(tube, i); }
      pairs.push(id, i);
    }
    if (pairs.length === 0) return 0;
    return (await this.run('releaseOwned', tubes, [this.keys.events, owner, tubes.length, ...tubes, ...pairs])) as number;
  }

  async peekJob(id: string): Promise<{ id: string; body: Buffer } | null> {
    const r = (await this.run('peekJob', [], [id, '1'], true)) as unknown[];
    if (r.length === 0) return null;
    return { id, body: r[r.length - 1] as Buffer };
  }

  async peekTube(tube: string, which: 'ready' | 'delayed' | 'buried'): Promise<{ id: string; body: Buffer } | null> {
    const r = (await this.run('peekTube', [tube], [which], true)) as unknown[];
    if (r.length === 0) return null;
    return { id: str(r[0]), body: r[1] as Buffer };
  }

  async statsJob(id: string): Promise<JobStats | null> {
    const r = (await this.run('peekJob', [], [id, '0'])) as Array<string | number>;
    if (r.length === 0) return null;
    const n = (i: number) => Number(r[i]);
    return {
      id: String(r[0]), tube: String(r[1]), state: STATES[n(2)] as JobStats['state'],
      pri: n(3), ageMs: n(4), delay: n(5), ttr: n(6), timeLeftMs: n(7),
      reserves: n(8), timeouts: n(9), releases: n(10), buries: n(11), kicks: n(12),
    };
  }

  /** Counts of the named tubes (only those that exist) plus global totals. */
  async tubeCounts(names: readonly string[]): Promise<TotalCounts> {
    const r = (await this.run('statsTubes', names, [...names])) as number[];
    const tubes = new Map<string, TubeCounts>();
    names.forEach((name, i) => {
      const v = r.slice(i * TUBE_COUNT_FIELDS, (i + 1) * TUBE_COUNT_FIELDS);
      if (v[0] !== 1) return;
      tubes.set(name, {
        urgent: v[1]!, ready: v[2]!, reserved: v[3]!, delayed: v[4]!, buried: v[5]!,
        totalJobs: v[6]!, cmdDelete: v[7]!, cmdPauseTube: v[8]!, pause: v[9]!, pauseLeftMs: v[10]!,
      });
    });
    const g = names.length * TUBE_COUNT_FIELDS;
    return { tubes, totalJobs: r[g]!, jobTimeouts: r[g + 1]! };
  }

  async listTubes(): Promise<string[]> {
    return this.redis.smembers(this.keys.tubes);
  }

  async pauseTube(tube: string, delay: number): Promise<boolean> {
    return (await this.run('pauseTube', [tube], [this.keys.events, delay, tube])) === 1;
  }

  /** delta +1 / -1, or 'drop' for all of a (dead) sidecar's references. */
  async refTube(tube: string, node: string, delta: 1 | -1 | 'drop'): Promise<void> {
    await this.run('refTube', [tube], [node, delta, tube]);
  }

  /** Renews a sidecar's lease; true when it had none (first beat, or it lapsed). */
  async heartbeat(node: string, ttlMs: number, fields: Array<string | number>): Promise<boolean> {
    const keys = [...this.keys.globals, this.keys.node(node)];
    return (await this.scripts.get('heartbeat')!(keys.length, ...keys, node, ttlMs, ...fields)) === 1;
  }

  async forgetNode(node: string): Promise<void> {
    const keys = [...this.keys.globals, this.keys.node(node)];
    await this.scripts.get('forgetNode')!(keys.length, ...keys, node);
  }

  /** Sidecars by whether their heartbeat is current (judged on Redis' clock). */
  async nodes(): Promise<{ live: string[]; dead: string[] }> {
    const [[, time], [, all]] = (await this.redis.multi().time().zrange(this.keys.nodes, 0, -1, 'WITHSCORES').exec()) as [[null, [string, string]], [null, string[]]];
    const now = redisMs(time);
    const live: string[] = [];
    const dead: string[] = [];
    for (let i = 0; i < all.length; i += 2) (Number(all[i + 1]) > now ? live : dead).push(all[i]!);
    return { live, dead };
  }

  /** Counter snapshots of the given sidecars. */
  async nodeSnapshots(nodes: readonly string[]): Promise<Array<Record<string, string>>> {
    if (nodes.length === 0) return [];
    const p = this.redis.pipeline();
    for (const n of nodes) p.hgetall(this.keys.node(n));
    const res = (await p.exec()) ?? [];
    return res.map(([, v]) => (v ?? {}) as Record<string, string>);
  }

  /** Redis' clock minus ours (ms), learned from each housekeeping tick. */
  private clockOffset = 0;

  /**
   * Housekeeping tick: finds which tubes have due delayed jobs or expired
   * reservations (reading only entries due by now on Redis' clock, as last
   * estimated), then moves them in one script call, which decides on Redis'
   * own clock. Returns {moved, ms until the next due time or -1}.
   */
  async promoteDue(limit: number): Promise<{ moved: number; nextDueMs: number }> {
    const dueBy = Date.now() + this.clockOffset + 50;
    const [[, time], [, delayed], [, reserved]] = (await this.redis.multi()
      .time()
      .zrangebyscore(this.keys.delayed, '-inf', dueBy, 'LIMIT', 0, limit)
      .zrangebyscore(this.keys.reserved, '-inf', dueBy, 'LIMIT', 0, limit)
      .exec()) as [[null, [string, string]], [null, string[]], [null, string[]]];
    this.clockOffset = redisMs(time) - Date.now();
    const names = [...new Set([...delayed, ...reserved].map(memberTube))];
    const [moved, nextDueMs] = (await this.run('promote', names, [this.keys.events, limit, ...names])) as [number, number];
    return { moved, nextDueMs };
  }

}
