// A large body is kept apart from its job record (lua/includes/jobs.lua
// BODY_APART), so that a change of state rewrites only the small record; and
// only once every live sidecar reads that format (a sidecar of the format
// before would read such a body as empty).
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
const BIG = Buffer.alloc(4096, 'b');
const SMALL = Buffer.from('small body');

function openStore(): { redis: Redis; keys: ShardKeys; store: RedisJobStore } {
  const redis = new Redis(server.url);
  const keys = new Layout(uniquePrefix()).keys(0);
  return { redis, keys, store: new RedisJobStore(redis, bindScripts(redis).jobs, keys) };
}

/** A store whose data set has been raised to keeping bodies apart (one live sidecar of this version). */
async function raisedStore() {
  const s = openStore();
  await s.store.heartbeat('n1', 60_000, []);
  expect(await s.redis.hget(s.keys.stats, 'record-format')).toBe('2');
  return s;
}

const put = (store: RedisJobStore, body: Buffer, tube = 't', delay = 0) =>
  store.apply([jobOps.put(null, none, tube, 10, delay, 60, body)]) as Promise<[string]>;
const reserve = async (store: RedisJobStore, n = 1, tube = 't') =>
  ((await store.apply([jobOps.reserve(null, none, 'n1:1', [tube], n)])) as [Reservation])[0];

describe('record format: large bodies apart', () => {
  it('keeps a large body apart and a small one in its record, and answers both in full', async () => {
    const { redis, keys, store } = await raisedStore();
    const [big] = await put(store, BIG);
    const [small] = await put(store, SMALL);
    expect(await redis.hkeys(keys.bodies)).toEqual([big]);
    expect(await redis.hstrlen(keys.globals[0]!, big)).toBeLessThan(64);
    expect(await redis.hstrlen(keys.globals[0]!, small)).toBeGreaterThan(SMALL.length);
    expect((await store.peekJob(big))!.body).toEqual(BIG);
    expect((await store.peekTube('t', 'ready'))!.body).toEqual(BIG);
    const got = await reserve(store, 2);
    expect(got.jobs.map((j) => [j.id, j.body.length])).toEqual([[big, BIG.length], [small, SMALL.length]]);
    expect(got.jobs[0]!.body).toEqual(BIG);
    redis.disconnect();
  });

  it('changes of state rewrite the record only, and delete removes the body', async () => {
    const { redis, keys, store } = await raisedStore();
    const [id] = await put(store, BIG);
    await reserve(store);
    const owner = 'n1:1';
    expect(await store.apply([jobOps.touch(null, none, owner, id, 't')])).toEqual([60]);
    expect(await store.apply([jobOps.release(null, none, owner, id, 't', 5, 0)])).toEqual([true]);
    await reserve(store);
    expect(await store.apply([jobOps.bury(null, none, owner, id, 't', 7)])).toEqual([true]);
    expect(await store.kick('t', 1)).toBe(1);
    expect(await store.reserveJob(owner, id, 't')).toMatchObject({ id, body: BIG });
    expect(await store.releaseOwned(owner, [[id, 't']])).toBe(1);
    expect(await store.jobInfo(id)).toMatchObject({ state: 'ready', reserves: 3, releases: 1, buries: 1, kicks: 1 });
    expect(await redis.hstrlen(keys.globals[0]!, id)).toBeLessThan(64);
    expect(await redis.hget(keys.bodies, id)).toBe(BIG.toString());
    expect(await store.apply([jobOps.delete(null, none, owner, id, 't')])).toEqual([true]);
    expect(await redis.exists(keys.bodies)).toBe(0);
    expect(await redis.hexists(keys.globals[0]!, id)).toBe(0);
    redis.disconnect();
  });

  it('a large job put and deleted in one call leaves no body; a delayed one keeps it until reserved', async () => {
    const { redis, keys, store } = await raisedStore();
    expect(await store.apply([jobOps.put(null, none, 't', 1, 0, 60, BIG), jobOps.delete(null, none, 'o', '1', 't')])).toEqual(['1', true]);
    expect(await redis.exists(keys.bodies)).toBe(0);
    const [late] = await put(store, BIG, 't', 1);
    await new Promise((r) => setTimeout(r, 1100));
    await store.promoteDue(10);
    expect((await reserve(store)).jobs).toMatchObject([{ id: late, body: BIG }]);
    redis.disconnect();
  });

  it('keeps bodies in their records while a live sidecar has not said it reads the format', async () => {
    const { redis, keys, store } = openStore();
    expect(await redis.hget(keys.stats, 'record-format')).toBeNull();
    // A sidecar of the format before: its beat records no format.
    await redis.zadd(keys.nodes, Date.now() + 60_000, 'old');
    await store.heartbeat('n1', 60_000, []);
    expect(await redis.hget(keys.stats, 'record-format')).toBeNull();
    const [id] = await put(store, BIG);
    expect(await redis.exists(keys.bodies)).toBe(0);
    expect(await redis.hstrlen(keys.globals[0]!, id)).toBeGreaterThan(BIG.length);
    // Once it is gone, the next beat raises the format; records written before stay readable.
    await store.forgetNode('old').catch(() => {});
    await redis.zrem(keys.nodes, 'old');
    await store.heartbeat('n1', 60_000, ['+']);
    expect(await redis.hget(keys.stats, 'record-format')).toBe('2');
    const [apart] = await put(store, BIG);
    expect(await redis.hkeys(keys.bodies)).toEqual([apart]);
    expect((await reserve(store, 2)).jobs.map((j) => j.body)).toEqual([BIG, BIG]);
    redis.disconnect();
  });

  it('lists and searches jobs whose bodies are kept apart (the admin API)', async () => {
    const { redis, store } = await raisedStore();
    const needle = Buffer.concat([Buffer.alloc(2000, 'a'), Buffer.from('needle'), Buffer.alloc(100, 'a')]);
    const [plain] = await put(store, BIG);
    const [found] = await put(store, needle);
    const query = { state: 'ready' as const, cursor: '', limit: 10, scan: 100, needle: Buffer.from('needle'), preview: 16 };
    const page = await store.listJobs('t', query);
    expect(page.jobs.map((j) => [j.id, j.body.toString()])).toEqual([[found, 'a'.repeat(16)]]);
    const all = await store.listJobs('t', { ...query, needle: Buffer.alloc(0) });
    expect(all.jobs.map((j) => j.id)).toEqual([plain, found]);
    redis.disconnect();
  });

  it('a forgotten sidecar takes its recorded format with it', async () => {
    const { redis, keys, store } = await raisedStore();
    expect(await redis.hget(`${keys.tag}:node-formats`, 'n1')).toBe('2');
    await store.heartbeat('n1', 0, ['+']);
    await store.forgetNode('n1');
    expect(await redis.hexists(`${keys.tag}:node-formats`, 'n1')).toBe(0);
    redis.disconnect();
  });
});
