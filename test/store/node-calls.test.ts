// The batches of the shards one Redis node holds go in one call (batch.lua's
// sections variant, src/store/redis/node-calls.ts): on one Redis with
// --shards, and per primary of a Redis Cluster; a shard whose slot is moving
// makes that call run nothing, and the batches go in calls of their own.
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/store/layout.js';
import { jobOps, type AnyJobOp, type OpResult, type Reservation } from '../../src/store/ops.js';
import { NothingRan, type ShardedJobStore } from '../../src/store/sharded.js';
import { bindScripts } from '../../src/store/redis/functions.js';
import { NodeCalls } from '../../src/store/redis/node-calls.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startInside, uniquePrefix, type InsideSidecar } from '../helpers/redstalk.js';

/** Submits the ops in one turn; their results. */
function inOneTurn(jobs: ShardedJobStore, ops: Array<(done: (op: AnyJobOp, r: OpResult | undefined, err: Error | null) => void) => AnyJobOp>): Promise<unknown[]> {
  return Promise.all(ops.map((make) => new Promise((resolve, reject) => {
    jobs.submit(make((_op, r, err) => (err ? reject(err) : resolve(r))));
  })));
}

/** A tube name of each of the shards asked for. */
function tubesOf(layout: Layout, shards: readonly number[]): string[] {
  return shards.map((shard) => {
    for (let i = 0; ; i++) if (layout.shardOf(`t${i}`) === shard) return `t${i}`;
  });
}

const put = (tube: string) => (done: Parameters<typeof jobOps.put>[1]) => jobOps.put(null, done, tube, 1, 0, 60, Buffer.from(tube));
const del = (id: string, tube: string) => (done: Parameters<typeof jobOps.delete>[1]) => jobOps.delete(null, done, 'o', id, tube);

describe('one call per node: one Redis, 4 shards', () => {
  let redis: TestRedis;
  let sidecar: InsideSidecar;
  beforeAll(async () => {
    redis = await startRedis();
    sidecar = await startInside({ redisUrl: redis.url, shards: 4 });
  });
  afterAll(async () => { await sidecar.stop(); await redis.stop(); });

  it("sends a turn's batches of every shard in one call, each answered as its own call would be", async () => {
    const layout = new Layout(sidecar.prefix, 4);
    const jobs = sidecar.backend.jobs;
    const tubes = tubesOf(layout, [0, 1, 2, 3]);
    const admin = new Redis(redis.url);
    const fcalls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    const calls0 = jobs.calls;
    const ids = (await inOneTurn(jobs, tubes.map(put))) as string[];
    expect(jobs.calls - calls0).toBe(1);
    expect(ids.map((id) => layout.shardOfId(id))).toEqual([0, 1, 2, 3]);
    for (const [i, id] of ids.entries()) expect((await jobs.peekJob(id))!.body.toString()).toBe(tubes[i]);
    const [before, callsBefore] = [await fcalls(), jobs.calls];
    const deleted = await inOneTurn(jobs, ids.map((id, i) => del(id, tubes[i]!)));
    expect(deleted).toEqual([true, true, true, true]);
    expect(jobs.calls - callsBefore).toBe(1);
    // Redis saw that one call (and at most a heartbeat and a sweep of the sidecar's, in one call each).
    expect(await fcalls() - before).toBeGreaterThanOrEqual(1);
    expect(await fcalls() - before).toBeLessThanOrEqual(3);
    expect(await jobs.totals()).toMatchObject({ ready: 0, reserved: 0 });
    admin.disconnect();
  });

  it('renews the lease and sweeps due jobs of every shard in one call', async () => {
    const layout = new Layout(sidecar.prefix, 4);
    const jobs = sidecar.backend.jobs;
    const admin = new Redis(redis.url);
    // Every function Redis runs meanwhile (the sidecar's own beats and sweeps too), by name.
    const monitor = await admin.monitor();
    const ran: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => { if (/^fcall/i.test(args[0]!)) ran.push(args[1]!.replace(/^redstalk_\w+?_jobs_/, '')); });
    const tubes = tubesOf(layout, [0, 1, 2, 3]);
    const ids = (await inOneTurn(jobs, tubes.map((t) => (done) => jobOps.put(null, done, t, 1, 1, 60, Buffer.from(t))))) as string[];
    expect(await jobs.heartbeat('n-test', 60_000, [])).toBe(true);
    for (let shard = 0; shard < 4; shard++) expect(await admin.zscore(layout.keys(shard).nodes, 'n-test')).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1100));
    const swept = await jobs.promoteDue(100);
    expect(swept.moved).toBeGreaterThanOrEqual(0); // the sidecar's own timer may have moved them first
    for (const id of ids) expect(await jobs.jobInfo(id)).toMatchObject({ state: 'ready' });
    await inOneTurn(jobs, ids.map((id, i) => del(id, tubes[i]!)));
    await jobs.heartbeat('n-test', 0, []);
    await new Promise((r) => setTimeout(r, 50));
    monitor.disconnect();
    expect(ran).toContain('heartbeatSections');
    expect(ran).toContain('promoteDueSections');
    expect(ran.filter((f) => f === 'heartbeat' || f === 'promoteDue')).toEqual([]);
    admin.disconnect();
  });

  it('a reserve over tubes of several shards still takes the most urgent job of all', async () => {
    const layout = new Layout(sidecar.prefix, 4);
    const jobs = sidecar.backend.jobs;
    const tubes = tubesOf(layout, [0, 1, 2, 3]);
    const pris = [30, 10, 20, 40];
    const ids = (await inOneTurn(jobs, tubes.map((t, i) => (done) => jobOps.put(null, done, t, pris[i]!, 0, 60, Buffer.from(t))))) as string[];
    const [got] = (await inOneTurn(jobs, [(done) => jobOps.reserve(null, done, 'n:1', tubes, 1)])) as [Reservation];
    expect(got.jobs.map((j) => j.id)).toEqual([ids[1]]);
    await inOneTurn(jobs, ids.map((id, i) => del(id, tubes[i]!)).map((make) => (done) => ({ ...make(done), owner: 'n:1' })));
  });
});

