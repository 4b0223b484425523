// The nemesis: faults drawn from a seed, at times overlapping, against two
// sidecars on one Redis under the fault suite's load, then a check of the whole
// history (load.ts promises: nothing acknowledged lost, no error reply that took
// effect, no delivery after DELETED, nothing back by its TTR, no reservation
// held by two open connections at once) and how long each job handed back took
// to be delivered again. Every sidecar reaches Redis through a proxy of its own
// (its link can be cut) and is reached by the clients through another (their
// links can be reset; a restarted sidecar's new port is put behind it).
//
//   npx vitest run test/faults/nemesis.test.ts             (CI size: 30 s of faults)
//   NEMESIS_SEED=1234 npx vitest run test/faults/nemesis.test.ts   (replay a seed)
//   FAULTS_FULL=1 NEMESIS_MS=1800000 npx vitest run test/faults/nemesis.test.ts   (full size, 30 min)
import { randomBytes, randomInt } from 'node:crypto';
import { expect, it } from 'vitest';
import { mulberry32 } from '../differential/random.js';
import { details, header, holds, row, ttrLapses, type TtrLapse } from './ledger.js';
import { FULL, promises, runLoad, SIZES, type Endpoint } from './load.js';
import { CuttableProxy, FaultRedis, SpawnedSidecar } from './processes.js';
import { cleanupAfterEach } from './cleanup.js';

const SEED = Number(process.env.NEMESIS_SEED ?? randomInt(2 ** 31));
/** How long faults are drawn for. */
const FAULTS_MS = Number(process.env.NEMESIS_MS ?? (FULL ? 300_000 : 30_000));
const TTR = 20;
/** The sidecars' lease (their default: 5 beats of --heartbeat-ms 1000). */
const LEASE_MS = 5000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const cleanup = cleanupAfterEach();

interface Side { name: string; sidecar: SpawnedSidecar; redisLink: CuttableProxy; clientLink: CuttableProxy }

