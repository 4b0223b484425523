// The drill for put-with: producers put through links that are cut every few
// seconds, workers on another sidecar take every job; then every job is
// accounted for. Each cut first mutes the link's replies for a moment, so puts
// are stored whose INSERTED never arrives: their outcome is unknown to the
// producer. Rounds alternate between the producers' link to sidecar A and A's
// link to Redis (A then closes the connections whose puts it cannot vouch for).
//
// Producers with keys (the Node client under clients/ sends a put-with whose
// reply was lost again by itself, with its key) must show every job delivered
// exactly once: 0 lost, 0 duplicated. Plain producers in the same run, which
// send a lost put again too (not sending it would lose the job whenever it was
// not stored), show the duplicates plain puts cannot avoid.
//
//   npx vitest run test/faults/retried-puts.test.ts            (CI size)
//   FAULTS_FULL=1 npx vitest run test/faults/retried-puts.test.ts
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConnectionError, InternalError, connect, type Client } from '../../clients/node/src/index.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { FULL } from './load.js';
import { CuttableProxy } from './processes.js';

const RUN_MS = FULL ? 60_000 : 12_000;
const PRODUCERS = FULL ? 6 : 3; // of each kind
const WORKERS = FULL ? 8 : 4;
/** A cut every 2-3 s: replies muted for 150 ms, then every link reset and refused for 300 ms. */
const CUT_EVERY_MS = [2000, 3000] as const;
const MUTE_MS = 150;
const DOWN_MS = 300;
const TUBE = 'drill';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let redis: TestRedis;
let A: TestSidecar;
let B: TestSidecar;
let clientLink: CuttableProxy;
let redisLink: CuttableProxy;

beforeAll(async () => {
  redis = await startRedis();
  redisLink = await CuttableProxy.start(redis.port);
  const prefix = uniquePrefix();
  A = await startRedstalk({ redisUrl: redisLink.url, prefix });
  B = await startRedstalk({ redisUrl: redis.url, prefix });
  clientLink = await CuttableProxy.start(A.port);
});

afterAll(async () => {
  await clientLink?.close();
  await A?.stop();
  await B?.stop();
  await redisLink?.close();
  await redis?.stop();
});

/** What one kind of producer did. */
interface Tally {
  /** Puts answered (INSERTED, or DUPLICATE for a retried put-with): marker -> id. */
  acked: Map<string, number>;
  /** Plain puts whose reply was lost and that were sent again (keyed ones the client sends again itself). */
  resent: number;
  /** Puts answered INTERNAL_ERROR (Redis cut off: nothing stored, the reply says so), sent again. */
  refused: number;
  /** put-with answered DUPLICATE: the lost attempt had stored the job. */
  duplicateReplies: number;
  /** Puts given up (the client's retries ran out). */
  givenUp: number;
}

const tally = (): Tally => ({ acked: new Map(), resent: 0, refused: 0, duplicateReplies: 0, givenUp: 0 });

async function producerClient(): Promise<Client> {
  for (;;) {
    try {
      const c = await connect({ port: clientLink.port, timeoutMs: 2000, retry: { attempts: 50, baseMs: 50, maxMs: 500, replyTimeoutMs: 3000 } });
      await c.use(TUBE);
      return c;
    } catch {
      await sleep(50);
    }
  }
}

/** A put answered INTERNAL_ERROR stored nothing (the reply says so): the same put again, after a moment. */
async function unrefused<T>(t: Tally, put: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await put();
    } catch (err) {
      if (!(err instanceof InternalError)) throw err;
      t.refused++;
      await sleep(10);
    }
  }
}

/** Puts with keys until `until`: the client resends a put-with whose reply was lost. */
async function keyedProducer(p: number, until: number, t: Tally): Promise<void> {
  let c = await producerClient();
  for (let seq = 0; Date.now() < until; seq++) {
    const marker = `keyed|${p}|${seq}`;
    try {
      const r = await unrefused(t, () => c.putWith(marker, { key: `k-${p}-${seq}`, ttr: 120 }));
      t.acked.set(marker, r.id);
      if (r.duplicate) t.duplicateReplies++;
    } catch {
      t.givenUp++;
      c.close();
      c = await producerClient();
    }
  }
  c.close();
}

/** Plain puts until `until`: a put whose reply was lost is put again on a new connection (at least once). */
async function plainProducer(p: number, until: number, t: Tally): Promise<void> {
  let c = await producerClient();
  for (let seq = 0; Date.now() < until; seq++) {
    const marker = `plain|${p}|${seq}`;
    for (;;) {
      try {
        t.acked.set(marker, await unrefused(t, () => c.put(marker, { ttr: 120 })));
        break;
      } catch (err) {
        if (!(err instanceof ConnectionError)) throw err;
        t.resent++;
        c.close();
        c = await producerClient();
      }
    }
  }
  c.close();
}

