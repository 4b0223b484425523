// The job store on Redis, for one shard's keys: every state change is one
// call of a Lua function (lua/jobs/, src/store/redis/functions.ts) with its
// keys in KEYS and time from Redis. Reads that
// need no atomicity use plain commands.
import { OpCode, type AnyJobOp, type OpResult, type ReservedJob } from '../ops.js';
import type { JobInfo, JobPage, JobQuery, JobState, JobTotals, ListedJob, NodeSnapshot, PeekState, PeekedJob, TotalCounts, TubeCounts, TubeSetting } from '../job-store.js';
import { memberId, memberTube, type ShardKeys } from '../layout.js';
import { BatchEncoder, decodeBatch, LEASE_LAPSED, scriptKeys, StoredWatchLists, text, TubeIndex, WATCH_LIST_STALE } from './batch-codec.js';
import { sendEncoded } from './encoded-call.js';
import type { RespWriter } from './resp.js';
import { mapped, pipelined, type RedisClient } from './connect.js';
import { isStoreFull, StoreError } from '../errors.js';
import type { ShardStore } from '../sharded.js';
import type { BoundScript } from './functions.js';
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';

/** peekJob.lua's reply without the body (includes/jobs.lua job_reply), in order. */
export const JOB_INFO_REPLY = ['id', 'tube', 'state', 'pri', 'ageMs', 'delay', 'ttr', 'timeLeftUs',
  'reserves', 'timeouts', 'releases', 'buries', 'kicks'] as const;
/** tubeCounts.lua's reply per tube, in order; then the global total-jobs and job-timeouts. */
export const TUBE_COUNTS_REPLY = ['exists', 'urgent', 'ready', 'reserved', 'delayed', 'buried',
  'totalJobs', 'cmdDelete', 'cmdPauseTube', 'pause', 'pauseLeftUs', 'maxReserved', 'reserveRate', 'dedupWindow',
  'jobsExpired', 'duplicatePuts'] as const;

const STATES: readonly JobState[] = ['ready', 'delayed', 'reserved', 'buried']; // 1-based in Lua

/** A job_reply (includes/jobs.lua) as a JobInfo. */
function jobInfoOf(r: ReadonlyArray<string | number>): JobInfo {
  const v = Object.fromEntries(JOB_INFO_REPLY.map((name, i) => [name, Number(r[i])])) as Record<(typeof JOB_INFO_REPLY)[number], number>;
  return { ...v, id: String(r[0]), tube: String(r[1]), state: STATES[v.state - 1]! };
}

export type Args = Array<string | number | Buffer>;

/** A script's keys and arguments. */
export interface ScriptCall { keys: readonly string[]; args: Args }

export interface Promoted { moved: number; nextDueMs: number }

/** promoteDue.lua's reply. */
export function promoted(raw: unknown): Promoted {
  const [moved, nextDueMs] = raw as [number, number];
  return { moved, nextDueMs };
}

/** Reservations looked at per script call when releasing a holder's jobs found in the store. */
const RELEASE_PAGE = 500;

/** Only a put makes Redis hold more (a burnt id is one INCR of an existing key). */
const grows = (op: AnyJobOp) => op.code === OpCode.Put || op.code === OpCode.PutWith;

/** What a reserve gets that Redis refused for want of a lease: it took nothing. */
const LAPSED = new StoreError('failed', 'this sidecar has no lease in Redis (lapsed, or reaped): the reserve took nothing');
const lapsed = (op: AnyJobOp, r: OpResult | StoreError) => r === LEASE_LAPSED && (op.code === OpCode.Reserve || op.code === OpCode.Candidate);

/** Reserves of a sidecar without a lease took nothing: they say so. */
function markLapsed(ops: readonly AnyJobOp[], results: Array<OpResult | StoreError>): Array<OpResult | StoreError> {
  for (let i = 0; i < results.length; i++) if (lapsed(ops[i]!, results[i]!)) results[i] = LAPSED;
  return results;
}

