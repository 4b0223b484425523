// The sharded job store (src/store/sharded.ts, reserve-across.ts) over fake
// shards: routing, a reserve over tubes of several shards as one op, and the
// drop of a kept watch list. Against Redis, the conformance suite runs it
// over 1 and 2 shards (test/store/redis-job-store.test.ts).
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/errors.js';
import type { ShardMap } from '../../src/store/job-store.js';
import { jobOps, OpCode, type AnyJobOp, type OpResult, type ReserveResult } from '../../src/store/ops.js';
import { ShardedJobStore, type ShardStore } from '../../src/store/sharded.js';

/** What a fake shard answers to a call: one result (or error) per op. */
type Answer = (shard: number, ops: readonly AnyJobOp[]) => Array<OpResult | StoreError> | Error;

const MAP: ShardMap = { count: 2, ofTube: (t) => (t.startsWith('b') ? 1 : 0), ofId: (id) => Number(id) % 2 };
const LIMITS = { maxOps: 100, maxBytes: 1 << 20, maxInFlight: 1 };
const job = (id: string, tube: string) => ({ id, tube, ttr: 60, body: Buffer.from('x'), waitedMs: 0 });

function setup(answer: Answer) {
  const calls: Array<{ shard: number; ops: Array<[string, readonly string[], number]> }> = [];
  const shards = [0, 1].map((shard) => ({
    apply: async (ops: readonly AnyJobOp[]) => {
      calls.push({ shard, ops: ops.map((op) => [op.code, op.tubes, op.count]) });
      const r = answer(shard, ops);
      if (r instanceof Error) throw r;
      return r;
    },
  }) as unknown as ShardStore);
  const store = new ShardedJobStore(shards, MAP, LIMITS, (err) => { throw err; });
  const reserve = (tubes: string[], count: number, owner = 'n:1', watch = -1) => new Promise<{ r: ReserveResult; err: Error | null }>((resolve) => {
    store.submit(jobOps.reserve(null, (_op, r, err) => resolve({ r, err }), owner, tubes, count, watch));
  });
  return { store, calls, reserve };
}

describe('the sharded job store', () => {
  it('sends a reserve over tubes of one shard as it is, to that shard', async () => {
    const { store, calls, reserve } = setup(() => [{ jobs: [job('3', 'b1')], drained: true }]);
    expect(store.reservesAtOnce(['b1', 'b2'])).toBe(true);
    const { r } = await reserve(['b1', 'b2'], 1);
    expect(r).toEqual({ jobs: [job('3', 'b1')], drained: true });
    expect(calls).toEqual([{ shard: 1, ops: [['v', ['b1', 'b2'], 1]] }]);
  });

  it('reserves over tubes of several shards as one op: candidates, then the most urgent taken, in their order', async () => {
    const { store, calls, reserve } = setup((shard, ops) => ops.map((op) => {
      if (op.code === OpCode.Candidate) return shard === 0 ? [{ pri: 5, createdMs: 10 }] : [{ pri: 1, createdMs: 20 }, { pri: 5, createdMs: 30 }];
      return { jobs: shard === 0 ? [job('2', 'a')] : [job('1', 'b')], drained: false };
    }));
    expect(store.reservesAtOnce(['a', 'b'])).toBe(false);
    const { r, err } = await reserve(['a', 'b', 'a2'], 2);
    expect(err).toBeNull();
    expect(r).toEqual({ jobs: [job('1', 'b'), job('2', 'a')], drained: false });
    // Each shard is asked about its own tubes only; then each reserves what it had of the most urgent two.
    expect(calls.map((c) => c.ops[0])).toEqual([['c', ['a', 'a2'], 2], ['c', ['b'], 2], ['v', ['b'], 1], ['v', ['a', 'a2'], 1]]);
  });

  it('answers the soonest wake-up of any shard when none has a candidate, and -1 (drained) only when none will', async () => {
    const soon = setup((shard) => [shard === 0 ? 5000 : 300]);
    expect((await soon.reserve(['a', 'b'], 1)).r).toBe(300);
    const drained = setup((shard) => [shard === 0 ? -1 : 300]);
    expect((await drained.reserve(['a', 'b'], 1)).r).toBe(300);
    const none = setup(() => [-1]);
    expect((await none.reserve(['a', 'b'], 1)).r).toBe(-1);
  });

  it('looks again at once when other clients took every candidate between the two steps', async () => {
    let round = 0;
    const { calls, reserve } = setup((_shard, ops) => ops.map((op) => {
      if (op.code === OpCode.Candidate) return round++ < 2 ? [{ pri: 1, createdMs: 1 }] : -1;
      return -1; // taken meanwhile: nothing left to reserve there
    }));
    expect((await reserve(['a', 'b'], 1)).r).toBe(-1);
    expect(calls.map((c) => c.ops[0]![0])).toEqual(['c', 'c', 'v', 'c', 'c']);
  });

  it('answers a reserve whose outcome in one shard is unknown with that, whatever another shard took (its owner hands back all it holds)', async () => {
    const { reserve } = setup((shard, ops) => {
      if (ops[0]!.code === OpCode.Candidate) return [[{ pri: shard, createdMs: 1 }]];
      return shard === 0 ? [{ jobs: [job('2', 'a')], drained: false }] : new StoreError('unknown', 'Command timed out');
    });
    const { err } = await reserve(['a', 'b'], 2);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).kind).toBe('unknown');
  });

  it('counts a failed look for candidates as failed, never unknown: candidates take nothing', async () => {
    const { reserve } = setup((shard) => (shard === 1 ? new StoreError('unknown', 'Command timed out') : [-1]));
    const { err } = await reserve(['a', 'b'], 1);
    expect((err as StoreError).kind).toBe('failed');
  });

  it('takes the jobs of the shards that answered when another shard cannot (its slot moving, say)', async () => {
    const { reserve } = setup((shard, ops) => {
      if (shard === 1) return new StoreError('failed', 'TRYAGAIN Multiple keys request during rehashing of slot');
      return ops.map((op) => (op.code === OpCode.Candidate ? [{ pri: 3, createdMs: 1 }] : { jobs: [job('2', 'a')], drained: false }));
    });
    const { r, err } = await reserve(['a', 'b'], 1);
    expect(err).toBeNull();
    expect(r).toEqual({ jobs: [job('2', 'a')], drained: false });
  });

  it('drops a kept watch list in the shards asked to keep it, after their reserves, and answers at once when none were', async () => {
    const { store, calls, reserve } = setup((_shard, ops) => ops.map((op) => (op.code === OpCode.DropWatch ? true : -1)));
    await reserve(['b1', 'b2'], 1, 'n:7', 3);
    const dropped = await new Promise<boolean>((resolve) => store.submit(jobOps.dropWatch(null, (_op, r) => resolve(r), 'n:7')));
    expect(dropped).toBe(true);
    expect(calls.map((c) => [c.shard, c.ops[0]![0]])).toEqual([[1, 'v'], [1, 'x']]);
    const again = await new Promise<boolean>((resolve) => store.submit(jobOps.dropWatch(null, (_op, r) => resolve(r), 'n:7')));
    expect(again).toBe(true);
    expect(calls).toHaveLength(2); // nothing kept any more: no call
    expect(store.pending).toBe(0);
  });
});
