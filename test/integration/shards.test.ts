// --shards N: tubes spread over shards by name, jobs found by id, reserves
// across shards in priority then put order, wake-ups per shard, the whole
// data set in stats and lists, the shard count fixed, and redstalk reshard.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Layout } from '../../src/store/layout.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { onCluster, testClusterUrl } from '../helpers/topology.js';
import { WirePool, yamlMap, type Wire } from '../helpers/wire.js';

const SHARDS = 4;
let redis: TestRedis;
const sidecars: TestSidecar[] = [];
const pool = new WirePool();

beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis.stop(); });
afterEach(async () => {
  pool.closeAll();
  for (const s of sidecars.splice(0)) await s.stop();
});

async function sidecar(opts: { prefix?: string; shards?: number } = {}): Promise<TestSidecar> {
  const s = await startRedstalk({ redisUrl: redis.url, shards: SHARDS, ...opts });
  sidecars.push(s);
  return s;
}

/** A connection that shows real ids (these tests look at them). */
const dial = (s: TestSidecar) => pool.dial(s.port, true);
const layout = new Layout('any', SHARDS);

/** Tube names, one per shard, in shard order (and more per shard if asked). */
function tubesByShard(perShard = 1): string[][] {
  const out: string[][] = Array.from({ length: SHARDS }, () => []);
  for (let i = 0; out.some((t) => t.length < perShard); i++) {
    const name = `tube${i}`;
    const list = out[layout.shardOf(name)]!;
    if (list.length < perShard) list.push(name);
  }
  return out;
}

async function put(w: Wire, tube: string, pri: number, body: string, delay = 0): Promise<string> {
  await w.cmd(`use ${tube}`);
  const reply = await w.cmd(`put ${pri} ${delay} 60 ${body.length}\r\n${body}`);
  expect(reply).toMatch(/^INSERTED \d+$/);
  return reply.slice('INSERTED '.length);
}

