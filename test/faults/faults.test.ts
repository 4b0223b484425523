// The fault suite: producers and workers on two sidecars sharing one Redis,
// one fault injected under load per test, then the accounting: every job whose
// put was answered INSERTED must be delivered (reserved, body verified by its
// CRC-32) at least once. Each test prints its row; the summary table is printed
// once at the end. FAULTS_FULL=1 runs the longer load with more clients.
//
//   npx vitest run test/faults            (npm run test:faults)
//   FAULTS_FULL=1 npx vitest run test/faults
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { details, header, row, type Report } from './ledger.js';
import { FULL, promises, runLoad, SIZES, type Endpoint, type RunResult } from './load.js';
import { CuttableProxy, FaultRedis, SpawnedSidecar } from './processes.js';
import { cleanupAfterEach } from './cleanup.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A generous bound: the machine is shared and noisy; nothing here asserts on speed. */
const TEST_TIMEOUT = FULL ? 600_000 : 180_000;
/**
 * TTR of the jobs: far longer than a worker holds a job, so a redelivery by TTR
 * (job-timeouts) means a reservation was not handed back when it should have been.
 */
const TTR = 20;
/** How long a stall, a cut or a full Redis lasts. */
const FAULT_MS = 3000;

const reports: Report[] = [];
const cleanup = cleanupAfterEach();

afterAll(() => {
  if (!reports.length) return;
  const lines = [
    '',
    `Fault suite summary (${FULL ? 'full' : 'CI'} size: ${SIZES.producers} producers × ${SIZES.rate} puts/s, ${SIZES.workers} workers, ${SIZES.preMs} ms + fault + ${SIZES.postMs} ms of load, 2 sidecars, 1 Redis with appendfsync always)`,
    header(),
    ...reports.map(row),
    ...reports.flatMap((r) => r.notes.filter((n) => n.startsWith('FAILED')).map((n) => `  ${r.fault}: ${n}`)),
    'dup: jobs delivered more than once (ttr: the TTR ran out first; back: handed back early, its worker\'s connection closed; DEL: after a DELETED reply)',
    'errors-that-took-effect: put attempts answered with an error reply whose job was delivered later / all error replies to puts (PROTOCOL.md: neither OUT_OF_MEMORY nor INTERNAL_ERROR takes effect);',
    '  no reply: puts whose connection closed before the reply, delivered later / all of them (outcome unknown by nature)',
    '',
  ];
  console.log(lines.join('\n'));
});

interface Stack { redis: FaultRedis; A: SpawnedSidecar; B: SpawnedSidecar; proxy: CuttableProxy | null; endpoints: Endpoint[] }

