// The whole data set as one JobStore. Ops submitted go into a batcher per
// shard (src/store/batcher.ts: one script call carries what arrived while
// the last was out), each to the shard of its job id, else of its tube; a
// reserve over tubes of several shards is one op to its caller
// (reserve-across.ts). Calls every shard must answer (stats, list-tubes, the
// promotion timer, a dead sidecar's reservations) are combined here. Where
// the store has call groups (the shards one Redis node holds), the batches
// of a group's shards made in one turn go in one call.
// Sidecar registry (leases, counter snapshots) lives in shard 0; a lease is
// renewed in every shard, since each shard's scripts judge tube references by it.
import { Batcher, LinkFlush, type BatchLimits, type Taken } from './batcher.js';
import type { StoreError } from './errors.js';
import type { BatchObserver, JobCalls, JobInfo, JobPage, JobQuery, JobStore, JobTotals, NodeSnapshot, PeekState, PeekedJob, ShardMap, TotalCounts, TubeSetting } from './job-store.js';
import { jobOps, OpCode, type AnyJobOp, type OpResult, type ReservedJob } from './ops.js';
import { reserveAcross, type TubeParts } from './reserve-across.js';

/** One shard's store: the calls of a JobStore, and the batch call its batcher makes. */
export interface ShardStore extends JobCalls {
  /**
   * Applies ops from any connections as one atomic call, in order; one result
   * per op, or a StoreError for an op that alone could not be applied (a put
   * while the store is full). A failure of the whole call rejects.
   */
  apply(ops: readonly AnyJobOp[]): Promise<Array<OpResult | StoreError>>;
}

/** A shard's batch as one section of a call that carries several. */
export interface Section { shard: number; ops: readonly AnyJobOp[] }

/** The ops of a call that ran none of them: they may go again, in calls of their own. */
export class NothingRan extends Error {}

/** Calls that carry the batches of several shards: those one Redis node holds. */
export interface CallGroups {
  /** The group whose call a shard's batch may join now; null: a call of its own. */
  groupOf(shard: number): string | null;
  /**
   * The sections in one call, run in order, each as a call of its own would
   * run: each one's results, or the Error it alone met. Rejects with
   * NothingRan when the call ran nothing (a slot of the group moving), else
   * with the call's failure.
   */
  apply(group: string, sections: readonly Section[]): Promise<Array<Array<OpResult | StoreError> | Error>>;
  /** heartbeat() in every shard (snapshotOf: each shard's snapshot), one call per group. */
  heartbeat(node: string, ttlMs: number, snapshotOf: (shard: number) => ReadonlyArray<string | number>): Promise<boolean[]>;
  /** promoteDue() in every shard, one call per group. */
  promoteDue(limit: number): Promise<Array<{ moved: number; nextDueMs: number }>>;
}

/** Items grouped by shard, each group in the items' order. */
export function byShard<T, K = number>(items: Iterable<T>, shardOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const s = shardOf(item);
    const group = groups.get(s);
    if (group) group.push(item);
    else groups.set(s, [item]);
  }
  return groups;
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

const bodyBytes = (ops: readonly AnyJobOp[]) => {
  let n = 0;
  for (const op of ops) if (op.body) n += op.body.length;
  return n;
};

const ONE_SHARD: TubeParts = { shards: [0], tubes: [] };

export class ShardedJobStore implements JobStore {
  /** One per shard, each with its own calls in flight: shards are served in parallel. */
  private readonly batchers: readonly Batcher[];
  private observer: BatchObserver | null = null;
  /** Tube lists by shard, by the list's identity (a connection's watch list is one array per version). */
  private readonly partsOf = new WeakMap<readonly string[], TubeParts>();
  /** The shards asked to keep an owner's watch list (JobOp.watch), until it drops it. */
  private readonly keptWatch = new Map<string, Set<number>>();
  private readonly shardOf = new Map<Batcher, number>();
  /** Calls not made: batches that went as sections of one call. */
  private joined = 0;