const reservedBody = (reply: string) => reply.split('\n')[1];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('--shards', () => {
  it('gives each job an id of its tube\'s shard, and finds every job by id', async () => {
    const s = await sidecar();
    const w = await dial(s);
    const tubes = tubesByShard().flat();
    for (const tube of tubes) {
      const id = await put(w, tube, 0, tube);
      expect(Number(id) % SHARDS).toBe(layout.shardOf(tube));
      expect(await w.cmd(`peek ${id}`)).toBe(`FOUND ${id} ${tube.length}\n${tube}`);
      expect(yamlMap(await w.cmd(`stats-job ${id}`)).tube).toBe(`"${tube}"`);
    }
    // reserve-job, bury, kick-job, delete: each in the job's own shard.
    const id = await put(w, tubes[2]!, 5, 'x');
    expect(await w.cmd(`reserve-job ${id}`)).toBe(`RESERVED ${id} 1\nx`);
    expect(await w.cmd(`bury ${id} 5`)).toBe('BURIED');
    await w.cmd(`use ${tubes[2]}`);
    expect(await w.cmd('peek-buried')).toBe(`FOUND ${id} 1\nx`);
    expect(await w.cmd(`kick-job ${id}`)).toBe('KICKED');
    expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
    expect(await w.cmd(`peek ${id}`)).toBe('NOT_FOUND');
  });

  it('sums stats over the shards and lists every tube', async () => {
    const s = await sidecar();
    const w = await dial(s);
    const tubes = tubesByShard(2).flat();
    for (const [i, tube] of tubes.entries()) await put(w, tube, i % 2 === 0 ? 0 : 2000, 'x');
    await put(w, tubes[0]!, 0, 'later', 100);
    const stats = yamlMap(await w.cmd('stats'));
    expect(stats['current-jobs-ready']).toBe(String(tubes.length));
    expect(stats['current-jobs-urgent']).toBe(String(tubes.length / 2));
    expect(stats['current-jobs-delayed']).toBe('1');
    expect(stats['total-jobs']).toBe(String(tubes.length + 1));
    expect(stats['current-tubes']).toBe(String(tubes.length + 1)); // and default
    const listed = (await w.cmd('list-tubes')).split('\n').slice(2).filter(Boolean).map((l) => l.slice(2));
    expect(listed.sort()).toEqual([...tubes, 'default'].sort());
    expect(yamlMap(await w.cmd(`stats-tube ${tubes[0]}`))['current-jobs-delayed']).toBe('1');
    await w.cmd(`use ${tubes[5]}`);
    expect(await w.cmd('kick 10')).toBe('KICKED 0');
    expect(await w.cmd(`pause-tube ${tubes[5]} 0`)).toBe('PAUSED');
  });

  it('reserves across shards by priority, then in put order', async () => {
    const s = await sidecar();
    const [p, c] = [await dial(s), await dial(s)];
    const [t0, t1, t2, t3] = tubesByShard().map((t) => t[0]!);
    // Equal priorities in four shards, put 5 ms apart (creation times in ms decide): put order wins.
    for (const [k, tube] of [t2!, t0!, t3!, t1!].entries()) {
      await put(p, tube, 10, `eq${k}`);
      await pause(5);
    }
    await put(p, t3!, 3, 'urgent');
    await put(p, t1!, 7, 'second');
    for (const t of [t0, t1, t2, t3]) await c.cmd(`watch ${t}`);
    await c.cmd('ignore default');
    const order: string[] = [];
    for (let i = 0; i < 6; i++) order.push(reservedBody(await c.cmd('reserve-with-timeout 0'))!);
    expect(order).toEqual(['urgent', 'second', 'eq0', 'eq1', 'eq2', 'eq3']);
    expect(await c.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
  });

  it('reserve-many takes from several shards in the same order', async () => {
    const s = await sidecar();
    const [p, c] = [await dial(s), await dial(s)];
    const [t0, t1, t2] = tubesByShard().map((t) => t[0]!);
    await put(p, t0!, 5, 'a5');
    await put(p, t1!, 1, 'b1');
    await put(p, t2!, 3, 'c3');
    await put(p, t1!, 4, 'b4');
    await put(p, t0!, 2, 'a2');
    for (const t of [t0, t1, t2]) await c.cmd(`watch ${t}`);
    c.send('reserve-many 4 0\r\n');
    expect(await c.line()).toBe('RESERVED-MANY 4');
    const bodies: string[] = [];
    for (let i = 0; i < 4; i++) bodies.push((await c.reply()).body!.toString());
    expect(bodies).toEqual(['b1', 'a2', 'c3', 'b4']);
    expect(reservedBody(await c.cmd('reserve-with-timeout 0'))).toBe('a5');
  });

  it('wakes a reserve blocked on tubes of several shards when any of them gets a job, delayed ones included', async () => {
    const s = await sidecar();
    const [p, c] = [await dial(s), await dial(s)];
    const [t0, t1, t2] = tubesByShard().map((t) => t[0]!);
    for (const t of [t0, t1, t2]) await c.cmd(`watch ${t}`);
    c.send('reserve-with-timeout 10\r\n');
    expect(await c.silent(150)).toBe(true);
    await put(p, t2!, 0, 'now');
    expect((await c.reply()).body!.toString()).toBe('now');
    // A delayed job of another shard wakes it when it comes due.
    c.send('reserve-with-timeout 10\r\n');
    expect(await c.silent(100)).toBe(true);
    await put(p, t0!, 0, 'soon', 1);
    expect((await c.reply(5000)).body!.toString()).toBe('soon');
  });

  it('hands every job to exactly one of many workers watching tubes of every shard', async () => {
    const s = await sidecar();
    const p = await dial(s);
    const tubes = tubesByShard(2).flat();
    const workers = await Promise.all(Array.from({ length: 6 }, () => dial(s)));
    for (const w of workers) for (const t of tubes) await w.cmd(`watch ${t}`);
    const seen = new Map<string, number>();
    const run = async (w: Wire) => {
      for (;;) {
        const r = await w.cmd('reserve-with-timeout 1', 10_000);
        if (r === 'TIMED_OUT') return;
        const body = reservedBody(r)!;
        seen.set(body, (seen.get(body) ?? 0) + 1);
        expect(await w.cmd(`delete ${r.split(' ')[1]}`)).toBe('DELETED');
      }
    };
    const done = Promise.all(workers.map(run));
    for (let i = 0; i < 400; i++) await put(p, tubes[i % tubes.length]!, i % 3, `job${i}`);
    await done;
    expect(seen.size).toBe(400);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  }, 60_000);

  it('answers a pipeline whose batched commands go to several shards in command order', async () => {
    const s = await sidecar();
    const [w, load] = [await dial(s), await dial(s)];
    const [held, other] = tubesByShard().map((t) => t[0]!);
    const N = 200;
    for (let i = 0; i < N; i++) await put(load, held!, 0, 'h');
    await w.cmd(`watch ${held}`);
    const ids: string[] = [];
    for (let i = 0; i < N; i++) ids.push((await w.cmd('reserve-with-timeout 0')).split(' ')[1]!);
    await w.cmd(`use ${other}`);
    // The held jobs' shard is kept busy by another client's puts, so its calls
    // finish after those of the other shard, whose puts are answered first.
    load.send(`put 0 0 60 1\r\nx\r\n`.repeat(3000));
    w.send(ids.map((id) => `delete ${id}\r\nput 0 0 60 1\r\ny\r\n`).join(''));
    const replies: string[] = [];
    for (let i = 0; i < 2 * N; i++) replies.push((await w.reply()).line);
    expect(replies.filter((r, i) => (i % 2 === 0 ? r !== 'DELETED' : !/^INSERTED \d+$/.test(r)))).toEqual([]);
    for (let i = 0; i < 3000; i++) await load.reply();
  });

  it('answers pipelined reserve-with-timeout 0 over tubes of two shards one by one, most urgent first', async () => {
    const s = await sidecar();
    const [p, c] = [await dial(s), await dial(s)];
    const [t0, t1] = tubesByShard().map((t) => t[0]!);
    await put(p, t0!, 5, 'a5');
    await put(p, t1!, 1, 'b1');
    await put(p, t1!, 7, 'b7');
    for (const t of [t0, t1]) await c.cmd(`watch ${t}`);
    const link = new Redis(redis.url);
    const calls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await link.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    c.send('reserve-with-timeout 0\r\n'.repeat(5));
    const got: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await c.reply();
      got.push(r.body ? r.body.toString() : r.line);
    }
    expect(got).toEqual(['b1', 'a5', 'b7', 'TIMED_OUT', 'TIMED_OUT']);
    // Each reserve looked at both shards on its own (candidates in each, the two shards' in one
    // call to their node, then a reserve where the most urgent is): 8 calls here (3 jobs x 2, then
    // 1 for each TIMED_OUT), against 5 had the five gone as one run. (On the test cluster the
    // calls go to its nodes, not to this redis-server.)
    if (!onCluster) expect((await calls()) - before).toBeGreaterThanOrEqual(8);
    link.disconnect();
  });

  it('uses up an id of the used tube\'s shard for a put that ends in EXPECTED_CRLF', async () => {
    const s = await sidecar();
    const w = await dial(s);
    const tube = tubesByShard()[3]![0]!;
    const first = await put(w, tube, 0, 'a');
    expect(await w.cmd('put 0 0 60 1\r\nbX')).toBe('EXPECTED_CRLF');
    await w.cmd('');
    const next = await put(w, tube, 0, 'c');
    expect(Number(next)).toBe(Number(first) + 2 * SHARDS);
  });

  it('spreads waiting rooms over the shards and lists them all', async () => {
    const s = await sidecar();
    const w = await dial(s);
    const rooms = tubesByShard().flat().map((t) => `room-${t}`);
    for (const room of rooms) expect(await w.cmd(`enter ${room} user1`)).toMatch(/^(ENTERED|WAITING)/);
    const listed = (await w.cmd('list-rooms')).split('\n').slice(2).filter(Boolean).map((l) => l.slice(2));
    expect(listed).toEqual([...rooms].sort());
  });
});

