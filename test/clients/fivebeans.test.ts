/**
 * fivebeans 1.5 (callback API) against redstalk and, as a reference, the real beanstalkd.
 * The scenario uses FiveBeansClient exactly as its README shows (method names = protocol
 * commands with `_`, `destroy` for delete, node-style callbacks whose error is the reply
 * word); the competing-workers test uses the library's own FiveBeansWorker with two
 * instances and a handler, the way its README sets one up.
 *
 * Library facts the assertions rely on (noted, not faked):
 * - Every reply argument comes back as a string: job ids, `watch`/`ignore` counts and the
 *   `kick` count ('1', not 1).
 * - YAML replies (stats*, list-tubes*) are parsed by the library with js-yaml 3.6.
 * - There is no callback for `quit` (the server sends no reply); clients are closed with end().
 * - Payloads may be Buffers and come back as Buffers, so the raw binary body is used.
 * - FiveBeansWorker only runs JSON jobs of the form {type, payload}; it deletes on
 *   'success', buries with LOWEST_PRIORITY on failure. The README's TODO admits it does not
 *   handle DEADLINE_SOON.
 */
import fivebeans from 'fivebeans';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BINARY_BODY, COMPETE_JOBS, DEFAULT_TUBE_JOB, HOST, RESERVE_ORDER, TARGETS, TTR, deliveryProblems, scenario,
  waitFor, within, type RunningServer, JobNames, expectScenarioEnd,
} from './common.js';

type FiveBeansClient = InstanceType<typeof fivebeans.client>;
type FiveBeansWorker = InstanceType<typeof fivebeans.worker>;

const S = scenario(BINARY_BODY);

/** Turns one fivebeans callback call into a promise of its result arguments; rejects with Error(<reply word>). */
function call<R extends unknown[] = []>(start: (cb: (err: string | null, ...results: R) => void) => void): Promise<R> {
  return within(8000, 'fivebeans callback', new Promise<R>((resolve, reject) => {
    start((err, ...results) => (err ? reject(new Error(err)) : resolve(results)));
  }));
}

function closeClient(c: FiveBeansClient): Promise<void> {
  const s = c.stream;
  if (!s || s.destroyed) return Promise.resolve();
  const closed = new Promise<void>((r) => c.once('close', () => r()));
  c.end();
  return within(2000, 'fivebeans close', closed).catch(() => { s.destroy(); });
}