  constructor(
    private readonly shards: readonly ShardStore[],
    private readonly map: ShardMap,
    private readonly limits: BatchLimits,
    /** Where an op's completion that threw is reported (it must not keep the others from theirs). */
    report: (err: unknown) => void,
    /**
     * Runs `send` with the links to the store held back until it returns
     * (corked): the calls of every shard made in one turn then leave in one
     * write per link, not one each.
     */
    private readonly together: (send: () => void) => void = (send) => send(),
    /** Batches of a group's shards taken in one turn go in one call (null: each in its own). */
    private readonly groups: CallGroups | null = null,
  ) {
    const link = shards.length > 1 ? new LinkFlush(together, (taken) => this.sendTaken(taken)) : null;
    this.batchers = shards.map((shard) => new Batcher((ops) => this.applyIn(shard, ops), limits, report, link));
    this.batchers.forEach((b, i) => this.shardOf.set(b, i));
  }

  /** A turn's batches: those of one call group in one call, the others each in their own. */
  private sendTaken(taken: Taken): void {
    const groups = this.groups;
    const joining = byShard(taken, ([batcher]) => (groups && taken.length > 1 ? groups.groupOf(this.shardOf.get(batcher)!) : null));
    for (const [group, members] of joining) {
      if (group === null) {
        for (const [batcher, batch] of members) batcher.send(batch);
        continue;
      }
      for (const call of this.byCallSize(members)) {
        if (call.length === 1) call[0]![0].send(call[0]![1]);
        else this.sendJoined(group, call);
      }
    }
  }

  /**
   * A group's batches in calls of at most maxBytes of bodies each (a batch
   * bigger than that alone goes alone), as one batch is bounded: a call's
   * time allows for moving so much.
   */
  private byCallSize(members: ReadonlyArray<readonly [Batcher, AnyJobOp[]]>): Array<Array<readonly [Batcher, AnyJobOp[]]>> {
    const calls: Array<Array<readonly [Batcher, AnyJobOp[]]>> = [];
    let call: Array<readonly [Batcher, AnyJobOp[]]> = [];
    let bytes = 0;
    for (const member of members) {
      const size = bodyBytes(member[1]);
      if (call.length > 0 && bytes + size > this.limits.maxBytes) {
        calls.push(call);
        call = [];
        bytes = 0;
      }
      call.push(member);
      bytes += size;
    }
    if (call.length > 0) calls.push(call);
    return calls;
  }

  private sendJoined(group: string, members: ReadonlyArray<readonly [Batcher, AnyJobOp[]]>): void {
    const sections = members.map(([b, ops]) => ({ shard: this.shardOf.get(b)!, ops }));
    const opCount = sum(sections.map((s) => s.ops.length));
    const t0 = performance.now();
    this.groups!.apply(group, sections).then((results) => {
      this.joined += members.length - 1;
      this.observer?.(opCount, performance.now() - t0, false);
      members.forEach(([b, ops], i) => {
        const r = results[i]!;
        if (r instanceof Error) b.complete(ops, null, r);
        else b.complete(ops, r, null);
      });
    }, (err: unknown) => {
      if (err instanceof NothingRan) {
        for (const [b, ops] of members) b.send(ops);
        return;
      }
      this.observer?.(opCount, performance.now() - t0, true);
      const failure = err instanceof Error ? err : new Error(String(err));
      for (const [b, ops] of members) b.complete(ops, null, failure);
    });
  }

  observe(observer: BatchObserver): void {
    this.observer = observer;
  }

  private async applyIn(shard: ShardStore, ops: readonly AnyJobOp[]): Promise<Array<OpResult | StoreError>> {
    const observer = this.observer;
    if (!observer) return shard.apply(ops);
    const t0 = performance.now();
    try {
      const results = await shard.apply(ops);
      observer(ops.length, performance.now() - t0, false);
      return results;
    } catch (err) {
      observer(ops.length, performance.now() - t0, true);
      throw err;
    }
  }

  submit(op: AnyJobOp): void {
    if (op.code === OpCode.Reserve) {
      const parts = this.parts(op.tubes);
      if (parts.shards.length === 1) this.send(parts.shards[0]!, op);
      else reserveAcross(op, parts, this.send);
    } else if (op.code === OpCode.DropWatch) this.dropWatch(op);
    else this.send(op.id ? this.map.ofId(op.id) : this.map.ofTube(op.tube), op);
  }

  private readonly send = (shard: number, op: AnyJobOp): void => {
    if (op.watch >= 0) {
      const kept = this.keptWatch.get(op.owner);
      if (kept) kept.add(shard);
      else this.keptWatch.set(op.owner, new Set([shard]));
    }
    this.batchers[shard]!.add(op);
  };

