// The Redis job store passes the JobStore conformance suite, keeps every job
// in exactly the sets of its state, and its scripts' positional replies have
// the length their field lists say.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout, type ShardKeys } from '../../src/store/layout.js';
import { jobOps, type Candidate, type Reservation } from '../../src/store/ops.js';
import { JOB_INFO_REPLY, RedisJobStore, TUBE_COUNTS_REPLY } from '../../src/store/redis/job-store.js';
import { ROOM_STATE_REPLY, RedisRoomStore } from '../../src/store/redis/room-store.js';
import { bindScripts } from '../../src/store/redis/functions.js';
import { buildLibrary } from '../../src/store/redis/scripts.js';
import { ShardedJobStore } from '../../src/store/sharded.js';
import { NodeCalls } from '../../src/store/redis/node-calls.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { uniquePrefix } from '../helpers/redstalk.js';
import { describeJobStore } from './job-store.conformance.js';

let server: TestRedis;
beforeAll(async () => { server = await startRedis(); });
afterAll(async () => { await server.stop(); });

function openStore(): { redis: Redis; layout: Layout; keys: ShardKeys; store: RedisJobStore; scripts: ReturnType<typeof bindScripts> } {
  const redis = new Redis(server.url);
  const scripts = bindScripts(redis);
  const layout = new Layout(uniquePrefix());
  const keys = layout.keys(0);
  return { redis, layout, keys, scripts, store: new RedisJobStore(redis, scripts.jobs, keys) };
}

const LIMITS = { maxOps: 1000, maxBytes: 1 << 20, maxInFlight: 1 };
const thrown = (err: unknown) => { throw err; };

/**
 * The whole data set over `shards` shards, each a Redis job store, batched as a
 * sidecar's; `joined`: a turn's batches of all shards in one call (NodeCalls).
 */
function openSharded(shards: number, joined = false): { redis: Redis; layout: Layout; stores: RedisJobStore[]; store: ShardedJobStore } {
  const redis = new Redis(server.url);
  const scripts = bindScripts(redis);
  const layout = new Layout(uniquePrefix(), shards);
  const stores = Array.from({ length: shards }, (_, i) => new RedisJobStore(redis, scripts.jobs, layout.keys(i)));
  const groups = joined ? new NodeCalls(redis, stores, layout, scripts.jobs) : null;
  return { redis, layout, stores, store: new ShardedJobStore(stores, layout.map, LIMITS, thrown, (send) => send(), groups) };
}

for (const [shards, joined] of [[1, false], [2, false], [2, true]] as const) {
  describeJobStore(`Redis, ${shards} shard${shards > 1 ? 's' : ''}${joined ? ', one call per node' : ''}`, async () => {
    const { redis, store } = openSharded(shards, joined);
    return { store, shards, close: async () => { redis.disconnect(); } };
  });
}

