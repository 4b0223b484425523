/**
 * jackd 2.x (promise API, ships TS types) against redstalk and, as a reference, the real
 * beanstalkd: a producer/worker scenario used the way jackd's README shows it.
 *
 * What jackd cannot do / quirks (noted, not faked):
 * - Binary bodies cannot be sent as given. The README says "Passing in a Buffer will send
 *   the payload as-is", but put() in 2.2.2 checks `typeof body === 'object'` first, which
 *   is true for a Buffer, so a Buffer is sent as its JSON form ({"type":"Buffer","data":[...]}).
 *   Only strings go out unchanged (UTF-8 encoded), so job B's "binary" body here keeps the
 *   NULs and CRLFs but only uses 7-bit bytes (ASCII_BINARY_BODY). Received payloads are raw
 *   Buffers, so reading arbitrary bytes works.
 * - No YAML parsing on purpose: stats/stats-job/stats-tube/list-tubes return the raw YAML
 *   text and the README leaves parsing to the caller (it suggests the `yaml` package, which
 *   is not a devDependency here), so the text goes through the minimal reader in common.ts.
 * - Its .d.ts gives stats/listTubes/listTubesWatched a bogus `jobId` parameter; they are
 *   called without one (the command string ignores it anyway).
 * - pauseTube() writes `pause-tube <tube> <delay>` without the trailing \r\n, so the
 *   command never completes on any server; it is not exercised.
 * - Errors are thrown as `Error('<REPLY>')` (e.g. TIMED_OUT, NOT_FOUND, NOT_IGNORED);
 *   yaml commands answering NOT_FOUND throw InvalidResponseError("Unexpected response: NOT_FOUND").
 * - Job ids are strings.
 */
import { createRequire } from 'node:module';
import type { JackdClient } from 'jackd';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ASCII_BINARY_BODY, COMPETE_JOBS, DEFAULT_TUBE_JOB, HOST, RESERVE_ORDER, TARGETS, TTR, asUtf8String,
  deliveryProblems, scenario, waitFor, within, yamlList, yamlMap, type RunningServer, JobNames, compete,
  type CompetingWorker, expectScenarioEnd,
} from './common.js';

// jackd's CommonJS entry does `module.exports = JackdClient`, but its .d.ts only declares
// `export default`, so under NodeNext an ESM default import type-checks as the module
// namespace. Load it the way the README does: `const Jackd = require('jackd')`.
const Jackd = createRequire(import.meta.url)('jackd') as typeof JackdClient;
const S = scenario(ASCII_BINARY_BODY);
const BINARY_BODY = S.spec('B').body;
/** jackd's `Job` ({ id: string; payload: Buffer | string }) is not exported from its index. */
type Job = Awaited<ReturnType<JackdClient['reserve']>>;

type NoArgYaml = () => Promise<string>;
const stats = (c: JackdClient) => (c.stats as unknown as NoArgYaml).call(c);
const listTubes = (c: JackdClient) => (c.listTubes as unknown as NoArgYaml).call(c);
const listTubesWatched = (c: JackdClient) => (c.listTubesWatched as unknown as NoArgYaml).call(c);

function payload(job: Job): Buffer {
  if (!Buffer.isBuffer(job.payload)) throw new Error(`expected a Buffer payload, got ${typeof job.payload}`);
  return job.payload;
}

async function closeClient(c: JackdClient): Promise<void> {
  if (c.socket.destroyed) return;
  const closed = new Promise((r) => c.socket.once('close', r));
  await c.disconnect(); // writes `quit` and ends the socket
  await within(2000, 'jackd close', closed).catch(() => c.socket.destroy());
}