/** Takes jobs on B until told to stop: marker -> the ids it came under. */
async function worker(delivered: Map<string, Set<number>>, stop: { now: boolean }): Promise<void> {
  const c = await connect({ port: B.port });
  await c.watch(TUBE);
  await c.ignore('default');
  while (!stop.now) {
    const job = await c.reserveWithTimeout(1).catch(() => null);
    if (!job) continue;
    const marker = job.body.toString();
    const ids = delivered.get(marker) ?? new Set<number>();
    ids.add(job.id);
    delivered.set(marker, ids);
    await c.delete(job.id);
  }
  c.close();
}

async function nemesis(until: number): Promise<{ clientCuts: number; redisCuts: number }> {
  let round = 0;
  while (Date.now() + CUT_EVERY_MS[1] < until) {
    await sleep(CUT_EVERY_MS[0] + Math.random() * (CUT_EVERY_MS[1] - CUT_EVERY_MS[0]));
    const link = round++ % 2 === 0 ? clientLink : redisLink;
    link.muteReplies();
    await sleep(MUTE_MS);
    link.cut();
    await sleep(DOWN_MS);
    link.restore();
  }
  return { clientCuts: clientLink.cuts, redisCuts: redisLink.cuts };
}

function account(t: Tally, delivered: Map<string, Set<number>>, kind: string) {
  const mine = [...delivered].filter(([marker]) => marker.startsWith(`${kind}|`));
  const lost = [...t.acked.keys()].filter((m) => !delivered.has(m));
  const duplicated = mine.filter(([, ids]) => ids.size > 1);
  return { acked: t.acked.size, delivered: mine.length, lost: lost.length, duplicated: duplicated.length, lostList: lost.slice(0, 10) };
}

it(`keyed puts through cut links: every job exactly once; plain puts show duplicates (${FULL ? 'full' : 'CI'} size)`, async () => {
  const keyed = tally();
  const plain = tally();
  const delivered = new Map<string, Set<number>>();
  const stop = { now: false };
  const until = Date.now() + RUN_MS;
  const workers = Array.from({ length: WORKERS }, () => worker(delivered, stop));
  const [cuts] = await Promise.all([
    nemesis(until),
    ...Array.from({ length: PRODUCERS }, (_, p) => keyedProducer(p, until, keyed)),
    ...Array.from({ length: PRODUCERS }, (_, p) => plainProducer(p, until, plain)),
  ]);
  // Drain: every acknowledged job delivered, and nothing left in the tube.
  const check = await connect({ port: B.port });
  const deadline = Date.now() + 30_000;
  const allIn = () => [...keyed.acked.keys(), ...plain.acked.keys()].every((m) => delivered.has(m));
  while (Date.now() < deadline && !(allIn() && (await check.statsTube(TUBE))['current-jobs-ready'] === 0)) await sleep(100);
  await sleep(300);
  stop.now = true;
  await Promise.all(workers);
  check.close();

  const k = account(keyed, delivered, 'keyed');
  const p = account(plain, delivered, 'plain');
  console.log([
    '',
    `put-with drill: ${RUN_MS / 1000} s, ${PRODUCERS} keyed + ${PRODUCERS} plain producers through a cut link, ${WORKERS} workers on another sidecar;`,
    `  cuts: ${cuts.clientCuts} of the producers' link, ${cuts.redisCuts} of the sidecar's Redis link (each after ${MUTE_MS} ms of muted replies)`,
    `  keyed: acked ${k.acked}, delivered ${k.delivered}, lost ${k.lost}, duplicated ${k.duplicated}; DUPLICATE replies to resent puts ${keyed.duplicateReplies}, `
      + `INTERNAL_ERROR (sent again) ${keyed.refused}, given up ${keyed.givenUp}`,
    `  plain: acked ${p.acked}, delivered ${p.delivered}, lost ${p.lost}, duplicated ${p.duplicated}; puts sent again after a lost reply ${plain.resent}`
      + ` (${p.duplicated} had been stored: doubled; ${plain.resent - p.duplicated} had not: lost, had they not been sent again); INTERNAL_ERROR (sent again) ${plain.refused}`,
  ].join('\n'));
  expect(k.lostList).toEqual([]);
  expect(k.duplicated).toBe(0);
  expect(keyed.givenUp).toBe(0);
  // The drill did what it is for: lost replies of stored puts, which a keyed retry found stored...
  expect(keyed.duplicateReplies).toBeGreaterThan(0);
  // ...and which plain puts, sent again, doubled.
  expect(p.lost).toBe(0);
  expect(p.duplicated).toBeGreaterThan(0);
}, RUN_MS + 120_000);