describe('Redis job store', () => {
  it('reaps a sidecar whose last beat reached some shards only in each once its lease lapsed there, listing it as dead until then', async () => {
    const { redis, layout, stores: shards, store } = openSharded(2);
    const none = () => {};
    const tube = ['t0', 't1', 't2', 't3', 't4', 't5'].find((t) => layout.map.ofTube(t) === 1)!;
    await store.heartbeat('n1', 60_000, []);
    const [id] = await shards[1]!.apply([jobOps.put(null, none, tube, 0, 0, 3600, Buffer.from('x'))]);
    expect(await shards[1]!.apply([jobOps.reserve(null, none, 'n1:1', [tube], 1)])).toMatchObject([{ jobs: [{ id }] }]);
    // n1 is killed mid-beat: its last beat reached shard 1 (a lease of 300 ms more there) and not shard 0.
    await shards[0]!.heartbeat('n1', 0, []);
    await shards[1]!.heartbeat('n1', 300, []);
    // A reaper finds it dead in shard 0's list; shard 1 keeps its job while the lease is live there.
    expect((await store.nodes()).dead).toContain('n1');
    expect(await store.releaseHeldBy('n1:')).toBe(0);
    expect(await store.forgetNode('n1')).toBe(false);
    expect((await store.nodes()).dead, 'still listed, so that the next reaping comes back').toContain('n1');
    await new Promise((r) => setTimeout(r, 350));
    expect(await store.releaseHeldBy('n1:')).toBe(1);
    expect(await store.forgetNode('n1')).toBe(true);
    expect(await store.nodes()).toEqual({ live: [], dead: [] });
    expect((await store.jobInfo(String(id)))?.state).toBe('ready');
    redis.disconnect();
  });

  it('keeps every job in exactly the sets of its state', async () => {
    const { redis, keys, store } = openStore();
    const none = () => {};
    const body = Buffer.from('x');
    await store.apply([0, 1, 2, 3, 4, 5].map((i) => jobOps.put(null, none, i % 2 ? 'a' : 'b', i, i === 5 ? 100 : 0, 60, body)));
    await store.apply([jobOps.reserve(null, none, 'o', ['a', 'b'], 2), jobOps.reserve(null, none, 'o', ['a'], 1)]);
    await store.apply([jobOps.bury(null, none, 'o', '1', 'b', 0), jobOps.release(null, none, 'o', '2', 'a', 0, 50)]);
    const where = async (id: string, tube: string) => {
      const member = String.fromCharCode(48 + id.length) + id;
      const t = keys.tube(tube);
      const inSet = async (key: string, m: string) => (await redis.zscore(key, m)) !== null;
      return [
        await inSet(t[1]!, member) && 'ready', await inSet(t[2]!, member) && 'tube-delayed',
        await inSet(t[3]!, member) && 'buried', await inSet(keys.delayed, member + tube) && 'delayed',
        await inSet(keys.reserved, member + tube) && 'reserved',
      ].filter(Boolean);
    };
    const expected = { ready: ['ready'], delayed: ['tube-delayed', 'delayed'], reserved: ['reserved'], buried: ['buried'] };
    const seen = new Set<string>();
    for (const id of ['1', '2', '3', '4', '5', '6']) {
      const info = (await store.jobInfo(id))!;
      seen.add(info.state);
      expect(await where(id, info.tube), `job ${id}`).toEqual(expected[info.state]);
    }
    expect([...seen].sort()).toEqual(['buried', 'delayed', 'ready', 'reserved']);
    await expectTotalsAddUp(store);
    redis.disconnect();
  });

  it('lets a reserve over more than 64 tubes take a job put earlier in the same call', async () => {
    const { redis, store } = openStore();
    const none = () => {};
    const tubes = Array.from({ length: 100 }, (_, i) => `w${i}`);
    const [, got] = await store.apply([jobOps.put(null, none, 'w77', 0, 0, 60, Buffer.from('x')), jobOps.reserve(null, none, 'o', tubes, 5)]);
    expect(got).toMatchObject({ jobs: [{ id: '1', tube: 'w77' }] });
    await expectTotalsAddUp(store);
    redis.disconnect();
  });

  it('keeps the totals of every state equal to the sums over all tubes, whatever moves the jobs (200 random ops)', async () => {
    const { redis, store } = openStore();
    const none = () => {};
    let seed = 11;
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    const tubes = ['a', 'b', 'c'];
    for (let i = 0; i < 200; i++) {
      const t = tubes[rand(3)]!;
      const id = String(1 + rand(40));
      const op = rand(11);
      if (op < 3) await store.apply([jobOps.put(null, none, t, rand(2) ? 10 : 2000, rand(4) === 0 ? 1 : 0, 60, Buffer.from('x'))]);
      else if (op === 3) await store.apply([jobOps.reserve(null, none, 'o', tubes, 1 + rand(3))]);
      else if (op === 4) await store.apply([jobOps.delete(null, none, 'o', id, (await store.jobTube(id)) ?? t)]);
      else if (op === 5) await store.apply([jobOps.bury(null, none, 'o', id, (await store.jobTube(id)) ?? t, rand(2000))]);
      else if (op === 6) await store.apply([jobOps.release(null, none, 'o', id, (await store.jobTube(id)) ?? t, rand(2000), 0)]);
      else if (op === 7) await store.kick(t, 1 + rand(3));
      else if (op === 8) await store.releaseHeldBy('o');
      else if (op === 9) await store.reserveJob('o', id, (await store.jobTube(id)) ?? t);
      else await store.kickJob(id, (await store.jobTube(id)) ?? t);
    }
    await new Promise((r) => setTimeout(r, 1100));
    await store.promoteDue(1000);
    await expectTotalsAddUp(store);
    redis.disconnect();
  });

  it('sends its hand-written batch call again once the library is loaded again when Redis has lost it (FUNCTION FLUSH), and the call ran once', async () => {
    const { redis, store } = openStore();
    const none = () => {};
    const [first] = await store.apply([jobOps.put(null, none, 'default', 1, 0, 60, Buffer.from('a'))]);
    await redis.function('FLUSH');
    const [second, third] = await store.apply([
      jobOps.put(null, none, 'default', 1, 0, 60, Buffer.alloc(70_000, 'b')),
      jobOps.put(null, none, 'default', 1, 0, 60, Buffer.from('c')),
    ]);
    expect([Number(second) - Number(first), Number(third) - Number(first)]).toEqual([1, 2]);
    expect((await store.totals()).ready).toBe(3);
    const [reserved] = await store.apply([jobOps.reserve(null, none, 'o', ['default'], 3)]);
    expect((reserved as Reservation).jobs.map((j) => j.body.length)).toEqual([1, 70_000, 1]);
    redis.disconnect();
  });

  it('encodes keys (a UTF-8 prefix), tube names and owners in its hand-written call', async () => {
    const redis = new Redis(server.url);
    const keys = new Layout(`${uniquePrefix()}-é☃`).keys(0);
    const store = new RedisJobStore(redis, bindScripts(redis).jobs, keys);
    const none = () => {};
    const [id] = await store.apply([jobOps.put(null, none, 'tube+(1)', 5, 0, 60, Buffer.from('x'))]);
    expect(await redis.hexists(keys.globals[0]!, id as string)).toBe(1);
    const [jobs] = await store.apply([jobOps.reserve(null, none, 'ö:1', ['tube+(1)'], 1)]);
    expect(jobs).toMatchObject({ jobs: [{ id, tube: 'tube+(1)' }] });
    const [deleted] = await store.apply([jobOps.delete(null, none, 'ö:1', id as string, 'tube+(1)')]);
    expect(deleted).toBe(true);
    redis.disconnect();
  });

  it('keeps a job\'s creation time to the microsecond: candidates of two shards compare in put order even within one ms', async () => {
    const redis = new Redis(server.url);
    const scripts = bindScripts(redis);
    const layout = new Layout(uniquePrefix(), 2);
    const [first, second] = [0, 1].map((shard) => new RedisJobStore(redis, scripts.jobs, layout.keys(shard)));
    const none = () => {};
    const body = Buffer.from('x');
    for (let i = 0; i < 20; i++) {
      await first!.apply([jobOps.put(null, none, 'a', 5, 0, 60, body)]);
      await second!.apply([jobOps.put(null, none, 'b', 5, 0, 60, body)]);
    }
    const [a] = (await first!.apply([jobOps.candidates(null, none, ['a'], 20)])) as Candidate[][];
    const [b] = (await second!.apply([jobOps.candidates(null, none, ['b'], 20)])) as Candidate[][];
    const putOrder = a!.flatMap((c, i) => [c.createdMs, b![i]!.createdMs]);
    expect(putOrder).toEqual([...putOrder].sort((x, y) => x - y));
    expect(new Set(putOrder).size).toBe(40);
    // Age is whole ms, never negative, though now (whole ms) may be earlier than a creation time with its fraction.
    const id = (await first!.apply([jobOps.put(null, none, 'a', 5, 0, 60, body)]))[0] as string;
    expect((await first!.jobInfo(id))!.ageMs).toBeGreaterThanOrEqual(0);
    redis.disconnect();
  });

  it('reads positional script replies of the length their field lists give', async () => {
    const { redis, layout, keys, store, scripts } = openStore();
    await store.apply([jobOps.put(null, () => {}, 't', 0, 0, 60, Buffer.from('x'))]);
    const call = (name: string, k: readonly string[], ...args: string[]) => scripts.jobs.get(name)!.strings(k.length, ...k, ...args);
    expect(await call('peekJob', keys.globals, '1', '0')).toHaveLength(JOB_INFO_REPLY.length);
    expect(await call('tubeCounts', [...keys.globals, ...keys.tube('t')], 't')).toHaveLength(TUBE_COUNTS_REPLY.length + 2);
    const rooms = new RedisRoomStore(scripts.rooms, layout, { capacity: 1, checkinTimeout: 30, participantTimeout: 30, grace: 0 });
    await rooms.enter('r', 'u');
    const roomKeys = keys.room('r');
    const state = await scripts.rooms.get('state')!.strings(roomKeys.length, ...roomKeys, 'r', '', 1, 30, 30, 0);
    expect(state).toHaveLength(ROOM_STATE_REPLY.length);
    redis.disconnect();
  });

  it('registers the no-writes scripts read-only (FCALL_RO), and every other one as a writer', () => {
    const readOnly = buildLibrary().functions.filter((f) => f.readOnly).map((f) => f.name).sort();
    expect(readOnly).toEqual(['jobTube', 'list', 'listJobs', 'oldestReady', 'peekJob', 'peekTube', 'state', 'tubeCounts']);
    expect(buildLibrary().functions.filter((f) => f.flags.includes('no-writes')).map((f) => f.name).sort()).toEqual(readOnly);
  });

  it('lets Redis run out of memory only for what grows it: these functions are allow-oom, and batch has an allow-oom twin', () => {
    const { functions, source } = buildLibrary();
    const allowOom = functions.filter((f) => f.flags.includes('allow-oom')).map((f) => f.name).sort();
    expect(allowOom).toEqual(['batchAllowOom', 'config', 'countJobs', 'forgetNode', 'heartbeat', 'heartbeatSections', 'kick', 'kickJob', 'leave', 'lottery', 'pauseTube',
      'promoteDue', 'promoteDueSections', 'refTube', 'releaseOwned', 'reserveJob', 'upgradeTubeOrder']);
    // The sections variants (NodeCalls) keep their script's flags and may touch several slots of their node.
    expect(functions.filter((f) => f.name.endsWith('Sections')).map((f) => [f.name, f.flags])).toEqual([
      ['batchSections', ['allow-cross-slot-keys']], ['heartbeatSections', ['allow-oom', 'allow-cross-slot-keys']],
      ['promoteDueSections', ['allow-oom', 'allow-cross-slot-keys']]]);
    // The twin is the same callback registered with that flag.
    const [batch, twin] = ['batch', 'batchAllowOom'].map((name) => functions.find((f) => f.name === name)!);
    expect(source).toContain(`function_name = '${batch!.fn}', callback = entry, flags = {}`);
    expect(source).toContain(`function_name = '${batch!.fn}', callback = entry, flags = {}`
      + ` }\n    register_function{ function_name = '${twin!.fn}', callback = entry, flags = { 'allow-oom' } }`);
  });

  it('reports a put into an out-of-memory Redis as a full store, and still applies the other ops of its batch', async () => {
    const { redis, store } = openStore();
    const none = () => {};
    const [id] = await store.apply([jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('x'))]);
    await redis.config('SET', 'maxmemory', '1');
    try {
      const results = await store.apply([
        jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('y')),
        jobOps.reserve(null, none, 'o', ['t'], 1),
        jobOps.delete(null, none, 'o', id as string, 't'),
      ]);
      expect(results[0]).toMatchObject({ name: 'StoreError', kind: 'full' });
      expect(results[1]).toMatchObject({ jobs: [{ id }] });
      expect(results[2]).toBe(true);
    } finally {
      await redis.config('SET', 'maxmemory', '0');
      redis.disconnect();
    }
  });
});