describe('the shard count of a data set', () => {
  it('is recorded when the data set is created, and a sidecar with another count refuses to start', async () => {
    const prefix = uniquePrefix();
    await sidecar({ prefix, shards: 4 });
    await expect(startRedstalk({ redisUrl: redis.url, prefix, shards: 2 })).rejects.toThrow(/has 4 shards, and this sidecar was started with --shards 2.*--shards 4.*reshard/);
    const same = await sidecar({ prefix, shards: 4 });
    expect(same.port).toBeGreaterThan(0);
  });

  it.skipIf(onCluster)('is 1 for a data set written before counts were recorded', async () => {
    const prefix = uniquePrefix();
    const admin = new Redis(redis.url);
    try {
      await admin.set(`{${prefix}:0}:seq`, 7); // what an older redstalk leaves: one shard, no record
      await expect(startRedstalk({ redisUrl: redis.url, prefix, shards: 4 })).rejects.toThrow(/has 1 shard, and this sidecar was started with --shards 4/);
      const s = await sidecar({ prefix, shards: 1 });
      expect(await (await dial(s)).cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 8');
    } finally {
      admin.disconnect();
    }
  });

  it.skipIf(onCluster)('puts the keys of each shard under its own hash tag', async () => {
    const s = await sidecar();
    const w = await dial(s);
    for (const tube of tubesByShard(2).flat()) await put(w, tube, 0, 'x');
    const admin = new Redis(redis.url);
    try {
      const keys = await admin.keys(`{${s.prefix}*`);
      const tags = new Set(keys.map((k) => k.slice(0, k.indexOf('}') + 1)));
      // Each shard's tag, and {prefix:0} for the shard count.
      const expected = new Set([...Array.from({ length: SHARDS }, (_, i) => new Layout(s.prefix, SHARDS).keys(i).tag), `{${s.prefix}:0}`]);
      expect([...tags].sort()).toEqual([...expected].sort());
    } finally {
      admin.disconnect();
    }
  });
});

describe('redstalk reshard', () => {
  it('moves ready, delayed and buried jobs into a data set with another shard count', async () => {
    const prefix = uniquePrefix();
    const old = await startRedstalk({ redisUrl: redis.url, prefix, shards: 1 });
    const w = await pool.dial(old.port, true);
    const tubes = tubesByShard().flat();
    for (const [i, tube] of tubes.entries()) await put(w, tube, i, `job-${tube}`);
    await put(w, tubes[0]!, 9, 'delayed', 600);
    const buried = await put(w, tubes[1]!, 4, 'buried');
    expect(await w.cmd(`reserve-job ${buried}`)).toBe(`RESERVED ${buried} 6\nburied`);
    expect(await w.cmd(`bury ${buried} 4`)).toBe('BURIED');
    await old.stop();

    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-reshard-'));
    try {
      const to = uniquePrefix();
      const journal = path.join(dir, 'journal.jsonl');
      const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'reshard', '--redis', testClusterUrl || redis.url,
        '--prefix', prefix, '--to-prefix', to, '--shards', String(SHARDS), '--journal', journal, '--json'], { cwd: ROOT, encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toMatchObject({ ready: tubes.length, delayed: 1, buried: 1, from: 1, to: SHARDS });
      const s = await sidecar({ prefix: to, shards: SHARDS });
      const c = await dial(s);
      const stats = yamlMap(await c.cmd('stats'));
      expect([stats['current-jobs-ready'], stats['current-jobs-delayed'], stats['current-jobs-buried']]).toEqual([String(tubes.length), '1', '1']);
      for (const [i, tube] of tubes.entries()) {
        await c.cmd(`use ${tube}`);
        const found = await c.cmd('peek-ready');
        expect(found.split('\n')[1]).toBe(`job-${tube}`);
        expect(yamlMap(await c.cmd(`stats-job ${found.split(' ')[1]}`)).pri).toBe(String(i));
      }
      // The old data set is empty now.
      const left = yamlMap(await (await dial(await sidecar({ prefix, shards: 1 }))).cmd('stats'));
      expect([left['current-jobs-ready'], left['current-jobs-delayed'], left['current-jobs-buried']]).toEqual(['0', '0', '0']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