describe('one call per node: its bodies bounded as a batch\'s', () => {
  it('sends the shards\' batches of a turn in calls of at most --batch-bytes of bodies', async () => {
    const redis = await startRedis();
    const sidecar = await startInside({ redisUrl: redis.url, shards: 4, batchBytes: 1000 });
    try {
      const layout = new Layout(sidecar.prefix, 4);
      const jobs = sidecar.backend.jobs;
      const tubes = tubesOf(layout, [0, 1, 2, 3]);
      const putOf = (size: number) => (t: string) => (done: Parameters<typeof jobOps.put>[1]) => jobOps.put(null, done, t, 1, 0, 60, Buffer.alloc(size, 'x'));
      let before = jobs.calls;
      await inOneTurn(jobs, tubes.map(putOf(200))); // 800 bytes: one call
      expect(jobs.calls - before).toBe(1);
      before = jobs.calls;
      await inOneTurn(jobs, tubes.map(putOf(400))); // 1,600 bytes: two calls of two
      expect(jobs.calls - before).toBe(2);
      before = jobs.calls;
      await inOneTurn(jobs, tubes.map(putOf(1500))); // each more than the bound: each alone
      expect(jobs.calls - before).toBe(4);
      expect((await jobs.totals()).ready).toBe(12);
    } finally {
      await sidecar.stop();
      await redis.stop();
    }
  });
});

