// What every JobStore must do, as a suite any backend runs
// (describeJobStore(name, open)): the job life cycle through submit() and the
// direct calls, beanstalkd's reserve order, ownership, delays, pauses,
// references and sidecar leases. Errors are StoreError.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobStore } from '../../src/store/job-store.js';
import { jobOps, type AnyJobOp, type OpResult, type Reservation } from '../../src/store/ops.js';

/** `shards`: how many the store splits its data set into (tubes of several may be reserved over together). */
export interface OpenedStore { store: JobStore; shards: number; close(): Promise<void> }

const none = () => {};
const A = 'node-a:1';
const B = 'node-a:2';

export function describeJobStore(name: string, open: () => Promise<OpenedStore>): void {
  describe(`JobStore conformance: ${name}`, () => {
    let opened: OpenedStore;
    let store: JobStore;
    beforeEach(async () => { opened = await open(); store = opened.store; });
    // Ids are the store's: increasing within a shard (several shards make them apart), so tests use what put answered.
    afterEach(async () => { await opened.close(); });

    /** Submits the ops together (they go in one batch), each answered with its result or its error. */
    const apply = (ops: readonly AnyJobOp[]): Promise<Array<OpResult | Error>> => Promise.all(ops.map((op) => new Promise<OpResult | Error>((resolve) => {
      store.submit({ ...op, done: (_op, r: OpResult, err: Error | null) => resolve(err ?? r) });
    })));
    const one = async (op: AnyJobOp): Promise<OpResult> => {
      const r = (await apply([op]))[0]!;
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
      const results = await apply([
        jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('a')),
        jobOps.burnId(null, none, 'default'),
        jobOps.put(null, none, 't', 0, 0, 60, Buffer.from('b')),
      ]);
      const [a, burnt, b] = results as string[];
      if (opened.shards === 1) expect(results).toEqual(['1', '2', '3']);
      expect(Number(b)).toBeGreaterThan(Number(a));
      expect(new Set(results).size).toBe(3);
      expect(await store.peekJob(b!)).toEqual({ id: b, body: Buffer.from('b') });
      expect(await store.peekJob(burnt!)).toBeNull();
      expect(await store.jobTube(a!)).toBe('t');
      expect(await store.listTubes()).toContain('t');
    });

    it('reserves the most urgent ready job of the watched tubes (priority, then id), and says when nothing is', async () => {
      const a5 = await put('a', 5);
      const b1 = await put('b', 1);
      const b1later = await put('b', 1);
      await put('c', 0);
      const first = await reserve(A, 'a', 'b');
      expect(first).toMatchObject({ id: b1, tube: 'b', ttr: 60, body: Buffer.from('x') });
      expect(await reserve(A, 'a', 'b')).toMatchObject({ id: b1later });
      expect(await reserve(A, 'a', 'b')).toMatchObject({ id: a5 });
      expect(await reserve(A, 'a', 'b')).toBe(-1);
      expect((await store.jobInfo(b1))?.state).toBe('reserved');
    });

    it('reserves up to n jobs at once in the same order, each reserved for the owner, and fewer when fewer are ready', async () => {
      const a5 = await put('a', 5);
      const b1 = await put('b', 1);
      const b1later = await put('b', 1);
      const c0 = await put('c', 0);
      await put('a', 2, 100);
      const jobs = await reserveMany(A, 2, 'a', 'b');
      expect(Array.isArray(jobs) && jobs.map((j) => [j.id, j.tube])).toEqual([[b1, 'b'], [b1later, 'b']]);
      const rest = await reserveMany(A, 1000, 'a', 'b', 'c');
      expect(Array.isArray(rest) && rest.map((j) => j.id)).toEqual([c0, a5]);
      for (const id of [a5, b1, b1later, c0]) expect((await store.jobInfo(id))?.state).toBe('reserved');
      const nothing = await reserveMany(A, 10, 'a', 'b', 'c');
      expect(typeof nothing === 'number' && nothing > 90_000 && nothing <= 100_000).toBe(true);
    });

    it('lets only the holder delete, release, bury or touch a reservation', async () => {
      const id = await put('t', 0, 0, 30);
      await reserve(A, 't');
      expect(await apply([
        jobOps.delete(null, none, B, id, 't'),
        jobOps.release(null, none, B, id, 't', 0, 0),
        jobOps.bury(null, none, B, id, 't', 0),
        jobOps.touch(null, none, B, id, 't'),
      ])).toEqual([false, false, false, 0]);
      expect(await one(jobOps.touch(null, none, A, id, 't'))).toBe(30);
      expect(await one(jobOps.bury(null, none, A, id, 't', 7))).toBe(true);
      expect(await store.jobInfo(id)).toMatchObject({ state: 'buried', pri: 7, reserves: 1, buries: 1 });
      expect(await store.peekTube('t', 'buried')).toEqual({ id, body: Buffer.from('x') });
      expect(await one(jobOps.delete(null, none, B, id, 't'))).toBe(true); // not reserved: anyone may delete
      expect(await store.jobInfo(id)).toBeNull();
    });

    it('delays a release, then promotes it when due', async () => {
      const id = await put('t');
      await reserve(A, 't');
      expect(await one(jobOps.release(null, none, A, id, 't', 3, 1))).toBe(true);
      const info = await store.jobInfo(id);
      expect(info).toMatchObject({ state: 'delayed', pri: 3, delay: 1, releases: 1 });
      expect(info!.timeLeftUs).toBeGreaterThan(0);
      expect(await reserve(A, 't')).toBeGreaterThan(0); // ms until the delay ends
      await new Promise((r) => setTimeout(r, 1050));
      const { moved } = await store.promoteDue(100);
      expect(moved).toBe(1);
      expect((await store.jobInfo(id))?.state).toBe('ready');
    });

    it('kicks buried jobs first, then delayed ones; kicks one job by id', async () => {
      const delayed = await put('t', 0, 100);
      const buried = await put('t');
      await reserve(A, 't');
      await one(jobOps.bury(null, none, A, buried, 't', 0));
      expect(await store.kick('t', 10)).toBe(1);
      expect((await store.jobInfo(buried))?.state).toBe('ready');
      expect((await store.jobInfo(delayed))?.state).toBe('delayed');
      expect(await store.kickJob(delayed, 't')).toBe(true);
      expect(await store.kickJob(delayed, 't')).toBe(false);
      expect(await store.jobInfo(delayed)).toMatchObject({ state: 'ready', kicks: 1 });
    });

    it('reserves a job by id, and hands a closed connection\'s reservations back', async () => {
      const t = await put('t');
      const u = await put('u');
      expect(await store.reserveJob(A, u, 'u')).toMatchObject({ id: u, tube: 'u' });
      expect(await store.reserveJob(B, u, 'u')).toBeNull();
      await reserve(A, 't');
      expect(await store.releaseOwned(A, [[t, 't'], [u, 'u']])).toBe(2);
      expect((await store.jobInfo(t))?.state).toBe('ready');
      expect((await store.jobInfo(u))?.state).toBe('ready');
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
      // Over several shards, each shard's tubes come in that order, one shard after another (PROTOCOL.md).
      const inOrder = (tubes: string[]) => (opened.shards === 1 ? tubes : expect.toSatisfy((got: string[]) => got.length === tubes.length && tubes.every((t) => got.includes(t))));
      expect(await store.listTubes()).toEqual(inOrder(['t1', 't4', 't3']));
      await store.refTube('t2', 'n1', 1);
      expect(await store.listTubes()).toEqual(inOrder(['t1', 't4', 't3', 't2']));
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

    it('lists a tube\'s jobs by state a page at a time, each once, with holders, and finds a needle within a bound', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push(await put('listed', i % 2 ? 5 : 1, 0, 60, `body ${i}`));
      const page = (state: 'ready' | 'reserved', cursor: string, limit: number, scan = 100, needle = '') =>
        store.listJobs('listed', { state, cursor, limit, scan, needle: Buffer.from(needle), preview: 4 });
      const seen: string[] = [];
      let cursor = '';
      do {
        const p = await page('ready', cursor, 3);
        seen.push(...p.jobs.map((j) => j.id));
        cursor = p.next;
      } while (cursor !== '');
      expect(seen).toEqual([0, 2, 4, 6, 1, 3, 5].map((i) => ids[i]));
      const first = (await page('ready', '', 1)).jobs[0]!;
      expect(first).toMatchObject({ id: ids[0], tube: 'listed', state: 'ready', pri: 1, holder: '', body: Buffer.from('body') });
      const held = await reserve(A, 'listed');
      expect(held).toMatchObject({ id: ids[0] });
      expect((await page('reserved', '', 10)).jobs.map((j) => [j.id, j.holder])).toEqual([[ids[0], A]]);
      expect((await page('ready', '', 10, 100, 'body 5')).jobs.map((j) => j.id)).toEqual([ids[5]]);
      expect(await page('ready', '', 10, 2, 'body 5')).toMatchObject({ jobs: [], scanned: 2 });
      expect(await store.listJobs('nothing', { state: 'buried', cursor: '', limit: 5, scan: 5, needle: Buffer.alloc(0), preview: 0 })).toEqual({ jobs: [], next: '', scanned: 0 });
    });

    it('tells the age of each tube\'s oldest ready job, over every priority, and of none for a tube with none ready', async () => {
      await put('aging', 900);
      await new Promise((r) => setTimeout(r, 50));
      await put('aging', 1);
      await put('waiting', 0, 60);
      const ages = await store.oldestReady(['aging', 'waiting', 'none']);
      expect([...ages.keys()]).toEqual(['aging']);
      expect(ages.get('aging')).toBeGreaterThanOrEqual(50);
    });

    it('keeps one history sample a slot, a bounded number of them, and what sidecars say of themselves for a while', async () => {
      expect(await store.recordHistory('{"a":1}', 60_000, 2)).toBe(true);
      expect(await store.recordHistory('{"a":2}', 60_000, 2)).toBe(false);
      const [kept] = (await store.history()).map((h) => JSON.parse(h) as { t: number; a: number });
      expect(kept).toMatchObject({ a: 1 });
      expect(kept!.t % 60_000).toBe(0);
      await store.publishNodeInfo('n1', { version: '1.2.3', 'batch-calls': 7 }, 60_000);
      expect(await store.nodeInfo(['n1', 'n2'])).toEqual([{ version: '1.2.3', 'batch-calls': '7' }, {}]);
      await store.publishNodeInfo('n1', { version: '1.2.4' }, 30);
      await new Promise((r) => setTimeout(r, 60));
      expect(await store.nodeInfo(['n1'])).toEqual([{}]);
      await store.heartbeat('n1', 60_000, ['current-connections', 3, 'watching:t', 2]);
      expect(await store.nodeSnapshots(['n1'], ['current-connections', 'cmd-put'])).toEqual([{ 'current-connections': '3' }]);
    });

    it('reaps only a lapsed lease: a sidecar that renewed its own keeps it and its reservations, and a renewal after a lapse says so', async () => {
      await store.heartbeat('n3', 60_000, []);
      const id = await put('t');
      expect(await reserve('n3:1', 't')).toMatchObject({ id });
      // A reaper that found n3 dead a moment ago, after n3 renewed: nothing of n3's goes.
      expect(await store.releaseHeldBy('n3:')).toBe(0);
      await store.forgetNode('n3');
      expect((await store.nodes()).live).toContain('n3');
      expect((await store.jobInfo(id))?.state).toBe('reserved');
      // Lapsed (a ttl of 0 ends it now, as a leaving sidecar does): reaped, and a renewal says it had lapsed.
      await store.heartbeat('n3', 0, []);
      expect(await store.releaseHeldBy('n3:')).toBe(1);
      expect(await store.heartbeat('n3', 60_000, [])).toBe(true);
    });
  });
}
