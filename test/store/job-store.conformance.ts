// What every JobStore must do, as a suite any backend runs
// (describeJobStore(name, open)): the job life cycle through apply() and the
// direct calls, beanstalkd's reserve order, ownership, delays, pauses,
// references and sidecar leases. Errors are StoreError.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobStore } from '../../src/store/job-store.js';
import { jobOps, type AnyJobOp, type OpResult, type Reservation } from '../../src/store/ops.js';

export interface OpenedStore { store: JobStore; close(): Promise<void> }

const none = () => {};
const A = 'node-a:1';
const B = 'node-a:2';

export function describeJobStore(name: string, open: () => Promise<OpenedStore>): void {
  describe(`JobStore conformance: ${name}`, () => {
    let opened: OpenedStore;
    let store: JobStore;
    beforeEach(async () => { opened = await open(); store = opened.store; });
    afterEach(async () => { await opened.close(); });

    const one = async (op: AnyJobOp): Promise<OpResult> => {
      const r = (await store.apply([op]))[0]!;
      if (r instanceof Error) throw r;
      return r;
    };
    const put = (tube: string, pri = 0, delay = 0, ttr = 60, body = 'x') =>
      one(jobOps.put(null, none, tube, pri, delay, ttr, Buffer.from(body))) as Promise<string>;
    const reserveMany = (owner: string, count: number, ...tubes: string[]) =>
      (one(jobOps.reserve(null, none, owner, tubes, count)) as Promise<Reservation | number>).then((r) => (typeof r === 'number' ? r : r.jobs));
    const reserve = async (owner: string, ...tubes: string[]) => {
      const r = await reserveMany(owner, 1, ...tubes);
      return typeof r === 'number' ? r : r[0]!;
    };

    it('puts jobs with increasing ids, in one call for many, each with its own result', async () => {
      const results = await store.apply([
        jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('a')),
        jobOps.burnId(null, none, 'default'),
        jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('b')),
      ]);
      expect(results).toEqual(['1', '2', '3']);
      expect(await store.peekJob('3')).toEqual({ id: '3', body: Buffer.from('b') });
      expect(await store.peekJob('2')).toBeNull();
      expect(await store.jobTube('1')).toBe('t');
      expect(await store.listTubes()).toContain('t');
    });

    it('reserves the most urgent ready job of the watched tubes (priority, then id), and says when nothing is', async () => {
      await put('a', 5);
      await put('b', 1);
      await put('b', 1);
      await put('c', 0);
      const first = await reserve(A, 'a', 'b');
      expect(first).toMatchObject({ id: '2', tube: 'b', ttr: 60, body: Buffer.from('x') });
      expect(await reserve(A, 'a', 'b')).toMatchObject({ id: '3' });
      expect(await reserve(A, 'a', 'b')).toMatchObject({ id: '1' });
      expect(await reserve(A, 'a', 'b')).toBe(-1);
      expect((await store.jobInfo('2'))?.state).toBe('reserved');
    });

    it('reserves up to n jobs at once in the same order, each reserved for the owner, and fewer when fewer are ready', async () => {
      await put('a', 5);
      await put('b', 1);
      await put('b', 1);
      await put('c', 0);
      await put('a', 2, 100);
      const jobs = await reserveMany(A, 2, 'a', 'b');
      expect(Array.isArray(jobs) && jobs.map((j) => [j.id, j.tube])).toEqual([['2', 'b'], ['3', 'b']]);
      const rest = await reserveMany(A, 1000, 'a', 'b', 'c');
      expect(Array.isArray(rest) && rest.map((j) => j.id)).toEqual(['4', '1']);
      for (const id of ['1', '2', '3', '4']) expect((await store.jobInfo(id))?.state).toBe('reserved');
      const nothing = await reserveMany(A, 10, 'a', 'b', 'c');
      expect(typeof nothing === 'number' && nothing > 90_000 && nothing <= 100_000).toBe(true);
    });

    it('lets only the holder delete, release, bury or touch a reservation', async () => {
      await put('t', 0, 0, 30);
      await reserve(A, 't');
      expect(await store.apply([
        jobOps.delete(null, none, B, '1', 't'),
        jobOps.release(null, none, B, '1', 't', 0, 0),
        jobOps.bury(null, none, B, '1', 't', 0),
        jobOps.touch(null, none, B, '1', 't'),
      ])).toEqual([false, false, false, 0]);
      expect(await one(jobOps.touch(null, none, A, '1', 't'))).toBe(30);
      expect(await one(jobOps.bury(null, none, A, '1', 't', 7))).toBe(true);
      expect(await store.jobInfo('1')).toMatchObject({ state: 'buried', pri: 7, reserves: 1, buries: 1 });
      expect(await store.peekTube('t', 'buried')).toEqual({ id: '1', body: Buffer.from('x') });
      expect(await one(jobOps.delete(null, none, B, '1', 't'))).toBe(true); // not reserved: anyone may delete
      expect(await store.jobInfo('1')).toBeNull();
    });

    it('delays a release, then promotes it when due', async () => {
      await put('t');
      await reserve(A, 't');
      expect(await one(jobOps.release(null, none, A, '1', 't', 3, 1))).toBe(true);
      const info = await store.jobInfo('1');
      expect(info).toMatchObject({ state: 'delayed', pri: 3, delay: 1, releases: 1 });
      expect(info!.timeLeftUs).toBeGreaterThan(0);
      expect(await reserve(A, 't')).toBeGreaterThan(0); // ms until the delay ends
      await new Promise((r) => setTimeout(r, 1050));
      const { moved } = await store.promoteDue(100);
      expect(moved).toBe(1);
      expect((await store.jobInfo('1'))?.state).toBe('ready');
    });

    it('kicks buried jobs first, then delayed ones; kicks one job by id', async () => {
      await put('t', 0, 100);
      await put('t');
      await reserve(A, 't');
      await one(jobOps.bury(null, none, A, '2', 't', 0));
      expect(await store.kick('t', 10)).toBe(1);
      expect((await store.jobInfo('2'))?.state).toBe('ready');
      expect((await store.jobInfo('1'))?.state).toBe('delayed');
      expect(await store.kickJob('1', 't')).toBe(true);
      expect(await store.kickJob('1', 't')).toBe(false);
      expect(await store.jobInfo('1')).toMatchObject({ state: 'ready', kicks: 1 });
    });

    it('reserves a job by id, and hands a closed connection\'s reservations back', async () => {
      await put('t');
      await put('u');
      expect(await store.reserveJob(A, '2', 'u')).toMatchObject({ id: '2', tube: 'u' });
      expect(await store.reserveJob(B, '2', 'u')).toBeNull();
      await reserve(A, 't');
      expect(await store.releaseOwned(A, [['1', 't'], ['2', 'u']])).toBe(2);
      expect((await store.jobInfo('1'))?.state).toBe('ready');
      expect((await store.jobInfo('2'))?.state).toBe('ready');
    });

    it('does not reserve from a paused tube, and counts per tube', async () => {
      await put('t', 1);
      await put('t', 2000, 100);
      expect(await store.pauseTube('t', 60)).toBe(true);
      expect(await store.pauseTube('nope', 60)).toBe(false);
      expect(await reserve(A, 't')).toBeGreaterThan(50_000); // the pause ends first (60 s), the delay later (100 s)
      const totals = await store.tubeCounts(['t', 'nope']);
      expect(totals.tubes.get('t')).toMatchObject({ urgent: 1, ready: 1, delayed: 1, reserved: 0, buried: 0, totalJobs: 2, cmdPauseTube: 1, pause: 60 });
      expect(totals.tubes.has('nope')).toBe(false);
      expect(totals.totalJobs).toBe(2);
    });

    it('keeps a referenced tube, and collects it once unreferenced and empty', async () => {
      await store.refTube('kept', 'n1', 1);
      expect(await store.listTubes()).toContain('kept');
      await store.refTube('kept', 'n1', -1);
      expect(await store.listTubes()).not.toContain('kept');
    });

    it('lists tubes as beanstalkd does: appended when made, a removed one\'s place taken by the last', async () => {
      for (const t of ['t1', 't2', 't3', 't4']) await store.refTube(t, 'n1', 1);
      await store.refTube('t2', 'n1', -1);
      expect(await store.listTubes()).toEqual(['t1', 't4', 't3']);
      await store.refTube('t2', 'n1', 1);
      expect(await store.listTubes()).toEqual(['t1', 't4', 't3', 't2']);
    });

    it('tracks sidecar leases and their counter snapshots', async () => {
      expect(await store.heartbeat('n1', 60_000, ['current-connections', 3])).toBe(true);
      expect(await store.heartbeat('n1', 60_000, ['current-connections', 4])).toBe(false);
      await store.heartbeat('n2', 1, []);
      await new Promise((r) => setTimeout(r, 20));
      expect(await store.nodes()).toEqual({ live: ['n1'], dead: ['n2'] });
      expect(await store.nodeSnapshots(['n1'])).toEqual([{ 'current-connections': '4' }]);
      await store.forgetNode('n2');
      expect((await store.nodes()).dead).toEqual([]);
    });

    it('reaps only a lapsed lease: a sidecar that renewed its own keeps it and its reservations, and a renewal after a lapse says so', async () => {
      await store.heartbeat('n3', 60_000, []);
      await put('t');
      expect(await reserve('n3:1', 't')).toMatchObject({ id: '1' });
      // A reaper that found n3 dead a moment ago, after n3 renewed: nothing of n3's goes.
      expect(await store.releaseHeldBy('n3:')).toBe(0);
      await store.forgetNode('n3');
      expect((await store.nodes()).live).toContain('n3');
      expect((await store.jobInfo('1'))?.state).toBe('reserved');
      // Lapsed (a ttl of 0 ends it now, as a leaving sidecar does): reaped, and a renewal says it had lapsed.
      await store.heartbeat('n3', 0, []);
      expect(await store.releaseHeldBy('n3:')).toBe(1);
      expect(await store.heartbeat('n3', 60_000, [])).toBe(true);
    });
  });
}