it(`nemesis: seeded faults against two sidecars under load (seed ${SEED})`, async () => {
  console.log(`nemesis seed ${SEED} (replay: NEMESIS_SEED=${SEED} npx vitest run test/faults/nemesis.test.ts)`);
  const rand = mulberry32(SEED); // the same seed, the same faults in the same order
  const between = (lo: number, hi: number) => Math.round(lo + rand() * (hi - lo));
  const redis = await FaultRedis.start();
  cleanup.push(() => redis.stop());
  const prefix = `n${randomBytes(4).toString('hex')}`;
  const sides: Side[] = [];
  for (const name of ['A', 'B']) {
    const redisLink = await CuttableProxy.start(redis.port);
    cleanup.push(() => redisLink.close());
    const sidecar = await SpawnedSidecar.start(name, redisLink.url, prefix);
    const clientLink = await CuttableProxy.start(sidecar.port);
    cleanup.push(() => clientLink.close());
    const side = { name, sidecar, redisLink, clientLink };
    cleanup.push(() => side.sidecar.stop());
    sides.push(side);
  }
  const endpoints: Endpoint[] = sides.map((s) => ({ name: s.name, port: s.clientLink.port, alive: () => s.sidecar.alive }));
  const history: string[] = [];
  const badExits: string[] = [];
  const t0 = Date.now();
  const say = (s: string) => history.push(`${String(Date.now() - t0).padStart(6)} ms  ${s}`);

  /** A sidecar started again on its Redis proxy (tried again while Redis is away), then put behind its clients' proxy. */
  const restart = async (side: Side) => {
    for (;;) {
      try {
        side.sidecar = await SpawnedSidecar.start(side.name, side.redisLink.url, prefix);
        side.clientLink.retarget(side.sidecar.port);
        say(`${side.name} serving again`);
        return;
      } catch {
        await sleep(200);
      }
    }
  };
  type Fault = { resource: (side: Side) => string; run: (side: Side) => Promise<void> };
  /** A proxy's fault for 1-5 s (drawn from the seed), then restore(). */
  const linkFault = (resource: Fault['resource'], proxyOf: (s: Side) => CuttableProxy, what: (s: Side, ms: number) => string, begin: (p: CuttableProxy) => void): Fault => ({
    resource,
    run: async (s) => {
      const ms = between(1000, 5000);
      say(what(s, ms));
      const proxy = proxyOf(s);
      begin(proxy);
      await sleep(ms);
      proxy.restore();
    },
  });
  const faults: Fault[] = [
    { resource: (s) => s.name, run: async (s) => {
      say(`SIGKILL ${s.name}`);
      await s.sidecar.signal('SIGKILL');
      await sleep(between(200, 1500));
      await restart(s);
    } },
    { resource: (s) => s.name, run: async (s) => {
      say(`SIGTERM ${s.name}`);
      const code = await s.sidecar.signal('SIGTERM');
      if (code !== 0) badExits.push(`${s.name} exited ${code} after SIGTERM`);
      await restart(s);
    } },
    linkFault((s) => `link ${s.name}`, (s) => s.redisLink, (s, ms) => `cut ${s.name}'s link to Redis for ${ms} ms`, (p) => p.cut()),
    linkFault((s) => `clients ${s.name}`, (s) => s.clientLink, (s, ms) => `reset the clients' links to ${s.name}, refused for ${ms} ms`, (p) => p.cut()),
    { resource: () => 'redis', run: async () => {
      const ms = between(1000, 4000);
      say(`SIGSTOP Redis for ${ms} ms`);
      redis.pause();
      await sleep(ms);
      redis.resume();
    } },
    { resource: () => 'redis', run: async () => {
      say('kill -9 Redis, restarted on its AOF');
      await redis.kill9();
      await sleep(between(200, 1500));
      await redis.launch();
    } },
    linkFault((s) => `clients ${s.name}`, (s) => s.clientLink, (s, ms) => `hold the bytes of the clients' links to ${s.name} for ${ms} ms`, (p) => p.hold()),
  ];

  const result = await runLoad({
    fault: `nemesis ${SEED}`,
    endpoints,
    ttrSec: TTR,
    // Faults slow the workers more than the producers: the backlog they leave may take as long to drain.
    sizes: { ...SIZES, postMs: 3000, drainMs: Math.max(SIZES.drainMs, FAULTS_MS) },
    inject: async (ctl) => {
      ctl.start();
      const busy = new Set<string>();
      const running = new Set<Promise<void>>();
      while (Date.now() - t0 < FAULTS_MS) {
        const fault = faults[Math.floor(rand() * faults.length)]!;
        const side = sides[Math.floor(rand() * sides.length)]!;
        const resource = fault.resource(side);
        if (busy.has(resource)) { await sleep(100); continue; }
        busy.add(resource);
        const p = fault.run(side).finally(() => { busy.delete(resource); running.delete(p); });
        running.add(p);
        if (rand() < 0.6) await p; // else the next fault overlaps this one
        await sleep(between(200, 2000));
      }
      await Promise.all(running);
      say('faults over');
      ctl.end();
    },
  });

  const { comebackMs } = holds(result.ledger, TTR);
  const sorted = [...comebackMs].sort((a, b) => a - b);
  const pct = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : '-');
  result.report.notes.push(`handed back early, then delivered again: ${sorted.length} (ms from the end of the hold: p50 ${pct(0.5)}, p99 ${pct(0.99)}, max ${sorted.at(-1) ?? '-'})`);
  // A backlog (deliveries going on to the end) tells apart from a stall (deliveries stopped).
  const perTen = new Map<number, number>();
  for (const list of result.ledger.deliveries.values()) for (const d of list) perTen.set(Math.floor((d.at - t0) / 10_000), (perTen.get(Math.floor((d.at - t0) / 10_000)) ?? 0) + 1);
  result.report.notes.push(`deliveries per 10 s from the start: ${[...perTen].sort(([a], [b]) => a - b).map(([k, n]) => `${k * 10}s:${n}`).join(' ')}`);
  // Jobs that came back by their TTR, with when (from the start) each delivery was and how its hold ended: to set beside the faults.
  for (const dup of result.report.dups.filter((d) => d.causes.some((c) => c.startsWith('ttr')))) {
    const list = result.ledger.deliveries.get(dup.marker) ?? [];
    result.report.notes.push(`back by its TTR: #${dup.id}: ${list.map((d) => `worker ${d.worker} via ${d.via} at ${d.at - t0} ms, ${d.deleteOutcome} (${d.deleteReplies.join(',')})${d.endedAt ? ` until ${d.endedAt - t0} ms` : ''}`).join('; ')}`);
  }
  // A TTR that ran out while Redis never answered for a lease and a second (a dead
  // sidecar's jobs come back within that) between the end of the hold and the TTR's end
  // could not have been handed back first: Redis was down longer than the TTR.
  const excused = ({ prev }: TtrLapse) => redis.longestAnswering(prev.endedAt ?? prev.at, prev.at + TTR * 1000) < LEASE_MS + 1000;
  for (const lapse of ttrLapses(result.ledger, TTR)) {
    const { prev } = lapse;
    result.report.notes.push(`TTR ran out on #${prev.id}: Redis answered at most ${redis.longestAnswering(prev.endedAt ?? prev.at, prev.at + TTR * 1000)} ms at a stretch from the hold's end to the TTR's end (${excused(lapse) ? 'excused' : 'stranded'})`);
  }
  const checks: Array<[boolean, string]> = [...promises(result, TTR, excused), [badExits.length === 0, badExits.join('; ')]];
  const failed = checks.filter(([ok]) => !ok).map(([, what]) => what);
  for (const f of failed) result.report.notes.push(`FAILED: ${f}`);
  console.log([`nemesis seed ${SEED}, ${FAULTS_MS} ms of faults:`, ...history, header(), row(result.report), ...details(result.report)].join('\n'));
  expect(failed, `nemesis seed ${SEED} (replay: NEMESIS_SEED=${SEED})`).toEqual([]);
}, 2 * FAULTS_MS + 180_000);