describe.each(TARGETS)('jackd against $name', (target) => {
  describe.skipIf(!target.available)('producer/worker', () => {
    let server: RunningServer | undefined;
    const clients: JackdClient[] = [];

    beforeAll(async () => { server = await target.start(); });
    afterEach(async () => { await Promise.all(clients.splice(0).map(closeClient)); });
    afterAll(async () => { await server?.stop(); });

    async function connect(): Promise<JackdClient> {
      if (!server) throw new Error('server did not start');
      const c = new Jackd();
      clients.push(c);
      await c.connect({ host: HOST, port: server.port });
      return c;
    }

    it('runs the producer/worker scenario', async () => {
      const tube = 'jackd-scenario';
      const producer = await connect();
      const worker = await connect();

      const names = new JobNames<string>();
      const { idOf, nameOf } = names;
      const id = (name: string): string => names.id(name);
      const jobStats = async (name: string) => yamlMap(await producer.statsJob(id(name)));
      const expectBody = (job: Job, name: string) =>
        expect(payload(job).equals(S.spec(name).body), `body of job ${name} intact`).toBe(true);

      // A job in `default`, more urgent than all others: the worker ignores default and must never get it.
      const zId = await producer.put(asUtf8String(DEFAULT_TUBE_JOB.body), { priority: DEFAULT_TUBE_JOB.pri, ttr: TTR });

      // --- producer ---
      expect(await producer.use(tube)).toBe(tube);
      expect(await producer.listTubeUsed()).toBe(tube);
      for (const j of S.jobs) {
        // strings, not Buffers: see the header comment
        const jobId = await producer.put(asUtf8String(j.body), { priority: j.pri, delay: j.delay, ttr: TTR });
        expect(jobId).toMatch(/^\d+$/);
        names.add(j.name, jobId);
      }
      expect(new Set(idOf.values()).size).toBe(S.jobs.length);

      // peek-* look at the used tube. D (pri 1) is still delayed, so B (pri 5) is next ready.
      const nextReady = await producer.peekReady();
      expect(nextReady.id).toBe(id('B'));
      expect(payload(nextReady).equals(BINARY_BODY)).toBe(true);
      const nextDelayed = await producer.peekDelayed();
      expect(nextDelayed.id).toBe(id('D'));
      expectBody(nextDelayed, 'D');
      await expect(producer.peekBuried()).rejects.toThrow(/^NOT_FOUND$/);

      expect(await jobStats('D')).toMatchObject({ id: Number(id('D')), tube, state: 'delayed', pri: 1, delay: 1, ttr: TTR, reserves: 0 });
      expect(yamlMap(await producer.statsTube(tube))).toMatchObject({
        name: tube, 'current-jobs-urgent': 5, 'current-jobs-ready': 5, 'current-jobs-reserved': 0,
        'current-jobs-delayed': 1, 'current-jobs-buried': 0, 'total-jobs': 6, 'current-using': 1,
      });
      expect(yamlList(await listTubes(producer))).toEqual(expect.arrayContaining(['default', tube]));

      // --- worker ---
      expect(await worker.watch(tube)).toBe(2);
      expect(await worker.ignore('default')).toBe(1);
      await expect(worker.ignore(tube)).rejects.toThrow(/^NOT_IGNORED$/);
      expect(yamlList(await listTubesWatched(worker))).toEqual([tube]);
      expect(await worker.listTubeUsed()).toBe('default');

      // Once D's 1 s delay has passed, all six come out in priority order, bodies intact.
      await waitFor('the delayed job to become ready', async () => (await jobStats('D')).state === 'ready');
      const reserved: Job[] = [];
      for (let i = 0; i < S.jobs.length; i++) reserved.push(await within(5000, 'reserve', worker.reserve()));
      expect(reserved.map((j) => nameOf.get(j.id))).toEqual(RESERVE_ORDER);
      for (const j of reserved) expectBody(j, nameOf.get(j.id) ?? '?');
      expect(await jobStats('A')).toMatchObject({ state: 'reserved', pri: 10, reserves: 1, tube });
      const peeked = await producer.peek(id('F')); // peek <id> sees reserved jobs too
      expectBody(peeked, 'F');

      // delete some
      await worker.delete(id('D'));
      await worker.delete(id('A'));
      await expect(producer.peek(id('A'))).rejects.toThrow(/^NOT_FOUND$/);
      await expect(producer.statsJob(id('A'))).rejects.toThrow(/NOT_FOUND/);
      await expect(worker.touch(id('A'))).rejects.toThrow(/^NOT_FOUND$/);
      await expect(worker.delete(id('A'))).rejects.toThrow(/^NOT_FOUND$/);

      // bury E with a new priority, then kick it back (kick works on the producer's used tube)
      await worker.bury(id('E'), 7);
      expect(await jobStats('E')).toMatchObject({ state: 'buried', pri: 7, buries: 1 });
      const buried = await producer.peekBuried();
      expect(buried.id).toBe(id('E'));
      expectBody(buried, 'E');
      expect(await producer.kick(10)).toBe(1);
      expect(await jobStats('E')).toMatchObject({ state: 'ready', pri: 7, kicks: 1 });

      // touch C: still reserved, deadline pushed out to a full TTR
      await worker.touch(id('C'));
      const c = await jobStats('C');
      expect(c.state).toBe('reserved');
      expect(c['time-left']).toBeGreaterThanOrEqual(TTR - 2);
      expect(c['time-left']).toBeLessThanOrEqual(TTR);

      // E is now the only ready job in the watched tube
      const again = await within(5000, 'reserve', worker.reserve());
      expect(again.id).toBe(id('E'));
      expectBody(again, 'E');
      expect(await jobStats('E')).toMatchObject({ state: 'reserved', reserves: 2 });
      await worker.delete(id('E'));

      // release B with a new priority and a 1 s delay
      await worker.release(id('B'), { priority: 3, delay: 1 });
      expect(await jobStats('B')).toMatchObject({ state: 'delayed', pri: 3, delay: 1, releases: 1 });
      const delayedB = await producer.peekDelayed();
      expect(delayedB.id).toBe(id('B'));
      expect(payload(delayedB).equals(BINARY_BODY)).toBe(true);
      await worker.delete(id('C'));
      await worker.delete(id('F'));

      // B comes back once its delay is over
      const b = await worker.reserveWithTimeout(5);
      expect(b.id).toBe(id('B'));
      expect(payload(b).equals(BINARY_BODY)).toBe(true);
      expect(await jobStats('B')).toMatchObject({ state: 'reserved', pri: 3, reserves: 2, releases: 1 });
      await worker.delete(id('B'));

      // Nothing left in the watched tube (Z sits in the ignored default tube): the reserve times out.
      const t0 = Date.now();
      await expect(worker.reserveWithTimeout(1)).rejects.toThrow(/^TIMED_OUT$/);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);

      expect(yamlMap(await producer.statsJob(zId))).toMatchObject({ tube: 'default', state: 'ready', reserves: 0 });
      await producer.delete(zId); // any connection may delete a ready job

      expectScenarioEnd(yamlMap(await producer.statsTube(tube)), yamlMap(await stats(producer)), tube);
    });

    it('two competing workers get every job exactly once', async () => {
      const tube = 'jackd-compete';
      const producer = await connect();
      const workers = [await connect(), await connect()];
      for (const w of workers) {
        expect(await w.watch(tube)).toBe(2);
        expect(await w.ignore('default')).toBe(1);
      }
      await producer.use(tube);

      const { putIds, got, sent, received } = await compete(
        async (i) => {
          const body = `compete job #${i}`;
          return { id: await producer.put(body, { priority: i % 3, ttr: TTR }), payload: body };
        },
        workers.map((w): CompetingWorker => ({
          async reserve() {
            try {
              const job = await w.reserveWithTimeout(1);
              return { id: job.id, payload: payload(job).toString() };
            } catch (e) {
              if (!/^TIMED_OUT$/.test((e as Error).message)) throw e;
              return null;
            }
          },
          delete: async (jobId) => { await w.delete(jobId); },
        })),
      );

      expect(deliveryProblems(putIds, got)).toEqual([]);
      for (const jobId of putIds) expect(received.get(jobId), `body of job ${jobId}`).toBe(sent.get(jobId));
      for (const ids of got) expect(ids.length).toBeGreaterThan(0);
      expect(yamlMap(await producer.statsTube(tube))).toMatchObject({
        'total-jobs': COMPETE_JOBS, 'current-jobs-ready': 0, 'current-jobs-reserved': 0, 'cmd-delete': COMPETE_JOBS,
      });
    });
  });
});
