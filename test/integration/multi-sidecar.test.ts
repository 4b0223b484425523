// Several sidecars on one Redis behave as one server.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { spawnRedstalk, startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool, yamlMap } from '../helpers/wire.js';
import { CuttableProxy } from '../faults/processes.js';
import { onCluster } from '../helpers/topology.js';

let redis: TestRedis;
const sidecars: Array<{ port: number; stop(): Promise<void> }> = [];
const pool = new WirePool();

async function pair(): Promise<[TestSidecar, TestSidecar]> {
  const prefix = uniquePrefix();
  const a = await startRedstalk({ redisUrl: redis.url, prefix });
  const b = await startRedstalk({ redisUrl: redis.url, prefix });
  sidecars.push(a, b);
  return [a, b];
}

const dial = (s: { port: number }) => pool.dial(s.port);


beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis.stop(); });
afterEach(async () => {
  pool.closeAll();
  for (const s of sidecars.splice(0)) await s.stop();
});

describe('two sidecars on one Redis', () => {
  it('a put on A is reserved on B, and a waiting reserve on B wakes within milliseconds', async () => {
    const [A, B] = await pair();
    const [a, b] = [await dial(A), await dial(B)];
    expect(await a.cmd('put 0 0 60 3\r\none')).toBe('INSERTED 1');
    expect(await b.cmd('reserve-with-timeout 0')).toBe('RESERVED 1 3\none');
    b.send('reserve\r\n');
    expect(await b.silent(100)).toBe(true);
    const t0 = Date.now();
    await a.cmd('put 0 0 60 3\r\ntwo');
    expect((await b.reply()).line).toBe('RESERVED 2 3');
    expect(Date.now() - t0).toBeLessThan(500);
  });

  it('ids stay unique and increasing across sidecars', async () => {
    const [A, B] = await pair();
    const [a, b] = [await dial(A), await dial(B)];
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push(Number((await (i % 2 ? a : b).cmd('put 0 0 60 1\r\nx')).split(' ')[1]));
    }
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('release, kick and delay expiry on A wake a waiter on B', async () => {
    const [A, B] = await pair();
    const [a, b] = [await dial(A), await dial(B)];
    await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('reserve');
    b.send('reserve\r\n');
    expect(await b.silent(100)).toBe(true);
    expect(await a.cmd('release 1 0 0')).toBe('RELEASED');
    expect((await b.reply()).line).toBe('RESERVED 1 1');
    await b.cmd('bury 1 0');
    b.send('reserve\r\n');
    expect(await b.silent(100)).toBe(true);
    expect(await a.cmd('kick 1')).toBe('KICKED 1');
    expect((await b.reply()).line).toBe('RESERVED 1 1');
    await b.cmd('delete 1');
    await a.cmd('put 0 1 60 1\r\nd');
    const t0 = Date.now();
    expect(await b.cmd('reserve', 3000)).toBe('RESERVED 2 1\nd');
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('a job reserved through A whose connection drops is reserved through B at once', async () => {
    const [A, B] = await pair();
    const [a, b] = [await dial(A), await dial(B)];
    await a.cmd('put 0 0 600 1\r\nx');
    await a.cmd('reserve');
    b.send('reserve\r\n');
    expect(await b.silent(100)).toBe(true);
    a.close();
    expect((await b.reply(2000)).line).toBe('RESERVED 1 1');
  });

  it('stats, stats-tube and list-tubes agree on both', async () => {
    const [A, B] = await pair();
    const [a, b] = [await dial(A), await dial(B)];
    await a.cmd('use left');
    await b.cmd('watch right');
    await a.cmd('put 0 0 60 1\r\nx');
    b.send('reserve-with-timeout 10\r\n');
    await new Promise((r) => setTimeout(r, 200)); // counter snapshots are coalesced over 20 ms
    const [sa, sb] = [yamlMap(await a.cmd('stats')), yamlMap(await (await dial(B)).cmd('stats'))];
    for (const k of ['current-jobs-ready', 'current-tubes', 'total-jobs', 'cmd-put', 'cmd-use', 'cmd-watch',
      'cmd-reserve-with-timeout', 'current-waiting', 'current-producers', 'current-workers']) {
      expect([k, sa[k]]).toEqual([k, sb[k]]);
    }
    expect(sa['current-connections']).toBe('2');
    expect(sa['current-waiting']).toBe('1');
    expect(sa['current-tubes']).toBe('3');
    const listA = (await a.cmd('list-tubes')).split('\n').slice(2).sort();
    const listB = (await (await dial(B)).cmd('list-tubes')).split('\n').slice(2).sort();
    expect(listA).toEqual(listB);
    const ta = yamlMap(await a.cmd('stats-tube right'));
    expect([ta['current-watching'], ta['current-waiting']]).toEqual(['1', '1']);
    expect(yamlMap(await (await dial(B)).cmd('stats-tube left'))['current-using']).toBe('1');
  });

  it('a job reserved through a sidecar that is killed goes back once the sidecar\'s lease expires, long before its TTR', async () => {
    const prefix = uniquePrefix();
    const killed = await spawnRedstalk(['--redis', redis.url, '--prefix', prefix, '--log-level', 'warn']);
    const B = await startRedstalk({ redisUrl: redis.url, prefix, heartbeatMs: 200 });
    sidecars.push(B);
    const a = await dial(killed);
    await a.cmd('put 0 0 3600 1\r\nx');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nx');
    await killed.stop('SIGKILL');
    const b = await dial(B);
    const t0 = Date.now();
    // The killed sidecar's lease is 5 s (5 beats of 1 s); B looks for dead sidecars at every beat (200 ms).
    expect(await b.cmd('reserve-with-timeout 10', 12_000)).toBe('RESERVED 1 1\nx');
    const back = Date.now() - t0;
    console.log(`a killed sidecar's job reserved on B ${back} ms after the kill (lease 5 s, B's beat 200 ms)`);
    expect(back, `back ${back} ms after the kill: within the lease (5 s) + 1 s`).toBeLessThan(6_000);
    expect(yamlMap(await b.cmd('stats-job 1'))).toMatchObject({ timeouts: '0', reserves: '2' });
  }, 20_000);

  it('a job reserved through a sidecar that is killed is handed out again after its TTR', async () => {
    const prefix = uniquePrefix();
    const killed = await spawnRedstalk(['--redis', redis.url, '--prefix', prefix, '--log-level', 'warn']);
    const B = await startRedstalk({ redisUrl: redis.url, prefix });
    sidecars.push(B);
    const a = await dial(killed);
    await a.cmd('put 0 0 2 1\r\nx');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nx');
    await killed.stop('SIGKILL');
    const b = await dial(B);
    const t0 = Date.now();
    expect(await b.cmd('reserve-with-timeout 5', 7000)).toBe('RESERVED 1 1\nx');
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThan(1000);
    expect(waited).toBeLessThan(3500);
    expect(yamlMap(await b.cmd('stats-job 1')).timeouts).toBe('1');
  });

  it('a dead sidecar stops counting after its heartbeat expires, and its tubes go', async () => {
    const prefix = uniquePrefix();
    const killed = await spawnRedstalk(['--redis', redis.url, '--prefix', prefix, '--log-level', 'warn']);
    const B = await startRedstalk({ redisUrl: redis.url, prefix, heartbeatMs: 200 });
    sidecars.push(B);
    const a = await dial(killed);
    await a.cmd('use ghost');
    const b = await dial(B);
    await new Promise((r) => setTimeout(r, 100));
    expect(await b.cmd('list-tubes')).toContain('- ghost');
    await killed.stop('SIGKILL');
    // killed sidecar beats every 1 s with a 5 s lease; B reaps at every beat of 200 ms
    await new Promise((r) => setTimeout(r, 6500));
    expect(await b.cmd('list-tubes')).not.toContain('- ghost');
    expect(yamlMap(await b.cmd('stats'))['current-connections']).toBe('1');
  }, 15_000);
});

describe('a sidecar cut off from Redis for longer than its lease', () => {
  it.skipIf(onCluster)('closes the connection holding a job before its lease can lapse: the job is never held by two open connections, and it serves again once renewed', async () => {
    const prefix = uniquePrefix();
    const proxy = await CuttableProxy.start(redis.port);
    sidecars.push({ port: 0, stop: () => proxy.close() });
    const A = await startRedstalk({ redisUrl: proxy.url, prefix, heartbeatMs: 200 });
    const B = await startRedstalk({ redisUrl: redis.url, prefix, heartbeatMs: 200 });
    sidecars.push(A, B);
    const a = await dial(A);
    await a.cmd('put 0 0 600 1\r\nj');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nj');
    const b = await dial(B);
    b.send('reserve-with-timeout 10\r\n');
    expect(await b.silent(100)).toBe(true);
    const events: string[] = [];
    const t0 = performance.now();
    const at = () => Math.round(performance.now() - t0);
    a.socket.once('close', () => events.push(`a closed (${at()} ms)`));
    proxy.cut(); // A's link to Redis is reset, and no new one gets through
    const got = await b.reply(10_000);
    events.push(`b got ${got.line} (${at()} ms)`);
    console.log(`lease 1000 ms, heartbeat 200 ms, after the cut: ${events.join(', ')}`);
    expect(events.map((e) => e.replace(/ \(\d+ ms\)$/, ''))).toEqual(['a closed', 'b got RESERVED 1 1']);
    proxy.restore();
    // A serves again once a beat renews its lease.
    const again = await dial(A);
    await expect.poll(() => again.cmd('put 0 0 60 1\r\nk'), { timeout: 5000 }).toMatch(/^INSERTED \d+$/);
    await expect.poll(() => again.cmd('reserve-with-timeout 0'), { timeout: 5000 }).toMatch(/^RESERVED \d+ 1\nk$/);
    expect(await b.cmd('delete 1')).toBe('DELETED');
  });
});
