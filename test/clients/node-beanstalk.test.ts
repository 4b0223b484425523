/**
 * node-beanstalk 1.6 (promise API, ships TS types) against redstalk and, as a reference, the
 * real beanstalkd: a producer/worker scenario used the way its README and type definitions show.
 *
 * Library facts the assertions rely on (noted, not faked):
 * - Payloads go through a serializer (JSON by default). The README says to pass your own
 *   serializer for other formats; the scenario uses a pass-through one so the raw binary
 *   body is sent and read back byte for byte, the competing-workers test uses the default
 *   JSON serializer with object payloads.
 * - Job ids are numbers. `put(payload, ttr, priority, delay)` takes ttr first.
 * - Outcomes are return values, not errors: reserveWithTimeout → null on TIMED_OUT,
 *   peek/peekReady/peekDelayed/peekBuried/statsJob/statsTube → null
 *   on NOT_FOUND, delete/touch/bury/kickJob → boolean,
 *   release → the new state or null. `ignore` returns a boolean (false on NOT_IGNORED), so the
 *   WATCHING count after an ignore is not available from this client.
 * - The state that put() returns ('ready'/'delayed') is computed by the client from the
 *   delay argument, not reported by the server (only BURIED <id> is told apart).
 * - YAML replies are parsed by the library with js-yaml 4.
 */
import { BeanstalkJobState, Client, type IClientRawReservedJob, type Serializer } from 'node-beanstalk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BINARY_BODY, COMPETE_JOBS, DEFAULT_TUBE_JOB, HOST, RESERVE_ORDER, TARGETS, TTR, deliveryProblems, scenario,
  waitFor, within, type RunningServer, JobNames, compete, type CompetingWorker, expectScenarioEnd,
} from './common.js';

const S = scenario(BINARY_BODY);

/** Pass-through serializer: Buffers are sent as-is and bodies come back as Buffers. */
const rawBytes: Serializer = {
  serialize: (data: Buffer | string) => (Buffer.isBuffer(data) ? data : Buffer.from(data)),
  deserialize: (buffer: Buffer) => buffer,
};

async function closeClient(c: Client): Promise<void> {
  if (!c.isConnected) return;
  await within(3000, 'node-beanstalk disconnect', c.disconnect(true)).catch(() => undefined);
}