describe('Redis job store upgrade', () => {
  it('turns the set of tube names of an older data set into tube-order, in creation order, once', async () => {
    const { redis, keys, store } = openStore();
    for (const t of ['b', 'a', 'c']) await store.refTube(t, 'n1', 1);
    // The layout before tube-order: a plain set of names.
    await redis.del(keys.tubes);
    await redis.sadd(`${keys.tag}:tubes`, 'c', 'a', 'b');
    await store.upgrade();
    expect(await store.listTubes()).toEqual(['b', 'a', 'c']);
    expect(await redis.exists(`${keys.tag}:tubes`)).toBe(0);
    await store.upgrade(); // nothing left to do
    expect(await store.listTubes()).toEqual(['b', 'a', 'c']);
    redis.disconnect();
  });

  it('counts the jobs by state once for a data set written before the counts were kept', async () => {
    const { redis, keys, store } = openStore();
    const none = () => {};
    await store.apply([0, 1, 2, 3, 4].map((i) => jobOps.put(null, none, i % 2 ? 'a' : 'b', i * 500, 0, 60, Buffer.from('x'))));
    await store.apply([jobOps.reserve(null, none, 'o', ['a'], 1)]);
    await store.apply([jobOps.bury(null, none, 'o', '2', 'a', 0)]);
    await redis.hdel(keys.stats, 'jobs-ready', 'jobs-urgent', 'jobs-buried', 'jobs-counted');
    await store.upgrade();
    expect(await store.totals()).toMatchObject({ ready: 4, urgent: 2, buried: 1, reserved: 0 });
    await expectTotalsAddUp(store);
    redis.disconnect();
  });
});

/** The kept totals equal the sums of every tube's counts. */
async function expectTotalsAddUp(store: RedisJobStore): Promise<void> {
  const counts = await store.tubeCounts(await store.listTubes());
  const sum = (k: 'urgent' | 'ready' | 'reserved' | 'delayed' | 'buried') => [...counts.tubes.values()].reduce((n, t) => n + t[k], 0);
  const totals = await store.totals();
  const withReady = [...counts.tubes].filter(([, t]) => t.ready > 0).map(([name]) => name).sort();
  expect((await store.tubesWithReadyJobs()).sort()).toEqual(withReady);
  expect(totals).toMatchObject({ urgent: sum('urgent'), ready: sum('ready'), reserved: sum('reserved'), delayed: sum('delayed'), buried: sum('buried'), tubes: counts.tubes.size });
}
