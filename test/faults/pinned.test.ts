// What the fault suite found under load, pinned here without load, one exact
// sequence each (protocol/PROTOCOL.md, "Errors" and "Time"):
// - INTERNAL_ERROR means the command did not take effect;
// - a closed connection's reservations go back to ready (once Redis answers), not after their TTR;
// - SIGTERM: a blocked reserve ends without a reply, and only Redis calls in flight
//   (or a client too slow to read) hold the stop.
import { expect, it } from 'vitest';
import { Wire, yamlMap } from '../helpers/wire.js';
import { CuttableProxy, FaultRedis, SpawnedSidecar } from './processes.js';
import { cleanupAfterEach } from './cleanup.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const cleanup = cleanupAfterEach();

it('a connection closed while Redis is down hands its reserved job back once Redis is back (not after the TTR)', async () => {
  const redis = await FaultRedis.start();
  cleanup.push(() => redis.stop());
  const sidecar = await SpawnedSidecar.start('A', redis.url, 'pinned');
  cleanup.push(() => sidecar.stop());
  const a = await Wire.connect(sidecar.port);
  cleanup.push(() => a.close());
  expect(await a.cmd('put 0 0 120 1\r\nx')).toBe('INSERTED 1');
  expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nx');
  await redis.kill9();
  a.close(); // its reservation cannot go back now: Redis is down
  await sleep(300);
  await redis.launch(); // the same port and folder: the AOF (fsync always) has the job, reserved
  const b = await Wire.connect(sidecar.port);
  cleanup.push(() => b.close());
  // The TTR is 120 s: within this wait the job comes back only if the close handed it back.
  const reply = await b.cmd('reserve-with-timeout 15', 30_000);
  const state = reply === 'TIMED_OUT' ? yamlMap(await b.cmd('stats-job 1')).state : 'reserved by b';
  expect({ reply, state, sidecarLog: sidecar.warningSummary() }).toMatchObject({ reply: 'RESERVED 1 1\nx' });
}, 60_000);

it('a put whose Redis link breaks after Redis ran it, before its reply came back, is not answered INTERNAL_ERROR', async () => {
  const redis = await FaultRedis.start();
  cleanup.push(() => redis.stop());
  const proxy = await CuttableProxy.start(redis.port);
  cleanup.push(() => proxy.close());
  const sidecar = await SpawnedSidecar.start('B', proxy.url, 'pinned');
  cleanup.push(() => sidecar.stop());
  const b = await Wire.connect(sidecar.port);
  cleanup.push(() => b.close());
  expect(await b.cmd('put 0 0 60 5\r\nfirst')).toBe('INSERTED 1');
  proxy.muteReplies(); // Redis runs what the sidecar sends; the replies are lost
  b.send('put 0 0 60 6\r\nsecond\r\n');
  await sleep(500); // well within --redis-timeout-ms (2 s)
  proxy.cut(); // the link breaks with the put's call in flight
  let reply: string;
  try {
    reply = await b.line(10_000);
  } catch {
    reply = '(connection closed, no reply)';
  }
  proxy.restore();
  // What Redis holds, asked through a sidecar that talks to it directly.
  const direct = await SpawnedSidecar.start('A', redis.url, 'pinned');
  cleanup.push(() => direct.stop());
  const a = await Wire.connect(direct.port);
  cleanup.push(() => a.close());
  const stored = await a.cmd('peek 2');
  expect(stored, 'the sequence did what it means to: Redis ran the put').toBe('FOUND 2 6\nsecond');
  // INTERNAL_ERROR promises the put did not take effect; the job is there, so the reply must not be it.
  expect(reply, 'the reply to a put that Redis stored').not.toBe('INTERNAL_ERROR');
}, 60_000);

it('SIGTERM with a blocked reserve whose attempt is in flight stops once Redis answers, not after the grace period', async () => {
  const redis = await FaultRedis.start();
  cleanup.push(() => redis.stop());
  // A grace period far longer than this test waits: only something that never settles reaches it.
  const sidecar = await SpawnedSidecar.start('A', redis.url, 'pinned', ['--shutdown-grace-ms', '120000']);
  cleanup.push(() => sidecar.signal('SIGKILL'));
  const a = await Wire.connect(sidecar.port);
  cleanup.push(() => a.close());
  expect(await a.cmd('watch pinned')).toBe('WATCHING 2');
  redis.pause(); // Redis stalls ...
  cleanup.push(() => redis.resume());
  a.send('reserve-with-timeout 10\r\n'); // ... with this reserve's attempt in flight
  await sleep(200);
  const exited = sidecar.signal('SIGTERM', 600_000);
  await sleep(300);
  redis.resume(); // the attempt comes back (nothing ready) 300 ms into the stop
  const outcome = await Promise.race([exited.then((code) => `exited ${code}`), sleep(30_000).then(() => 'still running after 30 s')]);
  expect(outcome).toBe('exited 0');
}, 60_000);