  /** In each shard that may keep the owner's watch list, after that shard's reserves; answered once all are. */
  private dropWatch(op: AnyJobOp): void {
    const kept = this.keptWatch.get(op.owner);
    this.keptWatch.delete(op.owner);
    if (!kept) {
      queueMicrotask(() => op.done(op, true, null));
      return;
    }
    let pending = kept.size;
    let failure: Error | null = null;
    const dropped = (_: AnyJobOp, __: boolean, err: Error | null) => {
      failure ??= err;
      if (--pending === 0) op.done(op, failure === null, failure);
    };
    for (const shard of kept) this.batchers[shard]!.add(jobOps.dropWatch(null, dropped, op.owner));
  }

  get pending(): number {
    let n = 0;
    for (const b of this.batchers) n += b.pending;
    return n;
  }

  /** Batch calls made and ops they carried, over all shards (for tests and metrics). */
  get calls(): number { return this.batchers.reduce((n, b) => n + b.calls, 0) - this.joined; }
  get ops(): number { return this.batchers.reduce((n, b) => n + b.ops, 0); }

  reservesAtOnce(tubes: readonly string[]): boolean {
    return this.parts(tubes).shards.length === 1;
  }

  private parts(tubes: readonly string[]): TubeParts {
    if (this.map.count === 1 || tubes.length === 0) return ONE_SHARD;
    let parts = this.partsOf.get(tubes);
    if (!parts) {
      const groups = byShard(tubes, (t) => this.map.ofTube(t));
      parts = { shards: [...groups.keys()], tubes: [...groups.values()] };
      this.partsOf.set(tubes, parts);
    }
    return parts;
  }

  private ofTube(tube: string): ShardStore {
    return this.shards[this.map.ofTube(tube)]!;
  }

  private ofId(id: string): ShardStore {
    return this.shards[this.map.ofId(id)]!;
  }

  /** The call made in every shard, together (one write per link, as batches). */
  private each<R>(call: (shard: ShardStore, i: number) => Promise<R>): Promise<R[]> {
    let calls: Array<Promise<R>> = [];
    this.together(() => { calls = this.shards.map(call); });
    return Promise.all(calls);
  }

  jobTube(id: string): Promise<string | null> { return this.ofId(id).jobTube(id); }
  reserveJob(owner: string, id: string, tube: string): Promise<ReservedJob | null> { return this.ofId(id).reserveJob(owner, id, tube); }
  kick(tube: string, bound: number): Promise<number> { return this.ofTube(tube).kick(tube, bound); }
  kickJob(id: string, tube: string): Promise<boolean> { return this.ofId(id).kickJob(id, tube); }
  pauseTube(tube: string, delaySeconds: number): Promise<boolean> { return this.ofTube(tube).pauseTube(tube, delaySeconds); }
  tubeSet(tube: string, setting: TubeSetting, value: number): Promise<void> { return this.ofTube(tube).tubeSet(tube, setting, value); }
  peekJob(id: string): Promise<PeekedJob | null> { return this.ofId(id).peekJob(id); }
  peekTube(tube: string, state: PeekState): Promise<PeekedJob | null> { return this.ofTube(tube).peekTube(tube, state); }
  jobInfo(id: string): Promise<JobInfo | null> { return this.ofId(id).jobInfo(id); }
  listJobs(tube: string, query: JobQuery): Promise<JobPage> { return this.ofTube(tube).listJobs(tube, query); }
  refTube(tube: string, node: string, delta: 1 | -1 | 'drop'): Promise<void> { return this.ofTube(tube).refTube(tube, node, delta); }
  watchListsWith(tube: string, owners: readonly string[]): Promise<number> { return this.ofTube(tube).watchListsWith(tube, owners); }

  async releaseOwned(owner: string, jobs: Iterable<readonly [id: string, tube: string]>): Promise<number> {
    const groups = byShard(jobs, ([id]) => this.map.ofId(id));
    return sum(await Promise.all([...groups].map(([shard, held]) => this.shards[shard]!.releaseOwned(owner, held))));
  }

  async releaseHeldBy(owner: string): Promise<number> {
    return sum(await this.each((s) => s.releaseHeldBy(owner)));
  }

