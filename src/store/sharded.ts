// The whole data set over its shards: a JobStore that sends each call to the
// shard of its tube or job id, and combines what every shard must answer
// (stats, list-tubes, the promotion timer, a dead sidecar's reservations).
// Sidecar registry (leases, counter snapshots) lives in shard 0; a lease is
// renewed in every shard, since each shard's scripts judge tube references by it.
import type { StoreError } from './errors.js';
import type { JobInfo, JobStore, JobTotals, NodeSnapshot, PeekState, PeekedJob, ShardMap, TotalCounts } from './job-store.js';
import { OpCode, type AnyJobOp, type OpResult, type ReservedJob } from './ops.js';

/** The shard an op goes to: its job's (by id), else its tube's; a reserve's tubes share one. */
export function shardOfOp(map: ShardMap, op: AnyJobOp): number {
  if (map.count === 1) return 0;
  if (op.id) return map.ofId(op.id);
  return map.ofTube(op.code === OpCode.Reserve || op.code === OpCode.Candidate || op.code === OpCode.DropWatch ? op.tubes[0]! : op.tube);
}

/** Items grouped by shard, each group in the items' order. */
export function byShard<T>(items: Iterable<T>, shardOf: (item: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const s = shardOf(item);
    const group = groups.get(s);
    if (group) group.push(item);
    else groups.set(s, [item]);
  }
  return groups;
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

export class ShardedJobStore implements JobStore {
  constructor(private readonly shards: readonly JobStore[], private readonly map: ShardMap) {}

  private ofTube(tube: string): JobStore {
    return this.shards[this.map.ofTube(tube)]!;
  }

  private ofId(id: string): JobStore {
    return this.shards[this.map.ofId(id)]!;
  }

  private each<R>(call: (shard: JobStore) => Promise<R>): Promise<R[]> {
    return Promise.all(this.shards.map(call));
  }

  /** Each shard's ops in one call, the shards in parallel; results in the ops' order. */
  async apply(ops: readonly AnyJobOp[]): Promise<Array<OpResult | StoreError>> {
    const results = new Array<OpResult | StoreError>(ops.length);
    const groups = byShard(ops.keys(), (i) => shardOfOp(this.map, ops[i]!));
    await Promise.all([...groups].map(async ([shard, indexes]) => {
      const r = await this.shards[shard]!.apply(indexes.map((i) => ops[i]!));
      indexes.forEach((i, k) => { results[i] = r[k]!; });
    }));
    return results;
  }

  jobTube(id: string): Promise<string | null> { return this.ofId(id).jobTube(id); }
  reserveJob(owner: string, id: string, tube: string): Promise<ReservedJob | null> { return this.ofId(id).reserveJob(owner, id, tube); }
  kick(tube: string, bound: number): Promise<number> { return this.ofTube(tube).kick(tube, bound); }
  kickJob(id: string, tube: string): Promise<boolean> { return this.ofId(id).kickJob(id, tube); }
  pauseTube(tube: string, delaySeconds: number): Promise<boolean> { return this.ofTube(tube).pauseTube(tube, delaySeconds); }
  peekJob(id: string): Promise<PeekedJob | null> { return this.ofId(id).peekJob(id); }
  peekTube(tube: string, state: PeekState): Promise<PeekedJob | null> { return this.ofTube(tube).peekTube(tube, state); }
  jobInfo(id: string): Promise<JobInfo | null> { return this.ofId(id).jobInfo(id); }
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
    const counted = await Promise.all(this.shards.map((s, i) => s.tubeCounts(groups.get(i) ?? [])));
    const tubes = new Map(names.flatMap((name) => {
      const c = counted[this.map.ofTube(name)]!.tubes.get(name);
      return c ? [[name, c] as const] : [];
    }));
    return { tubes, totalJobs: sum(counted.map((c) => c.totalJobs)), jobTimeouts: sum(counted.map((c) => c.jobTimeouts)) };
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
    const fresh = await Promise.all(this.shards.map((s, i) => s.heartbeat(node, ttlMs, i === 0 ? snapshot : [])));
    return fresh.some(Boolean);
  }

  async forgetNode(node: string): Promise<void> {
    await this.each((s) => s.forgetNode(node));
  }

  nodes(): Promise<{ live: string[]; dead: string[] }> { return this.shards[0]!.nodes(); }
  nodeSnapshots(nodes: readonly string[]): Promise<NodeSnapshot[]> { return this.shards[0]!.nodeSnapshots(nodes); }

  /** Every shard's due jobs; the soonest next due time of any. */
  async promoteDue(limit: number): Promise<{ moved: number; nextDueMs: number }> {
    const all = await this.each((s) => s.promoteDue(limit));
    const due = all.map((r) => r.nextDueMs).filter((ms) => ms >= 0);
    return { moved: sum(all.map((r) => r.moved)), nextDueMs: due.length > 0 ? Math.min(...due) : -1 };
  }
}
