// The same scripts on a 3-node Redis Cluster: every key a script touches
// shares one hash tag, so each call lands on one node.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildLibrary } from '../../src/store/redis/scripts.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool } from '../helpers/wire.js';

let cluster: TestCluster;
const sidecars: TestSidecar[] = [];
const pool = new WirePool();

beforeAll(async () => { cluster = await startCluster(3); }, 60_000);
afterAll(async () => {
  pool.closeAll();
  for (const s of sidecars) await s.stop();
  await cluster?.stop();
});

const dial = (s: TestSidecar) => pool.dial(s.port);

/** Prefixes whose hash tag `{prefix:0}` lives on each of the cluster's nodes. */
async function prefixPerNode(): Promise<string[]> {
  const admin = new Redis(cluster.ports[0]!, '127.0.0.1');
  try {
    const slots = (await admin.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
    const byNode = new Map<number, string>();
    while (byNode.size < cluster.ports.length) {
      const prefix = uniquePrefix();
      const slot = (await admin.cluster('KEYSLOT', `{${prefix}:0}`)) as number;
      const owner = slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
      if (!byNode.has(owner)) byNode.set(owner, prefix);
    }
    return [...byNode.values()];
  } finally {
    admin.disconnect();
  }
}

it('serves the whole job life cycle through two sidecars, for prefixes on every node', async () => {
  for (const prefix of await prefixPerNode()) {
    const A = await startRedstalk({ redisUrl: cluster.url, prefix });
    const B = await startRedstalk({ redisUrl: cluster.url, prefix });
    sidecars.push(A, B);
    const [a, b] = [await dial(A), await dial(B)];
    await a.cmd('use work');
    await b.cmd('watch work');
    b.send('reserve\r\n');
    expect(await b.silent(100)).toBe(true);
    expect(await a.cmd('put 1 0 60 5\r\nhello')).toBe('INSERTED 1');
    expect((await b.reply()).line).toBe('RESERVED 1 5');
    expect(await b.cmd('release 1 0 1')).toBe('RELEASED');
    expect(await b.cmd('reserve', 3000)).toBe('RESERVED 1 5\nhello');
    expect(await b.cmd('bury 1 0')).toBe('BURIED');
    expect(await a.cmd('kick 1')).toBe('KICKED 1');
    expect(await a.cmd('stats-tube work')).toContain('current-jobs-ready: 1');
    expect(await a.cmd('delete 1')).toBe('DELETED');
    expect(await b.cmd('stats')).toContain('total-jobs: 1');
    expect(await a.cmd('list-tubes')).toContain('- work');
  }
});

it('loads its functions on every primary, and again on primaries that lost them (FUNCTION FLUSH), for prefixes on every node', async () => {
  const library = buildLibrary({ shardedPubSub: true }); // wake-ups with SPUBLISH
  const loaded = async (port: number) => ((await cluster.call(port, 'FUNCTION', 'LIST', 'LIBRARYNAME', library.name)) as unknown[]).length === 1;
  const started = await Promise.all((await prefixPerNode()).map((prefix) => startRedstalk({ redisUrl: cluster.url, prefix })));
  sidecars.push(...started);
  const primaries = await cluster.primaries();
  expect(primaries).toHaveLength(3);
  for (const port of primaries) expect(await loaded(port)).toBe(true);
  for (const port of primaries) await cluster.call(port, 'FUNCTION', 'FLUSH');
  for (const s of started) {
    const a = await dial(s);
    expect(await a.cmd('put 0 0 60 2\r\nhi')).toMatch(/^INSERTED \d+$/);
    expect(await a.cmd('reserve-with-timeout 0')).toMatch(/^RESERVED \d+ 2\nhi$/);
    expect(await a.cmd('stats')).toContain('current-jobs-reserved: 1\n');
  }
  for (const port of primaries) expect(await loaded(port)).toBe(true);
});