  /** Each shard counts the tubes it holds; the totals of all shards are summed. */
  async tubeCounts(names: readonly string[]): Promise<TotalCounts> {
    const groups = byShard(names, (name) => this.map.ofTube(name));
    const counted = await this.each((s, i) => s.tubeCounts(groups.get(i) ?? []));
    const tubes = new Map(names.flatMap((name) => {
      const c = counted[this.map.ofTube(name)]!.tubes.get(name);
      return c ? [[name, c] as const] : [];
    }));
    return { tubes, totalJobs: sum(counted.map((c) => c.totalJobs)), jobTimeouts: sum(counted.map((c) => c.jobTimeouts)) };
  }

  async oldestReady(names: readonly string[]): Promise<Map<string, number>> {
    const groups = byShard(names, (name) => this.map.ofTube(name));
    const found = await this.each((s, i) => s.oldestReady(groups.get(i) ?? []));
    return new Map(found.flatMap((m) => [...m]));
  }

  async totals(): Promise<JobTotals> {
    const all = await this.each((s) => s.totals());
    const total = (field: keyof JobTotals) => sum(all.map((t) => t[field]));
    return {
      urgent: total('urgent'), ready: total('ready'), reserved: total('reserved'), delayed: total('delayed'),
      buried: total('buried'), tubes: total('tubes'), totalJobs: total('totalJobs'), jobTimeouts: total('jobTimeouts'),
    };
  }

  /** Shard by shard, each in beanstalkd's order (the order across shards is not creation order: PROTOCOL.md). */
  async listTubes(): Promise<string[]> {
    return (await this.each((s) => s.listTubes())).flat();
  }

  async heartbeat(node: string, ttlMs: number, snapshot: ReadonlyArray<string | number>): Promise<boolean> {
    // The counters snapshot is kept in shard 0 only; every shard gets the lease.
    const snapshotOf = (shard: number) => (shard === 0 ? snapshot : []);
    const fresh = this.groups
      ? await this.groups.heartbeat(node, ttlMs, snapshotOf)
      : await this.each((s, i) => s.heartbeat(node, ttlMs, snapshotOf(i)));
    return fresh.some(Boolean);
  }

  /**
   * Shard 0, whose sidecar list every reaper reads (nodes()), forgets a
   * sidecar last, once every other shard has: a sidecar's beats reach the
   * shards of different Redis nodes at different times, so one killed
   * mid-beat holds a lease in some shards a little longer than in shard 0.
   * Those shards refuse to forget it (and to hand its jobs back) until it
   * lapses there too; shard 0 keeps it listed as dead until then, so a
   * reaper (any sidecar's) comes back for the jobs it holds there.
   */
  async forgetNode(node: string): Promise<boolean> {
    let others: Array<Promise<boolean>> = [];
    this.together(() => { others = this.shards.slice(1).map((s) => s.forgetNode(node)); });
    return (await Promise.all(others)).every(Boolean) && this.shards[0]!.forgetNode(node);
  }

  nodes(): Promise<{ live: string[]; dead: string[] }> { return this.shards[0]!.nodes(); }
  recordHistory(sample: string, slotMs: number, keep: number): Promise<boolean> { return this.shards[0]!.recordHistory(sample, slotMs, keep); }
  history(): Promise<string[]> { return this.shards[0]!.history(); }
  publishNodeInfo(node: string, info: Readonly<Record<string, string | number>>, ttlMs: number): Promise<void> { return this.shards[0]!.publishNodeInfo(node, info, ttlMs); }
  nodeInfo(nodes: readonly string[]): Promise<NodeSnapshot[]> { return this.shards[0]!.nodeInfo(nodes); }
  nodeSnapshots(nodes: readonly string[], fields?: readonly string[]): Promise<NodeSnapshot[]> { return this.shards[0]!.nodeSnapshots(nodes, fields); }

  /** Every shard's due jobs; the soonest next due time of any. */
  async promoteDue(limit: number): Promise<{ moved: number; nextDueMs: number }> {
    const all = this.groups ? await this.groups.promoteDue(limit) : await this.each((s) => s.promoteDue(limit));
    const due = all.map((r) => r.nextDueMs).filter((ms) => ms >= 0);
    return { moved: sum(all.map((r) => r.moved)), nextDueMs: due.length > 0 ? Math.min(...due) : -1 };
  }
}