describe('one call per primary: a Redis Cluster, 12 shards', () => {
  let cluster: TestCluster;
  let sidecar: InsideSidecar;
  beforeAll(async () => {
    cluster = await startCluster(3);
    sidecar = await startInside({ redisUrl: cluster.url, shards: 12, prefix: uniquePrefix() });
  }, 60_000);
  afterAll(async () => { await sidecar.stop(); await cluster.stop(); });

  /** Shards whose slots one primary serves, by its port. */
  async function shardsByPrimary(layout: Layout): Promise<Map<number, number[]>> {
    const by = new Map<number, number[]>();
    for (let shard = 0; shard < 12; shard++) {
      const port = await cluster.nodeOfSlot(await cluster.keySlot(layout.keys(shard).slotProbe));
      by.set(port, [...(by.get(port) ?? []), shard]);
    }
    return by;
  }

  it('sends one call per primary; with a slot moving, the batches go in calls of their own and are answered', async () => {
    const layout = new Layout(sidecar.prefix, 12);
    const jobs = sidecar.backend.jobs;
    const byPrimary = await shardsByPrimary(layout);
    expect([...byPrimary.values()].map((s) => s.length)).toEqual([4, 4, 4]);
    const allTubes = tubesOf(layout, Array.from({ length: 12 }, (_, i) => i));
    const calls0 = jobs.calls;
    const ids = (await inOneTurn(jobs, allTubes.map(put))) as string[];
    expect(jobs.calls - calls0).toBe(3);
    expect(ids.map((id) => layout.shardOfId(id))).toEqual(Array.from({ length: 12 }, (_, i) => i));

    // One primary's first shard moves to another primary behind the sidecar's back: the
    // joined call to the old owner runs nothing, its batches go alone (MOVED), and the
    // next turn's calls follow the new owners.
    const [port, shards] = [...byPrimary][0]!;
    const target = [...byPrimary.keys()].find((p) => p !== port)!;
    const slot = await cluster.keySlot(layout.keys(shards[0]!).slotProbe);
    const nodes = await cluster.nodes();
    const nodeId = (p: number) => nodes.find((n) => n.port === p)!.id;
    await cluster.call(target, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', nodeId(port));
    await cluster.call(port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', nodeId(target));
    const keys = (await cluster.call(port, 'CLUSTER', 'GETKEYSINSLOT', slot, 1000)) as string[];
    await cluster.call(port, 'MIGRATE', '127.0.0.1', target, '', 0, 5000, 'KEYS', ...keys);
    for (const n of nodes) await cluster.call(n.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', nodeId(target));
    const mine = shards.map((s) => allTubes[s]!);
    const calls1 = jobs.calls;
    const more = (await inOneTurn(jobs, mine.map(put))) as string[];
    // The joined call ran nothing and the 4 went alone; or ioredis had read the new owners
    // already (it refreshes them every few seconds): one call to each node.
    expect([shards.length, 2]).toContain(jobs.calls - calls1);
    expect(more.map((i) => layout.shardOfId(i))).toEqual(shards);
    for (const [i, jid] of more.entries()) expect((await jobs.peekJob(jid))!.body.toString()).toBe(mine[i]);
    ids.push(...more);
    allTubes.push(...mine);
    const calls2 = jobs.calls;
    const deleted = await inOneTurn(jobs, ids.map((jid, i) => del(jid, allTubes[i]!)));
    expect(deleted.every((d) => d === true)).toBe(true);
    expect(jobs.calls - calls2).toBe(3);
    expect(await jobs.totals()).toMatchObject({ ready: 0, reserved: 0, delayed: 0 });
  }, 60_000);

  it('a call sent to a node that does not serve a section\'s slot runs nothing (TRYSHARDS), not even the sections it serves', async () => {
    const layout = new Layout(sidecar.prefix, 12);
    const link = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]);
    link.on('error', () => {}); // the nodes stop with the suite
    await new Promise((r) => link.once('ready', r));
    const calls = new NodeCalls(link, sidecar.backend.shards, layout, bindScripts(link).jobs);
    const byPrimary = [...(await shardsByPrimary(layout))];
    const [[port, served], [, elsewhere]] = [byPrimary[0]!, byPrimary[1]!];
    const group = `127.0.0.1:${port}`;
    const sections = [served[0]!, elsewhere[0]!].map((shard) => ({ shard, ops: [jobOps.put(null, () => {}, tubesOf(layout, [shard])[0]!, 1, 0, 60, Buffer.from('x'))] }));
    const before = await sidecar.backend.jobs.totals();
    await expect(calls.apply(group, sections)).rejects.toBeInstanceOf(NothingRan);
    expect(await sidecar.backend.jobs.totals()).toEqual(before);
    // The sections its node serves go in one call.
    const served2 = served.slice(0, 2).map((shard) => ({ shard, ops: [jobOps.put(null, () => {}, tubesOf(layout, [shard])[0]!, 1, 0, 60, Buffer.from('x'))] }));
    const results = await calls.apply(group, served2);
    expect(results.map((r) => (Array.isArray(r) ? layout.shardOfId(r[0] as string) : r))).toEqual(served.slice(0, 2));
    link.disconnect();
  });
});