describe.each(TARGETS)('node-beanstalk against $name', (target) => {
  describe.skipIf(!target.available)('producer/worker', () => {
    let server: RunningServer | undefined;
    const clients: Client[] = [];

    beforeAll(async () => { server = await target.start(); });
    afterEach(async () => { await Promise.all(clients.splice(0).map(closeClient)); });
    afterAll(async () => { await server?.stop(); });

    async function connect(options: { raw: boolean }): Promise<Client> {
      if (!server) throw new Error('server did not start');
      const c = new Client({ host: HOST, port: server.port, ...(options.raw ? { serializer: rawBytes } : {}) });
      clients.push(c);
      await c.connect();
      return c;
    }

    it('runs the producer/worker scenario', async () => {
      const tube = 'node-beanstalk-scenario';
      const producer = await connect({ raw: true });
      const worker = await connect({ raw: true });

      const names = new JobNames<number>();
      const { idOf, nameOf } = names;
      const id = (name: string): number => names.id(name);
      const jobStats = async (name: string) => {
        const st = await producer.statsJob(id(name));
        if (!st) throw new Error(`stats-job ${name}: NOT_FOUND`);
        return st;
      };
      const expectJob = (job: IClientRawReservedJob | null, name: string) => {
        expect(job?.id, `job ${name}`).toBe(id(name));
        const body: unknown = job?.payload;
        expect(Buffer.isBuffer(body) && body.equals(S.spec(name).body), `body of job ${name} intact`).toBe(true);
      };

      // A job in `default`, more urgent than all others: the worker ignores default and must never get it.
      const z = await producer.put(DEFAULT_TUBE_JOB.body, TTR, DEFAULT_TUBE_JOB.pri, 0);
      expect(z.state).toBe(BeanstalkJobState.ready);

      // --- producer ---
      expect(await producer.use(tube)).toBe(tube);
      expect(await producer.listTubeUsed()).toBe(tube);
      for (const j of S.jobs) {
        const put = await producer.put(j.body, TTR, j.pri, j.delay);
        expect(put.id).toBeGreaterThan(0);
        expect(put.state).toBe(j.delay > 0 ? BeanstalkJobState.delayed : BeanstalkJobState.ready);
        names.add(j.name, put.id);
      }
      expect(new Set(idOf.values()).size).toBe(S.jobs.length);

      // peek* look at the used tube. D (pri 1) is still delayed, so B (pri 5) is next ready.
      expectJob(await producer.peekReady(), 'B');
      expectJob(await producer.peekDelayed(), 'D');
      expect(await producer.peekBuried()).toBeNull();

      expect(await jobStats('D')).toMatchObject({ id: id('D'), tube, state: 'delayed', pri: 1, delay: 1, ttr: TTR, reserves: 0 });
      expect(await producer.statsTube(tube)).toMatchObject({
        name: tube, 'current-jobs-urgent': 5, 'current-jobs-ready': 5, 'current-jobs-reserved': 0,
        'current-jobs-delayed': 1, 'current-jobs-buried': 0, 'total-jobs': 6, 'current-using': 1,
      });
      expect(await producer.listTubes()).toEqual(expect.arrayContaining(['default', tube]));

      // --- worker ---
      expect(await worker.watch(tube)).toBe(2);
      expect(await worker.ignore('default')).toBe(true);
      expect(await worker.ignore(tube)).toBe(false); // NOT_IGNORED: the last watched tube
      expect(await worker.listTubesWatched()).toEqual([tube]);
      expect(await worker.listTubeUsed()).toBe('default');

      // Once D's 1 s delay has passed, all six come out in priority order, bodies intact.
      await waitFor('the delayed job to become ready', async () => (await jobStats('D')).state === BeanstalkJobState.ready);
      const reserved: Array<IClientRawReservedJob | null> = [];
      for (let i = 0; i < S.jobs.length; i++) reserved.push(await within(5000, 'reserve', worker.reserve()));
      expect(reserved.map((j) => (j ? nameOf.get(j.id) : 'TIMED_OUT'))).toEqual(RESERVE_ORDER);
      for (const j of reserved) expectJob(j, (j && nameOf.get(j.id)) ?? '?');
      expect(await jobStats('A')).toMatchObject({ state: 'reserved', pri: 10, reserves: 1, tube });
      expectJob(await producer.peek(id('F')), 'F'); // peek <id> sees reserved jobs too

      // delete some
      expect(await worker.delete(id('D'))).toBe(true);
      expect(await worker.delete(id('A'))).toBe(true);
      expect(await producer.peek(id('A'))).toBeNull();
      expect(await producer.statsJob(id('A'))).toBeNull();
      expect(await worker.touch(id('A'))).toBe(false);
      expect(await worker.delete(id('A'))).toBe(false);

      // bury E with a new priority, then kick it back (kick works on the producer's used tube)
      expect(await worker.bury(id('E'), 7)).toBe(true);
      expect(await jobStats('E')).toMatchObject({ state: 'buried', pri: 7, buries: 1 });
      expectJob(await producer.peekBuried(), 'E');
      expect(await producer.kick(10)).toBe(1);
      expect(await jobStats('E')).toMatchObject({ state: 'ready', pri: 7, kicks: 1 });

      // touch C: still reserved, deadline pushed out to a full TTR
      expect(await worker.touch(id('C'))).toBe(true);
      const c = await jobStats('C');
      expect(c.state).toBe(BeanstalkJobState.reserved);
      expect(c['time-left']).toBeGreaterThanOrEqual(TTR - 2);
      expect(c['time-left']).toBeLessThanOrEqual(TTR);

      // E is now the only ready job in the watched tube
      expectJob(await within(5000, 'reserve', worker.reserve()), 'E');
      expect(await jobStats('E')).toMatchObject({ state: 'reserved', reserves: 2 });
      expect(await worker.delete(id('E'))).toBe(true);

      // release B with a new priority and a 1 s delay
      expect(await worker.release(id('B'), 3, 1)).toBe(BeanstalkJobState.delayed);
      expect(await jobStats('B')).toMatchObject({ state: 'delayed', pri: 3, delay: 1, releases: 1 });
      expectJob(await producer.peekDelayed(), 'B');
      expect(await worker.delete(id('C'))).toBe(true);
      expect(await worker.delete(id('F'))).toBe(true);

      // B comes back once its delay is over
      expectJob(await worker.reserveWithTimeout(5), 'B');
      expect(await jobStats('B')).toMatchObject({ state: 'reserved', pri: 3, reserves: 2, releases: 1 });
      expect(await worker.delete(id('B'))).toBe(true);

      // Nothing left in the watched tube (Z sits in the ignored default tube): the reserve times out.
      const t0 = Date.now();
      expect(await worker.reserveWithTimeout(1)).toBeNull();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);

      expect(await producer.statsJob(z.id)).toMatchObject({ tube: 'default', state: 'ready', reserves: 0 });
      expect(await producer.delete(z.id)).toBe(true); // any connection may delete a ready job

      expectScenarioEnd(await producer.statsTube(tube), await producer.stats(), tube);
    });

    it('two competing workers get every job exactly once', async () => {
      const tube = 'node-beanstalk-compete';
      // default JSON serializer on all three connections
      const producer = await connect({ raw: false });
      const workers = [await connect({ raw: false }), await connect({ raw: false })];
      for (const w of workers) {
        expect(await w.watch(tube)).toBe(2);
        expect(await w.ignore('default')).toBe(true);
      }
      await producer.use(tube);

      const { putIds, got, sent, received } = await compete(
        async (i) => {
          const payload = { n: i, text: `compete job #${i}`, tags: ['a', 'b'] };
          return { id: String((await producer.put(payload, TTR, i % 3, 0)).id), payload };
        },
        workers.map((w): CompetingWorker => ({
          async reserve() {
            const job = await w.reserveWithTimeout(1);
            return job ? { id: String(job.id), payload: job.payload } : null;
          },
          async delete(jobId) {
            expect(await w.delete(Number(jobId))).toBe(true);
          },
        })),
      );

      expect(deliveryProblems(putIds, got)).toEqual([]);
      for (const jobId of putIds) expect(received.get(jobId), `payload of job ${jobId}`).toEqual(sent.get(jobId));
      for (const ids of got) expect(ids.length).toBeGreaterThan(0);
      expect(await producer.statsTube(tube)).toMatchObject({
        'total-jobs': COMPETE_JOBS, 'current-jobs-ready': 0, 'current-jobs-reserved': 0, 'cmd-delete': COMPETE_JOBS,
      });
    });
  });
});