/** A Redis (AOF, fsync always) and two sidecars on it as processes; with viaProxy, B talks to Redis through a cuttable proxy. */
async function stack(opts: { viaProxy?: boolean } = {}): Promise<Stack> {
  const redis = await FaultRedis.start();
  cleanup.push(() => redis.stop());
  const proxy = opts.viaProxy ? await CuttableProxy.start(redis.port) : null;
  if (proxy) cleanup.push(() => proxy.close());
  const prefix = `f${randomBytes(4).toString('hex')}`;
  const started = await Promise.allSettled([
    SpawnedSidecar.start('A', redis.url, prefix),
    SpawnedSidecar.start('B', proxy ? proxy.url : redis.url, prefix),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanup.push(() => s.value.stop());
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const [A, B] = started.map((s) => (s as PromiseFulfilledResult<SpawnedSidecar>).value) as [SpawnedSidecar, SpawnedSidecar];
  const endpoints = [A, B].map((s) => ({ name: s.name, port: s.port, alive: () => s.alive }));
  return { redis, A, B, proxy, endpoints };
}

/**
 * The promises every fault must keep (protocol/PROTOCOL.md, "Errors" and "Time"):
 * an acknowledged job is delivered, intact, under its id; an acknowledged delete
 * stays done; OUT_OF_MEMORY stored nothing and INTERNAL_ERROR did not take effect;
 * a closed connection's reservations (and a dead sidecar's, at its lease's end)
 * go back to ready, not after their TTR (the jobs' TTR, 20 s, is far longer than
 * any worker holds one); and the service comes back. Every check is evaluated,
 * printed with the row, then asserted together.
 */
function conclude(s: Stack, result: RunResult, extra: Array<[boolean, string]> = []): Report {
  const r = result.report;
  for (const sc of [s.A, s.B]) {
    const w = sc.warningSummary();
    if (w) r.notes.push(`sidecar ${sc.name} logged: ${w.slice(0, 400)}`);
    if (sc.exitCode !== undefined && sc.exitCode !== null && sc.exitCode !== 0) r.notes.push(`sidecar ${sc.name} exited with code ${sc.exitCode}`);
  }
  const checks: Array<[boolean, string]> = [
    ...promises(result, TTR),
    ...extra,
  ];
  const failed = checks.filter(([ok]) => !ok).map(([, what]) => what);
  for (const f of failed) r.notes.push(`FAILED: ${f}`);
  reports.push(r);
  console.log([header(), row(r), ...details(r)].join('\n'));
  expect(failed).toEqual([]);
  return r;
}

describe.sequential(`faults under load (${FULL ? 'full' : 'CI'} size)`, () => {
  it('1. SIGKILL of a sidecar: its clients go to the other one', async () => {
    const s = await stack();
    const result = await runLoad({
      fault: 'sidecar SIGKILL',
      endpoints: s.endpoints,
      ttrSec: TTR,
      inject: async (ctl) => {
        ctl.start();
        await s.A.signal('SIGKILL');
        ctl.end();
      },
    });
    conclude(s, result, [[s.A.exitSignal === 'SIGKILL', `sidecar A ended by ${s.A.exitSignal ?? s.A.exitCode}, not SIGKILL`]]);
  }, TEST_TIMEOUT);

  it('2. Redis kill -9, restarted on its AOF (appendfsync always)', async () => {
    const s = await stack();
    const result = await runLoad({
      fault: 'redis kill -9 + AOF',
      endpoints: s.endpoints,
      ttrSec: TTR,
      inject: async (ctl) => {
        ctl.start();
        const t0 = Date.now();
        await s.redis.kill9();
        await sleep(1000);
        const t = Date.now();
        await s.redis.launch();
        ctl.note(`redis down ${Date.now() - t0} ms (restart on its AOF took ${Date.now() - t} ms)`);
        ctl.end();
      },
    });
    conclude(s, result);
  }, TEST_TIMEOUT);

  it('3. Redis stalled: SIGSTOP for 3 s, then SIGCONT', async () => {
    const s = await stack();
    const result = await runLoad({
      fault: 'redis SIGSTOP 3 s',
      endpoints: s.endpoints,
      ttrSec: TTR,
      inject: async (ctl) => {
        ctl.start();
        s.redis.pause();
        try { await sleep(FAULT_MS); } finally { s.redis.resume(); }
        ctl.end();
      },
    });
    conclude(s, result);
  }, TEST_TIMEOUT);

  it('4. network cut between sidecar B and Redis for 3 s', async () => {
    const s = await stack({ viaProxy: true });
    const proxy = s.proxy!;
    const result = await runLoad({
      fault: 'net cut B<->redis 3 s',
      endpoints: s.endpoints,
      ttrSec: TTR,
      inject: async (ctl) => {
        ctl.start();
        proxy.cut();
        try { await sleep(FAULT_MS); } finally { proxy.restore(); }
        ctl.note(`proxy refused ${proxy.refused} connections during the cut`);
        ctl.end();
      },
    });
    conclude(s, result);
  }, TEST_TIMEOUT);

  it('5. Redis out of memory: maxmemory just below used memory, then raised; workers keep draining', async () => {
    const s = await stack();
    const admin = new Redis(s.redis.url, { maxRetriesPerRequest: 3 });
    cleanup.push(() => admin.disconnect());
    const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    const MARGIN = 32 * 1024;
    const limits: number[] = [];
    const result = await runLoad({
      fault: 'redis OOM',
      endpoints: s.endpoints,
      ttrSec: TTR,
      workersFromFault: true, // a backlog builds up first, for the workers to drain while Redis is full
      inject: async (ctl) => {
        let limit = (await used()) - MARGIN;
        await admin.config('SET', 'maxmemory', String(limit));
        ctl.start();
        limits.push(limit);
        try {
          // Keep it full: as the workers free memory, lower the limit again (just below what is used).
          const until = Date.now() + FAULT_MS;
          while (Date.now() < until) {
            await sleep(200);
            const u = await used();
            if (u < limit) {
              limit = u - MARGIN;
              await admin.config('SET', 'maxmemory', String(limit));
              limits.push(limit);
            }
          }
        } finally {
          await admin.config('SET', 'maxmemory', '0');
        }
        ctl.note(`maxmemory set ${limits.length} times, from ${limits[0]} down to ${limits.at(-1)} bytes`);
        ctl.end();
      },
    });
    // During the fault: what workers asked (reserve, delete) succeeded at least 90 % of the time.
    const during = result.ledger.ops.filter((o) => o.op !== 'put' && o.sentAt >= result.faultStart && o.sentAt <= result.faultEnd);
    const ok = during.filter((o) => ['RESERVED', 'TIMED_OUT', 'DEADLINE_SOON', 'DELETED'].includes(o.result));
    const reserved = during.filter((o) => o.result === 'RESERVED').length;
    const puts = result.ledger.ops.filter((o) => o.op === 'put' && o.sentAt >= result.faultStart && o.sentAt <= result.faultEnd);
    const refused = puts.filter((o) => o.result === 'OUT_OF_MEMORY').length;
    const failures = new Map<string, number>();
    for (const o of during) if (!ok.includes(o)) failures.set(`${o.op} ${o.result}`, (failures.get(`${o.op} ${o.result}`) ?? 0) + 1);
    result.report.notes.push(`during the fault: reserve/delete ${ok.length}/${during.length} succeeded (${reserved} RESERVED; failures: ${[...failures].map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}); puts refused OUT_OF_MEMORY ${refused}/${puts.length}`);
    conclude(s, result, [
      [refused > 0, 'the fault was not real: no put was refused OUT_OF_MEMORY'],
      [reserved > 0, 'workers reserved nothing while Redis was full'],
      [during.length > 0 && ok.length / during.length >= 0.9, `workers' reserves and deletes succeeded ${ok.length}/${during.length} during the fault (< 90 %)`],
    ]);
  }, TEST_TIMEOUT);

  it('6. SIGTERM of a sidecar under load: a graceful stop loses nothing and hands its reservations back', async () => {
    const s = await stack();
    let exitCode: number | null = null;
    const result = await runLoad({
      fault: 'sidecar SIGTERM',
      endpoints: s.endpoints,
      ttrSec: TTR,
      inject: async (ctl) => {
        ctl.start();
        const t0 = Date.now();
        exitCode = await s.A.signal('SIGTERM');
        ctl.note(`sidecar A exited with code ${exitCode} ${Date.now() - t0} ms after SIGTERM`);
        ctl.end();
      },
    });
    // Its reservations go back at the stop (checked with every fault: no TTR runs out).
    conclude(s, result, [[exitCode === 0, `sidecar A exited with ${exitCode} after SIGTERM, not 0`]]);
  }, TEST_TIMEOUT);
});