/** Redis' TIME reply ([seconds, microseconds]) in milliseconds. */
function redisMs([seconds, micros]: [string, string]): number {
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

export class RedisJobStore implements ShardStore {
  /** Redis' clock minus ours (ms), learned from each promotion tick. */
  private clockOffset = 0;
  private readonly encoder: BatchEncoder;
  /** The watch lists of this sidecar's connections kept in this shard (batch.lua 's', 'k'). */
  private readonly watchLists = new StoredWatchLists();
  /** The cluster slot of this shard's keys (null on one Redis: no routing). */
  private readonly slot: number | null;

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: ReadonlyMap<string, BoundScript>,
    private readonly keys: ShardKeys,
    /** Writes count as done only once this many replicas have them (WAIT), within timeoutMs. */
    private readonly replicas: { count: number; timeoutMs: number } = { count: 0, timeoutMs: 0 },
  ) {
    this.encoder = new BatchEncoder(keys, this.watchLists);
    this.slot = redis instanceof Cluster ? calculateSlot(keys.globals[0]!) : null;
  }

  /**
   * --min-replicas: one WAIT after a call that wrote. Fewer replicas in time
   * means the writes may vanish in a failover: the outcome is unknown, and
   * no reply may claim it.
   */
  private async replicated(): Promise<void> {
    const { count, timeoutMs } = this.replicas;
    if (count === 0) return;
    // WAIT counts the writes of the link it is sent on: on a Redis Cluster that is the
    // link to this shard's node, which a keyed command in the same pipeline picks.
    let acks: number;
    try {
      [, acks] = (await pipelined(this.redis.pipeline().exists(this.keys.stats).call('WAIT', count, timeoutMs))) as [number, number];
    } catch (err) {
      // The writes were made; whether they survive a failover is what could not be learnt.
      throw new StoreError('unknown', `could not learn whether replicas had the writes: ${(err as Error).message}`);
    }
    if (acks < count) throw new StoreError('unknown', `only ${acks} of ${count} replicas had the writes within ${timeoutMs} ms`);
  }

  /** Calls a job script with the 10 global keys, then 5 keys per tube, then args. */
  private run(name: string, tubes: readonly string[], args: Args, buffers = false): Promise<unknown> {
    return this.call(name, scriptKeys(this.keys, tubes), args, buffers);
  }

  private call(name: string, keys: readonly string[], args: Args, buffers = false): Promise<unknown> {
    const script = this.scripts.get(name)!;
    return mapped((buffers ? script.buffers : script.strings)(keys.length, ...keys, ...args));
  }

  /** Brings data written by an older redstalk up to date (run once at start, before serving). */
  async upgrade(): Promise<void> {
    await this.orderTubes();
    await this.countJobs();
  }

  /** Turns the set of tube names of a data set written before tube-order into tube-order. */
  private async orderTubes(): Promise<void> {
    const legacyTubes = `${this.keys.tag}:tubes`; // a set, before tube-order kept list-tubes' order
    if ((await mapped(this.redis.type(legacyTubes))) !== 'set') return;
    const names = await mapped(this.redis.smembers(legacyTubes));
    const keys = [...this.keys.globals, legacyTubes];
    for (const t of names) keys.push(...this.keys.tube(t));
    await this.call('upgradeTubeOrder', keys, names);
  }

  /** Counts the jobs by state once for a data set written before they were kept as jobs move. */
  private async countJobs(): Promise<void> {
    if (await mapped(this.redis.hexists(this.keys.stats, 'jobs-counted'))) return;
    const names = await this.listTubes();
    await this.run('countJobs', names, names);
  }

  /**
   * Out of memory, Redis refuses a script that may grow it: the batch is then
   * sent again without its puts through batchAllowOom, and each put alone
   * gets the error, so that reserves, deletes and the rest still work.
   */
  async apply(ops: readonly AnyJobOp[]): Promise<Array<OpResult | StoreError>> {
    const growing = ops.some(grows);
    let results: Array<OpResult | StoreError>;
    if (!growing) results = await this.applyAs('batchAllowOom', ops);
    else {
      try {
        results = await this.applyAs('batch', ops);
      } catch (err) {
        if (!isStoreFull(err)) throw err;
        const rest = ops.filter((op) => !grows(op));
        const applied = rest.length > 0 ? await this.applyAs('batchAllowOom', rest) : [];
        let k = 0;
        results = ops.map((op) => (grows(op) ? (err as StoreError) : applied[k++]!));
      }
    }
    await this.replicated();
    return markLapsed(ops, results);
  }

  /** Writes the batch as a section of a batchSections call (NodeCalls); `probe`: on a Redis Cluster. */
  writeSection(w: RespWriter, ops: readonly AnyJobOp[], probe: boolean): void {
    this.encoder.section(w, ops, probe);
  }

  /** A section's reply, as apply() answers (no --min-replicas: sections are not used with it). */
  async settleSection(ops: readonly AnyJobOp[], raw: unknown[]): Promise<Array<OpResult | StoreError>> {
    return markLapsed(ops, await this.settle('batch', ops, raw));
  }

  /** The call that carried these ops failed: whether the watch lists it sent were stored is not known, so they go again. */
  unsure(ops: readonly AnyJobOp[]): void {
    for (const op of ops) if (op.watch >= 0) this.watchLists.unsure(op.owner);
  }

  private async applyAs(script: 'batch' | 'batchAllowOom', ops: readonly AnyJobOp[]): Promise<OpResult[]> {
    const { head, reload } = this.scripts.get(script)!;
    let raw: unknown[];
    try {
      raw = (await mapped(sendEncoded(this.redis, this.encoder.encode(ops, head), this.slot, reload))) as unknown[];
    } catch (err) {
      this.unsure(ops);
      throw err;
    }
    return this.settle(script, ops, raw);
  }

  private async settle(script: 'batch' | 'batchAllowOom', ops: readonly AnyJobOp[], raw: unknown[]): Promise<OpResult[]> {
    const results = decodeBatch(ops, raw);
    // A watch list the shard does not hold at that version (lost with Redis' data, or
    // its sidecar reaped meanwhile): those reserves, which took nothing, go again with it.
    const stale: number[] = [];
    for (let i = 0; i < ops.length; i++) {
      if (results[i] === WATCH_LIST_STALE && ops[i]!.watch >= 0) {
        this.watchLists.unsure(ops[i]!.owner);
        stale.push(i);
      }
    }
    if (stale.length > 0) {
      const again = await this.applyAs(script, stale.map((i) => ops[i]!));
      stale.forEach((i, k) => { results[i] = again[k]!; });
    }
    return results;
  }

  /** Watch lists this sidecar may hold in this shard (for tests). */
  get storedWatchLists(): number {
    return this.watchLists.size;
  }

  async watchListsWith(tube: string, owners: readonly string[]): Promise<number> {
    if (owners.length === 0) return 0;
    const p = this.redis.pipeline();
    for (const owner of owners) p.sismember(this.keys.watchList(owner), tube);
    return ((await pipelined(p)) as number[]).reduce((a, b) => a + b, 0);
  }

  async totals(): Promise<JobTotals> {
    const [counts, reserved, delayed, tubes] = (await pipelined(this.redis.pipeline()
      .hmget(this.keys.stats, 'jobs-urgent', 'jobs-ready', 'jobs-buried', 'total-jobs', 'job-timeouts')
      .zcard(this.keys.reserved).zcard(this.keys.delayed).zcard(this.keys.tubes))) as [Array<string | null>, number, number, number];
    const [urgent, ready, buried, totalJobs, jobTimeouts] = counts.map((v) => Number(v ?? 0)) as [number, number, number, number, number];
    return { urgent, ready, reserved, delayed, buried, tubes, totalJobs, jobTimeouts };
  }

  /** The tubes Redis lists as having ready jobs (ready-tubes; for tests and diagnostics). */
  async tubesWithReadyJobs(): Promise<string[]> {
    return mapped(this.redis.smembers(this.keys.readyTubes));
  }

  async jobTube(id: string): Promise<string | null> {
    const t = await this.run('jobTube', [], [id]);
    return t === null ? null : String(t);
  }

  async reserveJob(owner: string, id: string, tube: string): Promise<ReservedJob | null> {
    const r = (await this.run('reserveJob', [tube], [owner, id, tube], true)) as unknown[];
    if (r[0] === 0) return null;
    await this.replicated();
    return { id, tube, ttr: r[2] as number, body: r[3] as Buffer, waitedMs: -1 };
  }

  /** In chunks, so one huge bound never blocks Redis for long. */
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
    if (kicked > 0) await this.replicated();
    return kicked;
  }

  async kickJob(id: string, tube: string): Promise<boolean> {
    const kicked = (await this.run('kickJob', [tube], [this.keys.events, id, tube])) === 1;
    if (kicked) await this.replicated();
    return kicked;
  }

  async releaseOwned(owner: string, jobs: Iterable<readonly [string, string]>): Promise<number> {
    const tubes = new TubeIndex();
    const pairs: Args = [];
    for (const [id, tube] of jobs) pairs.push(id, tubes.of(tube));
    if (pairs.length === 0) return 0;
    const names = tubes.names;
    const moved = (await this.run('releaseOwned', names, [this.keys.events, owner, names.length, ...names, ...pairs])) as number;
    // A hand-back a replica does not have is lost in a failover: unconfirmed, it fails, and is tried again.
    // Confirmed even when nothing moved: a try that found nothing may be looking at a primary that
    // took the previous, unconfirmed try and is about to be replaced by a replica without it.
    await this.replicated();
    return moved;
  }

  async releaseHeldBy(owner: string): Promise<number> {
    // Every reservation, a page at a time; the script keeps only those of `owner`.
    const members = await mapped(this.redis.zrange(this.keys.reserved, 0, -1));
    if (members.length === 0) await this.replicated(); // (nothing held: confirmed all the same, see releaseOwned)
    let moved = 0;
    for (let i = 0; i < members.length; i += RELEASE_PAGE) {
      moved += await this.releaseOwned(owner, members.slice(i, i + RELEASE_PAGE).map((m) => [memberId(m), memberTube(m)] as const));
    }
    return moved;
  }

  async tubeSet(tube: string, setting: TubeSetting, value: number): Promise<void> {
    await this.run('tubeSet', [tube], [this.keys.events, setting, value, tube]);
  }

  async pauseTube(tube: string, delaySeconds: number): Promise<boolean> {
    const paused = (await this.run('pauseTube', [tube], [this.keys.events, delaySeconds, tube])) === 1;
    if (paused) await this.replicated();
    return paused;
  }

  async peekJob(id: string): Promise<PeekedJob | null> {
    const r = (await this.run('peekJob', [], [id, '1'], true)) as unknown[];
    if (r.length === 0) return null;
    return { id, body: r[r.length - 1] as Buffer };
  }

  async peekTube(tube: string, state: PeekState): Promise<PeekedJob | null> {
    const r = (await this.run('peekTube', [tube], [state], true)) as unknown[];
    if (r.length === 0) return null;
    return { id: text(r[0]), body: r[1] as Buffer };
  }

  async jobInfo(id: string): Promise<JobInfo | null> {
    const r = (await this.run('peekJob', [], [id, '0'])) as Array<string | number>;
    return r.length === 0 ? null : jobInfoOf(r);
  }

  async oldestReady(names: readonly string[]): Promise<Map<string, number>> {
    if (names.length === 0) return new Map();
    const ages = (await this.run('oldestReady', names, [...names])) as number[];
    return new Map(names.flatMap((name, i) => (ages[i]! >= 0 ? [[name, ages[i]!] as const] : [])));
  }

  async listJobs(tube: string, q: JobQuery): Promise<JobPage> {
    const r = (await this.run('listJobs', [tube], [tube, q.state, q.cursor, q.limit, q.scan, q.needle, q.preview], true)) as unknown[];
    const width = JOB_INFO_REPLY.length + 2;
    const jobs: ListedJob[] = [];
    for (let at = 2; at < r.length; at += width) {
      const row = r.slice(at, at + width);
      jobs.push({ ...jobInfoOf(row.slice(0, JOB_INFO_REPLY.length).map((v) => (typeof v === 'number' ? v : text(v)))),
        holder: text(row[width - 2]), body: row[width - 1] as Buffer });
    }
    return { jobs, next: text(r[0]), scanned: r[1] as number };
  }

  async tubeCounts(names: readonly string[]): Promise<TotalCounts> {
    const r = (await this.run('tubeCounts', names, [...names])) as number[];
    const width = TUBE_COUNTS_REPLY.length;
    const tubes = new Map<string, TubeCounts>();
    names.forEach((name, t) => {
      const v = Object.fromEntries(TUBE_COUNTS_REPLY.map((field, i) => [field, r[t * width + i]!])) as Record<(typeof TUBE_COUNTS_REPLY)[number], number>;
      if (v.exists !== 1) return;
      const { exists: _exists, ...counts } = v;
      tubes.set(name, counts);
    });
    const g = names.length * width;
    return { tubes, totalJobs: r[g]!, jobTimeouts: r[g + 1]! };
  }

  listTubes(): Promise<string[]> {
    return mapped(this.redis.zrange(this.keys.tubes, 0, -1));
  }

  async refTube(tube: string, node: string, delta: 1 | -1 | 'drop'): Promise<void> {
    await this.run('refTube', [tube], [node, delta, tube]);
  }

  async heartbeat(node: string, ttlMs: number, snapshot: ReadonlyArray<string | number>): Promise<boolean> {
    const { keys, args } = this.heartbeatCall(node, ttlMs, snapshot);
    return (await this.call('heartbeat', keys, args)) === 1;
  }

  /** heartbeat.lua's keys and arguments (NodeCalls sends them as a section). */
  heartbeatCall(node: string, ttlMs: number, snapshot: ReadonlyArray<string | number>): ScriptCall {
    return { keys: [...this.keys.globals, this.keys.node(node)], args: [node, ttlMs, ...snapshot] };
  }

  async forgetNode(node: string): Promise<boolean> {
    return (await this.call('forgetNode', [...this.keys.globals, this.keys.node(node), this.keys.watchLists(node)], [node])) === 1;
  }

  async recordHistory(sample: string, slotMs: number, keep: number): Promise<boolean> {
    return (await this.call('history', [this.keys.history], [slotMs, keep, sample])) === 1;
  }

  history(): Promise<string[]> {
    return mapped(this.redis.zrange(this.keys.history, 0, -1));
  }

  async publishNodeInfo(node: string, info: Readonly<Record<string, string | number>>, ttlMs: number): Promise<void> {
    const key = this.keys.nodeInfo(node);
    await pipelined(this.redis.pipeline().del(key).hset(key, info).pexpire(key, ttlMs));
  }

  async nodeInfo(nodes: readonly string[]): Promise<NodeSnapshot[]> {
    if (nodes.length === 0) return [];
    const p = this.redis.pipeline();
    for (const n of nodes) p.hgetall(this.keys.nodeInfo(n));
    return ((await pipelined(p)) as Array<NodeSnapshot | null>).map((v) => v ?? {});
  }

  async nodes(): Promise<{ live: string[]; dead: string[] }> {
    // A pipeline, not MULTI: Redis refuses MULTI when out of memory, and these are reads.
    // (Not the tombstones of sidecars reaped or gone, below 0: forgetNode.lua.)
    const [time, all] = (await pipelined(this.redis.pipeline().time().zrangebyscore(this.keys.nodes, 0, '+inf', 'WITHSCORES'))) as [[string, string], string[]];
    const now = redisMs(time);
    const live: string[] = [];
    const dead: string[] = [];
    for (let i = 0; i < all.length; i += 2) (Number(all[i + 1]) > now ? live : dead).push(all[i]!);
    return { live, dead };
  }

  async nodeSnapshots(nodes: readonly string[], fields?: readonly string[]): Promise<NodeSnapshot[]> {
    if (nodes.length === 0) return [];
    const p = this.redis.pipeline();
    for (const n of nodes) {
      if (fields) p.hmget(this.keys.node(n), ...fields);
      else p.hgetall(this.keys.node(n));
    }
    const replies = (await pipelined(p)) as Array<NodeSnapshot | Array<string | null> | null>;
    if (!fields) return replies.map((v) => (v as NodeSnapshot | null) ?? {});
    return replies.map((v) => Object.fromEntries(fields.flatMap((f, i) => {
      const value = (v as Array<string | null>)[i];
      return value === null || value === undefined ? [] : [[f, value]];
    })));
  }

  /**
   * Finds which tubes have due delayed jobs, expired reservations or expiring jobs (reading
   * only entries due by now on Redis' clock, as last estimated), then moves
   * them in one script call, which decides on Redis' own clock.
   */
  async promoteDue(limit: number): Promise<Promoted> {
    const { keys, args } = await this.promoteCall(limit);
    return promoted(await this.call('promoteDue', keys, args));
  }

  /** promoteDue.lua's keys and arguments, once the tubes with due entries are known (NodeCalls sends them as a section). */
  async promoteCall(limit: number): Promise<ScriptCall> {
    const dueBy = Date.now() + this.clockOffset + 50;
    const [time, delayed, reserved, expiring] = (await pipelined(this.redis.pipeline()
      .time()
      .zrangebyscore(this.keys.delayed, '-inf', dueBy, 'LIMIT', 0, limit)
      .zrangebyscore(this.keys.reserved, '-inf', dueBy, 'LIMIT', 0, limit)
      .zrangebyscore(this.keys.expiring, '-inf', dueBy, 'LIMIT', 0, limit))) as [[string, string], string[], string[], string[]];
    this.clockOffset = redisMs(time) - Date.now();
    const names = [...new Set([...delayed, ...reserved, ...expiring].map(memberTube))];
    return { keys: scriptKeys(this.keys, names), args: [this.keys.events, limit, ...names] };
  }
}