describe.each(TARGETS)('fivebeans against $name', (target) => {
  describe.skipIf(!target.available)('producer/worker', () => {
    let server: RunningServer | undefined;
    const clients: FiveBeansClient[] = [];
    const socketErrors: unknown[] = [];

    beforeAll(async () => { server = await target.start(); });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map(closeClient));
      expect(socketErrors).toEqual([]);
    });
    afterAll(async () => { await server?.stop(); });

    async function connect(): Promise<FiveBeansClient> {
      if (!server) throw new Error('server did not start');
      const c = new fivebeans.client(HOST, server.port);
      clients.push(c);
      await new Promise<void>((resolve, reject) => {
        c.once('connect', () => resolve()).once('error', reject);
        c.connect();
      });
      c.on('error', (e: unknown) => socketErrors.push(e));
      return c;
    }

    it('runs the producer/worker scenario', async () => {
      const tube = 'fivebeans-scenario';
      const producer = await connect();
      const worker = await connect();

      const names = new JobNames<string>();
      const { idOf, nameOf } = names;
      const id = (name: string): string => names.id(name);
      const jobStats = async (name: string) => (await call<[Record<string, unknown>]>((cb) => producer.stats_job(id(name), cb)))[0];
      const expectBody = (payload: Buffer, name: string) =>
        expect(Buffer.isBuffer(payload) && payload.equals(S.spec(name).body), `body of job ${name} intact`).toBe(true);

      // A job in `default`, more urgent than all others: the worker ignores default and must never get it.
      const [zId] = await call<[string]>((cb) => producer.put(DEFAULT_TUBE_JOB.pri, 0, TTR, DEFAULT_TUBE_JOB.body, cb));

      // --- producer ---
      expect(await call<[string]>((cb) => producer.use(tube, cb))).toEqual([tube]);
      expect(await call<[string]>((cb) => producer.list_tube_used(cb))).toEqual([tube]);
      for (const j of S.jobs) {
        const [jobId] = await call<[string]>((cb) => producer.put(j.pri, j.delay, TTR, j.body, cb));
        expect(jobId).toMatch(/^\d+$/);
        names.add(j.name, jobId);
      }
      expect(new Set(idOf.values()).size).toBe(S.jobs.length);

      // peek_* look at the used tube. D (pri 1) is still delayed, so B (pri 5) is next ready.
      const [readyId, readyBody] = await call<[string, Buffer]>((cb) => producer.peek_ready(cb));
      expect(readyId).toBe(id('B'));
      expectBody(readyBody, 'B');
      const [delayedId, delayedBody] = await call<[string, Buffer]>((cb) => producer.peek_delayed(cb));
      expect(delayedId).toBe(id('D'));
      expectBody(delayedBody, 'D');
      await expect(call((cb) => producer.peek_buried(cb))).rejects.toThrow(/^NOT_FOUND$/);

      expect(await jobStats('D')).toMatchObject({ id: Number(id('D')), tube, state: 'delayed', pri: 1, delay: 1, ttr: TTR, reserves: 0 });
      const [tubeStats] = await call<[Record<string, unknown>]>((cb) => producer.stats_tube(tube, cb));
      expect(tubeStats).toMatchObject({
        name: tube, 'current-jobs-urgent': 5, 'current-jobs-ready': 5, 'current-jobs-reserved': 0,
        'current-jobs-delayed': 1, 'current-jobs-buried': 0, 'total-jobs': 6, 'current-using': 1,
      });
      const [tubes] = await call<[string[]]>((cb) => producer.list_tubes(cb));
      expect(tubes).toEqual(expect.arrayContaining(['default', tube]));

      // --- worker ---
      expect(await call<[string]>((cb) => worker.watch(tube, cb))).toEqual(['2']);
      expect(await call<[string]>((cb) => worker.ignore('default', cb))).toEqual(['1']);
      await expect(call((cb) => worker.ignore(tube, cb))).rejects.toThrow(/^NOT_IGNORED$/);
      expect(await call<[string[]]>((cb) => worker.list_tubes_watched(cb))).toEqual([[tube]]);
      expect(await call<[string]>((cb) => worker.list_tube_used(cb))).toEqual(['default']);

      // Once D's 1 s delay has passed, all six come out in priority order, bodies intact.
      await waitFor('the delayed job to become ready', async () => (await jobStats('D')).state === 'ready');
      const reserved: Array<[string, Buffer]> = [];
      for (let i = 0; i < S.jobs.length; i++) reserved.push(await call<[string, Buffer]>((cb) => worker.reserve(cb)));
      expect(reserved.map(([jobId]) => nameOf.get(jobId))).toEqual(RESERVE_ORDER);
      for (const [jobId, body] of reserved) expectBody(body, nameOf.get(jobId) ?? '?');
      expect(await jobStats('A')).toMatchObject({ state: 'reserved', pri: 10, reserves: 1, tube });
      const [, peekedF] = await call<[string, Buffer]>((cb) => producer.peek(id('F'), cb)); // peek <id> sees reserved jobs too
      expectBody(peekedF, 'F');

      // delete some
      await call((cb) => worker.destroy(id('D'), cb));
      await call((cb) => worker.destroy(id('A'), cb));
      await expect(call((cb) => producer.peek(id('A'), cb))).rejects.toThrow(/^NOT_FOUND$/);
      await expect(call((cb) => producer.stats_job(id('A'), cb))).rejects.toThrow(/^NOT_FOUND$/);
      await expect(call((cb) => worker.touch(id('A'), cb))).rejects.toThrow(/^NOT_FOUND$/);
      await expect(call((cb) => worker.destroy(id('A'), cb))).rejects.toThrow(/^NOT_FOUND$/);

      // bury E with a new priority, then kick it back (kick works on the producer's used tube)
      await call((cb) => worker.bury(id('E'), 7, cb));
      expect(await jobStats('E')).toMatchObject({ state: 'buried', pri: 7, buries: 1 });
      const [buriedId, buriedBody] = await call<[string, Buffer]>((cb) => producer.peek_buried(cb));
      expect(buriedId).toBe(id('E'));
      expectBody(buriedBody, 'E');
      expect(await call<[string]>((cb) => producer.kick(10, cb))).toEqual(['1']);
      expect(await jobStats('E')).toMatchObject({ state: 'ready', pri: 7, kicks: 1 });

      // touch C: still reserved, deadline pushed out to a full TTR
      await call((cb) => worker.touch(id('C'), cb));
      const c = await jobStats('C');
      expect(c.state).toBe('reserved');
      expect(c['time-left']).toBeGreaterThanOrEqual(TTR - 2);
      expect(c['time-left']).toBeLessThanOrEqual(TTR);

      // E is now the only ready job in the watched tube
      const [againId, againBody] = await call<[string, Buffer]>((cb) => worker.reserve(cb));
      expect(againId).toBe(id('E'));
      expectBody(againBody, 'E');
      expect(await jobStats('E')).toMatchObject({ state: 'reserved', reserves: 2 });
      await call((cb) => worker.destroy(id('E'), cb));

      // release B with a new priority and a 1 s delay
      await call((cb) => worker.release(id('B'), 3, 1, cb));
      expect(await jobStats('B')).toMatchObject({ state: 'delayed', pri: 3, delay: 1, releases: 1 });
      const [delayedB, delayedBBody] = await call<[string, Buffer]>((cb) => producer.peek_delayed(cb));
      expect(delayedB).toBe(id('B'));
      expectBody(delayedBBody, 'B');
      await call((cb) => worker.destroy(id('C'), cb));
      await call((cb) => worker.destroy(id('F'), cb));

      // B comes back once its delay is over
      const [bId, bBody] = await call<[string, Buffer]>((cb) => worker.reserve_with_timeout(5, cb));
      expect(bId).toBe(id('B'));
      expectBody(bBody, 'B');
      expect(await jobStats('B')).toMatchObject({ state: 'reserved', pri: 3, reserves: 2, releases: 1 });
      await call((cb) => worker.destroy(id('B'), cb));

      // Nothing left in the watched tube (Z sits in the ignored default tube): the reserve times out.
      const t0 = Date.now();
      await expect(call((cb) => worker.reserve_with_timeout(1, cb))).rejects.toThrow(/^TIMED_OUT$/);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);

      const [zStats] = await call<[Record<string, unknown>]>((cb) => producer.stats_job(zId, cb));
      expect(zStats).toMatchObject({ tube: 'default', state: 'ready', reserves: 0 });
      await call((cb) => producer.destroy(zId, cb)); // any connection may delete a ready job

      const [finalTube] = await call<[Record<string, unknown>]>((cb) => producer.stats_tube(tube, cb));
      const [s] = await call<[Record<string, unknown>]>((cb) => producer.stats(cb));
      expectScenarioEnd(finalTube, s, tube);
    });

    it('two competing FiveBeansWorkers handle every job exactly once', async () => {
      const tube = 'fivebeans-compete';
      if (!server) throw new Error('server did not start');
      const port = server.port;
      const producer = await connect();
      await call((cb) => producer.use(tube, cb));

      const handledBy: string[][] = [[], []];
      const payloadOf = new Map<string, unknown>();
      const warnings: unknown[] = [];
      const total = () => handledBy[0]!.length + handledBy[1]!.length;

      const workers: FiveBeansWorker[] = handledBy.map((mine, i) => {
        const w = new fivebeans.worker({
          id: `worker-${i}`,
          host: HOST,
          port,
          ignoreDefault: true,
          timeout: 1,
          handlers: {
            compete: {
              type: 'compete',
              // three-argument form: the worker passes the job id first
              work(jobID: string, payload: unknown, callback: (action: string) => void) {
                mine.push(jobID);
                payloadOf.set(jobID, payload);
                setTimeout(() => callback('success'), 2); // "work", then the worker deletes the job
              },
            },
          },
        });
        w.on('warning', (wn: unknown) => warnings.push(wn));
        w.on('error', (e: unknown) => warnings.push(e));
        return w;
      });
      const stopped = workers.map((w) => new Promise<void>((r) => w.once('close', () => r())));
      try {
        await Promise.all(workers.map((w) => new Promise<void>((r) => { w.once('started', () => r()); w.start([tube]); })));

        const putIds: string[] = [];
        const expected = new Map<string, unknown>();
        for (let i = 0; i < COMPETE_JOBS; i++) {
          const payload = { n: i, text: `compete job #${i}` };
          const [jobId] = await call<[string]>((cb) => producer.put(i % 3, 0, TTR, JSON.stringify({ type: 'compete', payload }), cb));
          putIds.push(jobId);
          expected.set(jobId, payload);
        }
        await waitFor('all jobs handled', async () => total() >= COMPETE_JOBS, 10_000);
        // Let any (wrong) duplicate delivery show up, and wait until the deletes went through.
        await waitFor('all jobs deleted', async () => {
          const [st] = await call<[Record<string, unknown>]>((cb) => producer.stats_tube(tube, cb));
          return st['cmd-delete'] === COMPETE_JOBS;
        });

        expect(deliveryProblems(putIds, handledBy)).toEqual([]);
        for (const jobId of putIds) expect(payloadOf.get(jobId), `payload of job ${jobId}`).toEqual(expected.get(jobId));
        for (const ids of handledBy) expect(ids.length).toBeGreaterThan(0);
        expect(warnings).toEqual([]);
        const [st] = await call<[Record<string, unknown>]>((cb) => producer.stats_tube(tube, cb));
        expect(st).toMatchObject({
          'total-jobs': COMPETE_JOBS, 'current-jobs-ready': 0, 'current-jobs-reserved': 0, 'current-jobs-buried': 0,
          'cmd-delete': COMPETE_JOBS, 'current-watching': 2,
        });
      } finally {
        // stop() lets the pending reserve-with-timeout (1 s) finish, then ends the connection.
        for (const w of workers) w.stop();
        await within(5000, 'workers to stop', Promise.all(stopped)).catch(() => {
          for (const w of workers) w.client?.stream?.destroy();
        });
      }
    });
  });
});
