// The batch script keeps writes back within a call (ids taken with one
// INCRBY, puts' records and zset members written in bulk, reservations and
// the per-tube reserved counts written once at the end): ops of ONE call
// that act on the same job must still see each other, and what Redis holds
// afterwards (records, zset members, counters) must be what the ops one by
// one would have left.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Layout, type ShardKeys } from '../../src/store/layout.js';
import { jobOps, type Reservation } from '../../src/store/ops.js';
import { RedisJobStore } from '../../src/store/redis/job-store.js';
import { bindScripts } from '../../src/store/redis/functions.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { uniquePrefix } from '../helpers/redstalk.js';

let server: TestRedis;
beforeAll(async () => { server = await startRedis(); });
afterAll(async () => { await server.stop(); });

const none = () => {};
const body = (s = 'x') => Buffer.from(s);
const member = (id: string) => String.fromCharCode(48 + id.length) + id;

function openStore(shards = 1, shard = 0): { redis: Redis; keys: ShardKeys; store: RedisJobStore } {
  const redis = new Redis(server.url);
  const keys = new Layout(uniquePrefix(), shards).keys(shard);
  return { redis, keys, store: new RedisJobStore(redis, bindScripts(redis).jobs, keys) };
}

/** ZPOPMINs this Redis ran so far, scripts' included (INFO commandstats). */
async function zpopminCalls(redis: Redis): Promise<number> {
  return Number(/cmdstat_zpopmin:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
}

/** Every counter the scripts keep equals what the sets hold: stats, tube meta 'reserved', ready-tubes. */
async function expectCountersExact(redis: Redis, keys: ShardKeys, store: RedisJobStore): Promise<void> {
  const tubes = await store.listTubes();
  const counts = await store.tubeCounts(tubes);
  let ready = 0, urgent = 0, buried = 0;
  const withReady: string[] = [];
  for (const name of tubes) {
    const t = keys.tube(name);
    const inReady = await redis.zcard(t[1]!);
    ready += inReady;
    urgent += await redis.zcount(t[1]!, 0, 1023);
    buried += await redis.zcard(t[3]!);
    if (inReady > 0) withReady.push(name);
    // The tube's reserved count is its members of the global reserved zset.
    const reservedHere = (await redis.zrange(keys.reserved, 0, -1)).filter((m) => m.slice(1 + m.charCodeAt(0) - 48) === name).length;
    expect(counts.tubes.get(name)!.reserved, `reserved of ${name}`).toBe(reservedHere);
  }
  const totals = await store.totals();
  expect({ ready: totals.ready, urgent: totals.urgent, buried: totals.buried }).toEqual({ ready, urgent, buried });
  expect((await store.tubesWithReadyJobs()).sort()).toEqual(withReady.sort());
}

describe('batch: ops of one call on the same job', () => {
  it("counts a put's and a release's delay from when the command arrived, not from when the call runs", async () => {
    const { redis, keys, store } = openStore();
    const due = async (id: string) => Number(await redis.zscore(keys.tube('t')[2]!, member(id)));
    const redisNow = async () => { const [s, us] = await redis.time(); return Number(s) * 1000 + Math.floor(Number(us) / 1000); };
    const arrived = Date.now() - 1500;
    const [id] = await store.apply([jobOps.put(null, none, 't', 1, 2, 60, body(), arrived)]) as [string];
    expect((await due(id)) - (await redisNow())).toBeGreaterThan(0);
    expect((await due(id)) - (await redisNow())).toBeLessThanOrEqual(500);
    // One whose whole delay went by before the call is ready at once (its delay still shown).
    const [late] = await store.apply([jobOps.put(null, none, 'u', 1, 1, 60, body(), Date.now() - 5000)]) as [string];
    expect(await store.jobInfo(late)).toMatchObject({ state: 'ready', delay: 1 });
    expect(await store.apply([jobOps.reserve(null, none, 'o', ['u'], 1)])).toMatchObject([{ jobs: [{ id: late }] }]);
    await store.apply([jobOps.reserve(null, none, 'o', ['t'], 1)]);
    await new Promise((r) => setTimeout(r, 600));
    const [reserved] = await store.apply([jobOps.reserve(null, none, 'o', ['t'], 1)]) as [Reservation];
    expect(reserved).toMatchObject({ jobs: [{ id }] });
    expect(await store.apply([jobOps.release(null, none, 'o', id, 't', 1, 3, Date.now() - 1000)])).toEqual([true]);
    expect((await due(id)) - (await redisNow())).toBeGreaterThan(1500);
    expect((await due(id)) - (await redisNow())).toBeLessThanOrEqual(2000);
    expect(await store.jobInfo(id)).toMatchObject({ state: 'delayed', delay: 3 });
    redis.disconnect();
  });

  it('hands out consecutive ids in op order to puts and burnt ids, with one shard and with several', async () => {
    const one = openStore();
    expect(await one.store.apply([
      jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.burnId(null, none, 't'),
      jobOps.put(null, none, 'u', 1, 0, 60, body()),
    ])).toEqual(['1', '2', '3', '4']);
    expect(await one.store.apply([jobOps.burnId(null, none, 't'), jobOps.put(null, none, 't', 1, 0, 60, body())])).toEqual(['5', '6']);
    one.redis.disconnect();
    // Shard 1 of 3: id = seq * 3 + 1.
    const three = openStore(3, 1);
    expect(await three.store.apply([
      jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.burnId(null, none, 't'), jobOps.put(null, none, 't', 1, 0, 60, body()),
    ])).toEqual(['4', '7', '10']);
    three.redis.disconnect();
  });

  it('deletes a job put earlier in the same call, leaving no record and no member', async () => {
    const { redis, keys, store } = openStore();
    const [id, gone, again] = await store.apply([
      jobOps.put(null, none, 'default', 5, 0, 60, body()), jobOps.delete(null, none, 'o', '1', 'default'), jobOps.delete(null, none, 'o', '1', 'default'),
    ]);
    expect([id, gone, again]).toEqual(['1', true, false]);
    expect(await redis.hexists(keys.globals[0]!, '1')).toBe(0);
    expect(await redis.zcard(keys.tube('default')[1]!)).toBe(0);
    // A delayed one too: its members leave both delayed zsets.
    const [delayed, deleted] = await store.apply([jobOps.put(null, none, 'default', 5, 30, 60, body()), jobOps.delete(null, none, 'o', '2', 'default')]);
    expect([delayed, deleted]).toEqual(['2', true]);
    expect(await redis.zcard(keys.delayed)).toBe(0);
    expect(await redis.zcard(keys.tube('default')[2]!)).toBe(0);
    expect((await store.totals()).totalJobs).toBe(2);
    // (the default tube stays, empty: any other would have been removed)
    expect((await store.tubeCounts(['default'])).tubes.get('default')).toMatchObject({ totalJobs: 2, cmdDelete: 2, ready: 0 });
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it('reserves jobs put in the same call by priority, then id, and leaves the rest ready', async () => {
    const { redis, keys, store } = openStore();
    const results = await store.apply([
      jobOps.put(null, none, 't', 5, 0, 60, body('a')), jobOps.put(null, none, 't', 1, 0, 60, body('b')),
      jobOps.put(null, none, 't', 5, 0, 60, body('c')), jobOps.put(null, none, 't', 2000, 0, 60, body('d')),
      jobOps.put(null, none, 't', 1, 0, 60, body('e')), jobOps.put(null, none, 't', 0, 5, 60, body('f')),
      jobOps.reserve(null, none, 'o', ['t'], 3),
      jobOps.reserve(null, none, 'p', ['t'], 1),
      jobOps.put(null, none, 't', 0, 0, 60, body('g')),
      jobOps.reserve(null, none, 'q', ['t'], 1),
    ]);
    const taken = (r: unknown) => (r as Reservation).jobs.map((j) => `${j.id}:${j.body.toString()}`);
    expect(taken(results[6])).toEqual(['2:b', '5:e', '1:a']);
    expect(taken(results[7])).toEqual(['3:c']);
    expect(taken(results[9])).toEqual(['7:g']);
    expect(await redis.zrange(keys.tube('t')[1]!, 0, -1)).toEqual([member('4')]);
    expect(await store.totals()).toMatchObject({ ready: 1, urgent: 0, reserved: 5, delayed: 1, totalJobs: 7 });
    expect((await store.tubeCounts(['t'])).tubes.get('t')).toMatchObject({ reserved: 5, ready: 1, delayed: 1, totalJobs: 7 });
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it("says whether a reserve's tubes are drained as they are at the end of its call, for every reserve of the call", async () => {
    const { redis, store } = openStore();
    const drained = (r: unknown) => (r as Reservation).drained;
    // Puts each handed to a reserve (as a sidecar sends them at light load), lone and not: all drained.
    const handed = await store.apply([
      jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.reserve(null, none, 'a', ['t'], 1),
      jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.reserve(null, none, 'b', ['t'], 1),
      jobOps.put(null, none, 'u', 1, 0, 60, body()), jobOps.reserve(null, none, 'c', ['u', 't'], 2),
    ]);
    expect([handed[1], handed[3], handed[5]].map(drained)).toEqual([true, true, true]);
    // A put after the reserves, left ready: none of them drained its tube any longer.
    const left = await store.apply([
      jobOps.put(null, none, 't', 1, 0, 60, body()), jobOps.reserve(null, none, 'a', ['t'], 1),
      jobOps.put(null, none, 'u', 1, 0, 60, body()), jobOps.reserve(null, none, 'c', ['u'], 1),
      jobOps.put(null, none, 't', 1, 0, 60, body()),
    ]);
    expect([left[1], left[3]].map(drained)).toEqual([false, true]);
    // A delayed job is not drained either.
    const delayed = await store.apply([jobOps.reserve(null, none, 'a', ['t'], 1), jobOps.put(null, none, 'u', 1, 60, 60, body()),
      jobOps.put(null, none, 'u', 1, 0, 60, body()), jobOps.reserve(null, none, 'c', ['u'], 1)]);
    expect([delayed[0], delayed[3]].map(drained)).toEqual([true, false]);
    redis.disconnect();
  });

  it('hands a put to the lone reserve of its tube that follows it, straight to reserved, only when that reserve would take it', async () => {
    // Each case: what the two stores hold first, then [put, reserve] (how a sidecar hands a put to
    // a waiting consumer) in one call on one store, as two calls on the other.
    const said = (r: unknown) => (typeof r === 'object' && r !== null && 'jobs' in r
      ? (r as Reservation).jobs.map((j) => `${j.id}:${j.tube}:${j.body.toString()}:${j.ttr}`).join(' ')
      : r instanceof Error ? r.message : typeof r === 'number' ? (r < 0 ? r : 'wait') : r);
    type Setup = (store: RedisJobStore) => Promise<unknown>;
    const cases: Array<{ name: string; setup: Setup; pri?: number; delay?: number; owner?: string; handed: boolean }> = [
      { name: 'an empty tube', setup: async () => {}, handed: true },
      { name: 'a less urgent job ready', setup: (s) => s.apply([jobOps.put(null, none, 't', 20, 0, 60, body('old'))]), handed: true },
      { name: 'as urgent a job ready (put first: it goes first)', setup: (s) => s.apply([jobOps.put(null, none, 't', 10, 0, 60, body('old'))]), handed: false },
      { name: 'a more urgent job ready', setup: (s) => s.apply([jobOps.put(null, none, 't', 5, 0, 60, body('old'))]), handed: false },
      { name: 'a more urgent job due from its delay', setup: async (s) => {
        await s.apply([jobOps.put(null, none, 't', 5, 1, 60, body('due'))]);
        await new Promise((r) => setTimeout(r, 1100));
      }, handed: false },
      { name: 'a more urgent reservation past its TTR', setup: async (s) => {
        await s.apply([jobOps.put(null, none, 't', 5, 0, 1, body('late'))]);
        await s.apply([jobOps.reserve(null, none, 'other', ['t'], 1)]);
        await new Promise((r) => setTimeout(r, 1100));
      }, handed: false },
      { name: 'a paused tube', setup: async (s) => {
        await s.apply([jobOps.put(null, none, 't', 20, 0, 60, body('old'))]);
        expect(await s.pauseTube('t', 60)).toBe(true);
      }, handed: false },
      { name: 'a tube at its max-reserved', setup: async (s) => {
        await s.tubeSet('t', 'max-reserved', 1);
        await s.apply([jobOps.put(null, none, 't', 10, 0, 60, body('held'))]);
        await s.apply([jobOps.reserve(null, none, 'other', ['t'], 1)]);
      }, handed: false },
      { name: 'a tube below its max-reserved', setup: (s) => s.tubeSet('t', 'max-reserved', 2), handed: true },
      { name: 'a put with a delay', setup: async () => {}, delay: 60, handed: false },
      { name: 'a reserve of a sidecar without a lease', setup: (s) => s.heartbeat('gone', 0, []), owner: 'gone:1', handed: false },
    ];
    for (const c of cases) {
      const together = openStore();
      const apart = openStore();
      await c.setup(together.store);
      await c.setup(apart.store);
      const ops = () => [jobOps.put(null, none, 't', c.pri ?? 10, c.delay ?? 0, 60, body('new')), jobOps.reserve(null, none, c.owner ?? 'o:1', ['t'], 1)];
      const before = await zpopminCalls(together.redis);
      const one = await together.store.apply(ops());
      const popped = (await zpopminCalls(together.redis)) - before;
      const two = [];
      for (const op of ops()) two.push(...(await apart.store.apply([op])));
      expect(one.map(said), c.name).toEqual(two.map(said));
      // Handed over, the new job never entered the ready set: nothing popped out of it.
      if (c.handed) expect(popped, c.name).toBe(0);
      const newId = one[0] as string;
      expect((await together.store.jobInfo(newId))?.state, c.name).toBe((await apart.store.jobInfo(newId))?.state);
      expect((await together.store.jobInfo(newId))?.state, c.name).toBe(c.handed ? 'reserved' : c.delay ? 'delayed' : 'ready');
      const counts = async (store: RedisJobStore) => {
        const { tubes, ...rest } = await store.tubeCounts(['t']);
        return { ...rest, t: { ...tubes.get('t')!, pauseLeftUs: 0 } }; // (the time a pause has left moves on)
      };
      expect(await counts(together.store), c.name).toEqual(await counts(apart.store));
      expect(await together.store.totals(), c.name).toEqual(await apart.store.totals());
      await expectCountersExact(together.redis, together.keys, together.store);
      together.redis.disconnect();
      apart.redis.disconnect();
    }
  });

  it('deletes, releases, buries and touches a job handed over earlier in the same call', async () => {
    const { redis, keys, store } = openStore();
    const results = await store.apply([
      jobOps.put(null, none, 't', 10, 0, 60, body('a')), jobOps.reserve(null, none, 'o:1', ['t'], 1),
      jobOps.put(null, none, 't', 10, 0, 60, body('b')), jobOps.reserve(null, none, 'o:2', ['t'], 1),
      jobOps.put(null, none, 't', 10, 0, 60, body('c')), jobOps.reserve(null, none, 'o:3', ['t'], 1),
      jobOps.delete(null, none, 'o:1', '1', 't'), jobOps.release(null, none, 'o:2', '2', 't', 7, 0), jobOps.bury(null, none, 'o:3', '3', 't', 9),
    ]);
    expect(results.slice(6)).toEqual([true, true, true]);
    expect([results[1], results[3], results[5]].map((r) => (r as Reservation).jobs.map((j) => j.id))).toEqual([['1'], ['2'], ['3']]);
    expect(await store.jobInfo('1')).toBeNull();
    expect(await store.jobInfo('2')).toMatchObject({ state: 'ready', pri: 7, reserves: 1, releases: 1 });
    expect(await store.jobInfo('3')).toMatchObject({ state: 'buried', pri: 9, reserves: 1, buries: 1 });
    expect(await redis.hexists(keys.globals[0]!, '1')).toBe(0); // the jobs hash
    expect(await redis.zcard(keys.reserved)).toBe(0);
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it('deletes, releases, buries and touches a job reserved earlier in the same call', async () => {
    const { redis, keys, store } = openStore();
    await store.apply([0, 1, 2, 3].map(() => jobOps.put(null, none, 't', 10, 0, 60, body())));
    const results = await store.apply([
      jobOps.reserve(null, none, 'o', ['t'], 1), jobOps.delete(null, none, 'o', '1', 't'),
      jobOps.reserve(null, none, 'o', ['t'], 1), jobOps.release(null, none, 'o', '2', 't', 3, 0),
      jobOps.reserve(null, none, 'p', ['t'], 1), // takes 2 again: released with a lower pri
      jobOps.reserve(null, none, 'o', ['t'], 1), jobOps.bury(null, none, 'o', '3', 't', 7),
      jobOps.reserve(null, none, 'o', ['t'], 1), jobOps.touch(null, none, 'o', '4', 't'),
      jobOps.delete(null, none, 'o', '2', 't'), // held by p: refused
    ]);
    const ids = (r: unknown) => (r as Reservation).jobs.map((j) => j.id);
    expect(ids(results[0])).toEqual(['1']);
    expect(results[1]).toBe(true);
    expect(ids(results[2])).toEqual(['2']);
    expect(results[3]).toBe(true);
    expect(ids(results[4])).toEqual(['2']);
    expect(ids(results[5])).toEqual(['3']);
    expect(results[6]).toBe(true);
    expect(ids(results[7])).toEqual(['4']);
    expect(results[8]).toBe(60);
    expect(results[9]).toBe(false);
    // Held now: 2 (by p) and 4 (by o); 3 buried; 1 gone.
    expect((await redis.zrange(keys.reserved, 0, -1)).sort()).toEqual([member('2') + 't', member('4') + 't']);
    expect(await redis.hexists(keys.globals[0]!, '1')).toBe(0);
    expect(await store.jobInfo('2')).toMatchObject({ state: 'reserved', reserves: 2, releases: 1, pri: 3 });
    expect(await store.jobInfo('3')).toMatchObject({ state: 'buried', reserves: 1, buries: 1, pri: 7 });
    const four = (await store.jobInfo('4'))!;
    expect(four).toMatchObject({ state: 'reserved', reserves: 1 });
    expect(four.timeLeftUs).toBeGreaterThan(59_000_000);
    const deadline = Number(await redis.zscore(keys.reserved, member('4') + 't'));
    const [s] = await redis.time();
    expect(Math.abs(deadline - (Number(s) * 1000 + 60_000))).toBeLessThan(2000);
    expect(await store.totals()).toMatchObject({ ready: 0, reserved: 2, buried: 1 });
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it('removes the reservation of a job reserved in an earlier call that is touched, then released, in one call', async () => {
    const { redis, keys, store } = openStore();
    await store.apply([jobOps.put(null, none, 't', 10, 0, 60, body()), jobOps.put(null, none, 't', 10, 0, 60, body())]);
    await store.apply([jobOps.reserve(null, none, 'o', ['t'], 2)]);
    expect(await store.apply([
      jobOps.touch(null, none, 'o', '1', 't'), jobOps.release(null, none, 'o', '1', 't', 10, 0),
      jobOps.release(null, none, 'o', '2', 't', 10, 0), jobOps.reserve(null, none, 'p', ['t'], 1),
    ])).toMatchObject([60, true, true, { jobs: [{ id: '1' }] }]);
    expect(await redis.zrange(keys.reserved, 0, -1)).toEqual([member('1') + 't']);
    expect(await store.jobInfo('1')).toMatchObject({ state: 'reserved', reserves: 2, releases: 1 });
    expect(await store.jobInfo('2')).toMatchObject({ state: 'ready', reserves: 1, releases: 1 });
    expect(await store.totals()).toMatchObject({ ready: 1, reserved: 1 });
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it('lets TTR expiry in a call see the touches, releases and deletes made before it in that call', async () => {
    const { redis, keys, store } = openStore();
    await store.apply([0, 1, 2].map(() => jobOps.put(null, none, 't', 10, 0, 1, body())));
    await store.apply([jobOps.reserve(null, none, 'o', ['t'], 3)]);
    await new Promise((r) => setTimeout(r, 1100)); // every deadline has passed; nothing has expired them yet
    const results = await store.apply([
      jobOps.touch(null, none, 'o', '1', 't'), jobOps.release(null, none, 'o', '2', 't', 10, 0), jobOps.delete(null, none, 'o', '3', 't'),
      jobOps.reserve(null, none, 'p', ['t'], 5),
    ]);
    expect(results.slice(0, 3)).toEqual([1, true, true]);
    // Only 2 (released) is there to take: 1 was touched in time, 3 is gone; no timeouts counted.
    expect((results[3] as Reservation).jobs.map((j) => j.id)).toEqual(['2']);
    expect(await store.jobInfo('1')).toMatchObject({ state: 'reserved', timeouts: 0 });
    expect(await store.jobInfo('2')).toMatchObject({ state: 'reserved', timeouts: 0, releases: 1 });
    expect(await store.jobInfo('3')).toBeNull();
    expect((await store.totals()).jobTimeouts).toBe(0);
    await expectCountersExact(redis, keys, store);
    // 1 expires for real in a later call, and its reservation goes.
    await new Promise((r) => setTimeout(r, 1100));
    const [again] = await store.apply([jobOps.reserve(null, none, 'q', ['t'], 1)]);
    expect((again as Reservation).jobs.map((j) => j.id)).toEqual(['1']);
    expect(await store.jobInfo('1')).toMatchObject({ state: 'reserved', timeouts: 1, reserves: 2 });
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });

  it('serves the lone reserves of a tube in one call together, and a put handed to the reserve after it, each op seeing what it would in order (200 random calls against one op per call)', async () => {
    const batched = openStore();
    const serial = openStore();
    // (Both stores share one Redis: its ZPOPMINs are counted around the batched calls only.)
    let seed = 11;
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    const tubes = ['a', 'b'];
    const owners = ['o1', 'o2', 'o3', 'o4', 'o5', 'o6'];
    const held = new Map<string, { owner: string; tube: string }>();
    let nextId = 1, lone = 0, popped = 0;
    /** What an op's result says, less what depends on when its call ran (how long a job waited, drained). */
    const said = (r: unknown) => (typeof r === 'object' && r !== null && 'jobs' in r
      ? (r as Reservation).jobs.map((j) => `${j.id}:${j.tube}:${j.body.toString()}:${j.ttr}`).join(' ')
      : r);
    for (let call = 0; call < 200; call++) {
      const ops = [];
      const busy = new Set<string>(); // a reserve holds its connection: an owner's reserve is its last op in a call
      for (let k = rand(12) + 1; k > 0; k--) {
        const r = rand(12);
        const tube = tubes[rand(2)]!;
        const free = owners.filter((o) => !busy.has(o));
        const heldIds = [...held.keys()];
        const pick = heldIds.length > 0 && rand(3) > 0 ? heldIds[rand(heldIds.length)]! : String(1 + rand(nextId));
        const h = held.get(pick);
        const by = h?.owner ?? free[rand(Math.max(1, free.length))] ?? 'o1';
        if (r < 3) {
          ops.push(jobOps.put(null, none, tube, rand(3) * 500, 0, 60, body(`j${call}.${k}`)));
          // Half of them handed to a waiting consumer, as a sidecar sends it: its reserve right after.
          if (rand(2) === 0 && free.length > 0) {
            const owner = free[rand(free.length)]!;
            busy.add(owner);
            lone++;
            ops.push(jobOps.reserve(null, none, owner, [tube], 1));
          }
        } else if (r < 8 && free.length > 0) {
          const owner = free[rand(free.length)]!;
          busy.add(owner);
          lone++;
          ops.push(jobOps.reserve(null, none, owner, [tube], 1));
        } else if (busy.has(by)) continue;
        else if (r === 8) ops.push(jobOps.delete(null, none, by, pick, h?.tube ?? tube));
        else if (r === 9) ops.push(jobOps.release(null, none, by, pick, h?.tube ?? tube, rand(3) * 500, 0));
        else if (r === 10) ops.push(jobOps.bury(null, none, by, pick, h?.tube ?? tube, 5));
        else ops.push(jobOps.touch(null, none, by, pick, h?.tube ?? tube));
      }
      const before = await zpopminCalls(batched.redis);
      const together = await batched.store.apply(ops);
      popped += (await zpopminCalls(batched.redis)) - before;
      const oneByOne = [];
      for (const op of ops) oneByOne.push(...(await serial.store.apply([op])));
      expect(together.map(said), `call ${call}`).toEqual(oneByOne.map(said));
      ops.forEach((op, i) => {
        const res = together[i];
        if (op.code === 'p') nextId = Math.max(nextId, Number(res) + 1);
        if (op.code === 'v' && typeof res === 'object' && 'jobs' in res) for (const j of res.jobs) held.set(j.id, { owner: op.owner, tube: j.tube });
        if ((op.code === 'd' || op.code === 'r' || op.code === 'b') && res === true) held.delete(op.id);
      });
    }
    // Served together: far fewer ZPOPMINs than lone reserves.
    expect(popped).toBeLessThan(lone * 0.7);
    await expectCountersExact(batched.redis, batched.keys, batched.store);
    for (const id of held.keys()) expect((await batched.store.jobInfo(id))!.state).toBe('reserved');
    batched.redis.disconnect();
    serial.redis.disconnect();
  });

  it('serves the lone reserves waiting in a call when the last of their tube is of a sidecar without a lease (which takes nothing)', async () => {
    const { redis, store } = openStore();
    await store.heartbeat('live', 60_000, []);
    await store.heartbeat('gone', 0, []); // lapsed
    await store.apply([1, 2, 3].map(() => jobOps.put(null, none, 't', 10, 0, 60, body())));
    const results = await store.apply([
      jobOps.reserve(null, none, 'live:1', ['t'], 1), jobOps.reserve(null, none, 'gone:1', ['t'], 1),
      jobOps.reserve(null, none, 'live:2', ['t'], 1), jobOps.reserve(null, none, 'gone:2', ['t'], 1),
    ]);
    const ids = (r: unknown) => (r as Reservation).jobs.map((j) => j.id);
    const lapsed = (r: unknown) => (r instanceof Error && /no lease/.test(r.message) ? 'no lease' : r);
    expect([ids(results[0]), lapsed(results[1]), ids(results[2]), lapsed(results[3])]).toEqual([['1'], 'no lease', ['2'], 'no lease']);
    expect((await store.jobInfo('3'))!.state).toBe('ready');
    redis.disconnect();
  });

  it('keeps every counter exact over mixed calls of puts, reserves, releases, buries, touches and deletes (300 random calls)', async () => {
    const { redis, keys, store } = openStore();
    let seed = 7;
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    const tubes = ['a', 'b'];
    const held = new Map<string, { owner: string; tube: string }>();
    let nextId = 1;
    for (let call = 0; call < 300; call++) {
      const ops = [];
      const owners = ['o1', 'o2'];
      for (let k = rand(8) + 1; k > 0; k--) {
        const r = rand(10);
        const tube = tubes[rand(2)]!;
        const heldIds = [...held.keys()];
        const pick = heldIds.length > 0 ? heldIds[rand(heldIds.length)]! : String(1 + rand(nextId));
        const h = held.get(pick);
        if (r < 4) ops.push(jobOps.put(null, none, tube, rand(2) ? 10 : 2000, rand(6) === 0 ? 1 : 0, 60, body()));
        else if (r < 6) ops.push(jobOps.reserve(null, none, owners[rand(2)]!, rand(2) ? [tube] : tubes, 1 + rand(2)));
        else if (r === 6) ops.push(jobOps.delete(null, none, h?.owner ?? 'o1', pick, h?.tube ?? tube));
        else if (r === 7) ops.push(jobOps.release(null, none, h?.owner ?? 'o1', pick, h?.tube ?? tube, rand(2) ? 10 : 2000, 0));
        else if (r === 8) ops.push(jobOps.bury(null, none, h?.owner ?? 'o1', pick, h?.tube ?? tube, 5));
        else ops.push(jobOps.touch(null, none, h?.owner ?? 'o1', pick, h?.tube ?? tube));
      }
      const results = await store.apply(ops);
      ops.forEach((op, i) => {
        const res = results[i];
        if (op.code === 'p') nextId = Math.max(nextId, Number(res) + 1);
        if (op.code === 'v' && typeof res === 'object' && 'jobs' in res) for (const j of res.jobs) held.set(j.id, { owner: op.owner, tube: j.tube });
        if ((op.code === 'd' || op.code === 'r' || op.code === 'b') && res === true) held.delete(op.id);
      });
      if (call % 50 === 49) await expectCountersExact(redis, keys, store);
    }
    // What is held is exactly the reserved zset, each job reserved by its holder.
    const inZset = (await redis.zrange(keys.reserved, 0, -1)).map((m) => m.slice(1, 1 + m.charCodeAt(0) - 48)).sort();
    expect(inZset).toEqual([...held.keys()].sort());
    for (const id of held.keys()) expect((await store.jobInfo(id))!.state).toBe('reserved');
    await expectCountersExact(redis, keys, store);
    redis.disconnect();
  });
});
