// Many producers and workers on two sidecars sharing one Redis: every job is
// deleted exactly once, nothing is lost, even when workers drop their
// connection in the middle of a job.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';

let redis: TestRedis;
const sidecars: TestSidecar[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix();
  sidecars.push(await startRedstalk({ redisUrl: redis.url, prefix }), await startRedstalk({ redisUrl: redis.url, prefix }));
});
afterAll(async () => {
  for (const s of sidecars) await s.stop();
  await redis.stop();
});

const PRODUCERS = 4;
const JOBS_EACH = 300;
const WORKERS = 8;

async function produce(p: number): Promise<void> {
  const w = await Wire.connect(sidecars[p % 2]!.port);
  await w.cmd(`use t${p % 3}`);
  for (let i = 0; i < JOBS_EACH; i++) {
    const body = `${p}-${i}`;
    const reply = await w.cmd(`put ${i % 7} ${i % 50 === 0 ? 1 : 0} 30 ${body.length}\r\n${body}`);
    if (!reply.startsWith('INSERTED ')) throw new Error(reply);
  }
  w.close();
}

/** Reserves and deletes until the queue stays empty; now and then drops the connection holding a job. */
async function work(n: number, done: Map<string, number>): Promise<void> {
  let w = await Wire.connect(sidecars[n % 2]!.port);
  const watch = async () => { for (const t of ['t0', 't1', 't2']) await w.cmd(`watch ${t}`); };
  await watch();
  let idle = 0;
  let handled = 0;
  while (idle < 3) {
    const r = await w.cmd('reserve-with-timeout 1', 5000);
    if (r === 'TIMED_OUT') { idle++; continue; }
    idle = 0;
    const [, id] = r.split('\n')[0]!.split(' ');
    const body = r.split('\n')[1]!;
    if (++handled % 37 === 0) {
      w.close(); // the job must go back to ready at once and be done by someone else
      w = await Wire.connect(sidecars[(n + handled) % 2]!.port);
      await watch();
      continue;
    }
    expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
    done.set(body, (done.get(body) ?? 0) + 1);
  }
  w.close();
}

it('delivers every job exactly once across sidecars, producers and flaky workers', async () => {
  const done = new Map<string, number>();
  await Promise.all([
    ...Array.from({ length: PRODUCERS }, (_, p) => produce(p)),
    ...Array.from({ length: WORKERS }, (_, n) => work(n, done)),
  ]);
  expect(done.size).toBe(PRODUCERS * JOBS_EACH);
  expect([...done.values()].every((c) => c === 1)).toBe(true);
  const check = await Wire.connect(sidecars[0]!.port);
  const s = yamlMap(await check.cmd('stats'));
  for (const k of ['current-jobs-ready', 'current-jobs-reserved', 'current-jobs-delayed', 'current-jobs-buried']) expect([k, s[k]]).toEqual([k, '0']);
  expect(s['total-jobs']).toBe(String(PRODUCERS * JOBS_EACH));
  check.close();
}, 60_000);
