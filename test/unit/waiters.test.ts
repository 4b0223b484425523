// Blocked reserves (src/server/waiters.ts) with a store that refuses attempts:
// a waiter keeps waiting through an outage and is served after it; an attempt
// whose outcome is unknown closes its session instead.
import { describe, expect, it, vi } from 'vitest';
import type { Session } from '../../src/commands/session.js';
import { Waiters } from '../../src/server/waiters.js';
import { StoreError } from '../../src/store/errors.js';
import type { AnyJobOp, ReservedJob } from '../../src/store/ops.js';

function fakeSession() {
  const got: string[] = [];
  const session = {
    owner: 'n:1', watched: ['default'], reserved: new Map(),
    soonestDeadline: () => Infinity,
    get arrivedAt() { return Date.now(); },
    answer: (b: Buffer) => got.push(b.toString().trim()),
    deliver: (job: ReservedJob) => got.push(`RESERVED ${job.id}`),
    deliverMany: () => { throw new Error('not here'); },
    fail: (err: unknown) => got.push(`failed: ${(err as StoreError).kind}`),
  } as unknown as Session;
  return { session, got };
}

describe('waiters with a store that refuses attempts', () => {
  it('keep a blocked reserve waiting through failed attempts, and serve it once the store answers', async () => {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, giveBackAll: () => {}, reservesAtOnce: () => true });
    const { session, got } = fakeSession();
    const done = waiters.wait(session, null);
    const fail = (op: AnyJobOp) => op.done(op, undefined, new StoreError('failed', "Stream isn't writeable"));
    fail(ops.shift()!);
    expect(got).toEqual([]);
    waiters.onResync(); // the store is back (the subscriber reconnected): another look, also refused
    await new Promise((r) => setTimeout(r, 10));
    if (ops.length) fail(ops.shift()!);
    expect(got).toEqual([]);
    await new Promise((r) => setTimeout(r, 300)); // the retry after a refusal
    const op = ops.shift()!;
    op.done(op, { jobs: [{ id: '7', tube: 'default', ttr: 60, body: Buffer.from('x') }], drained: false }, null);
    await done;
    expect(got).toEqual(['RESERVED 7']);
  });

  it('end a reserve-with-timeout with TIMED_OUT when its time is up while the store refuses', async () => {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, giveBackAll: () => {}, reservesAtOnce: () => true });
    const { session, got } = fakeSession();
    const done = waiters.wait(session, 0);
    const op = ops.shift()!;
    op.done(op, undefined, new StoreError('failed', 'down'));
    await done;
    expect(got).toEqual(['TIMED_OUT']);
  });

  it('fail the session (which closes it) when an attempt\'s outcome is unknown: a job may have been reserved for it', async () => {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, giveBackAll: () => {}, reservesAtOnce: () => true });
    const { session, got } = fakeSession();
    const done = waiters.wait(session, null);
    const op = ops.shift()!;
    op.done(op, undefined, new StoreError('unknown', 'Command timed out'));
    await done;
    expect(got).toEqual(['failed: unknown']);
  });
});

describe('waiters handing jobs over and knowing drained tubes', () => {
  const job = (id: string, tube = 'default'): ReservedJob => ({ id, tube, ttr: 60, body: Buffer.from('x'), waitedMs: 0 });
  function setup(reservesAtOnce: (tubes: readonly string[]) => boolean = () => true) {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, giveBackAll: () => {}, reservesAtOnce });
    /** Answers the oldest op in the batch with r. */
    const answer = (r: unknown) => { const op = ops.shift()!; op.done(op, r, null); };
    return { ops, waiters, answer };
  }

  it('hand a job about to be ready to the first idle waiter on its tube, in the same batch', () => {
    const { ops, waiters, answer } = setup();
    const first = fakeSession();
    const second = fakeSession();
    void waiters.wait(first.session, null);
    answer(-1); // nothing, nor anything delayed: idle, and the tube is known drained
    void waiters.wait(second.session, null); // so this one waits without a look
    expect(ops).toEqual([]);
    waiters.readying('default');
    expect(ops.map((op) => [op.code, op.ctx.session])).toEqual([['v', first.session]]); // only the first looks
    answer({ jobs: [job('1')], drained: true });
    expect(first.got).toEqual(['RESERVED 1']);
    expect(second.got).toEqual([]);
    expect(ops).toEqual([]); // drained: the next waiter is not sent to look
  });

  it('let a blocking reserve over drained tubes wait without a look, until a wake-up for one of them', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, null);
    answer({ jobs: [job('1')], drained: true });
    const b = fakeSession();
    void waiters.wait(b.session, 5);
    expect(ops).toEqual([]); // known drained: no look
    const c = fakeSession();
    void waiters.wait(c.session, 0); // reserve-with-timeout 0 always looks
    expect(ops.map((op) => op.ctx.session)).toEqual([c.session]);
    answer(-1);
    expect(c.got).toEqual(['TIMED_OUT']);
    waiters.onReady('default', 1); // another sidecar made a job ready
    expect(ops.map((op) => op.ctx.session)).toEqual([b.session]);
    answer({ jobs: [job('2')], drained: false });
    expect(b.got).toEqual(['RESERVED 2']);
    const d = fakeSession();
    void waiters.wait(d.session, null); // the tube was not said drained since the wake-up: d looks
    expect(ops.map((op) => op.ctx.session)).toEqual([d.session]);
  });

  it('trust a drained look for a second at most (a wake-up lost in a fault costs no more)', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      const { ops, waiters, answer } = setup();
      const a = fakeSession();
      void waiters.wait(a.session, 0);
      answer(-1);
      const b = fakeSession();
      void waiters.wait(b.session, null);
      expect(ops).toEqual([]);
      vi.advanceTimersByTime(1001);
      const c = fakeSession();
      void waiters.wait(c.session, null);
      expect(ops.map((op) => op.ctx.session)).toEqual([c.session]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('forget a drained mark once a look finds jobs left in its tubes', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, 0);
    answer(-1); // drained
    const b = fakeSession();
    void waiters.wait(b.session, 0); // timeout 0 looks anyway, and finds more than it took
    answer({ jobs: [job('1')], drained: false });
    const c = fakeSession();
    void waiters.wait(c.session, null);
    expect(ops.map((op) => op.ctx.session)).toEqual([c.session]);
  });

  it('trust a drained look that a job handed over overtook: the reserve it rode with tells the tube afterwards', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, null);
    answer(-1); // a waits, the tube known drained
    const b = fakeSession();
    void waiters.wait(b.session, 0); // reserve-with-timeout 0 looks all the same: in flight...
    waiters.readying('default'); // ...when a put is handed to a
    expect(ops.map((op) => op.ctx.session)).toEqual([b.session, a.session]);
    answer(-1);
    expect(b.got).toEqual(['TIMED_OUT']);
    const c = fakeSession();
    void waiters.wait(c.session, null);
    expect(ops.map((op) => op.ctx.session)).toEqual([a.session]); // the mark stands: c waits without a look
    answer({ jobs: [job('1')], drained: true });
    expect(a.got).toEqual(['RESERVED 1']);
    expect(ops).toEqual([]);
  });

  it('trust no drained look that a job nobody waited for overtook', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, null); // a look, in flight: no idle waiter
    waiters.readying('default'); // a put that finds nobody to hand it to
    expect(ops.map((op) => op.ctx.session)).toEqual([a.session]);
    answer(-1);
    const b = fakeSession();
    void waiters.wait(b.session, null);
    expect(ops.map((op) => op.ctx.session)).toEqual([b.session]);
  });

  it('trust no drained look that a wake-up overtook while it was in flight', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, null);
    waiters.onReady('other', 1); // any wake-up while the look is out
    answer(-1);
    const b = fakeSession();
    void waiters.wait(b.session, null);
    expect(ops.map((op) => op.ctx.session)).toEqual([b.session]);
  });

  it('forget every drained tube when the wake-ups were interrupted', () => {
    const { ops, waiters, answer } = setup();
    const a = fakeSession();
    void waiters.wait(a.session, 0);
    answer(-1);
    waiters.onResync();
    const b = fakeSession();
    void waiters.wait(b.session, null);
    expect(ops.map((op) => op.ctx.session)).toEqual([b.session]);
  });

  it('hand a job over to a waiter whose tubes the store cannot reserve over at once: its reserve is still one op', () => {
    const { ops, waiters, answer } = setup((tubes) => tubes.length === 1);
    const a = fakeSession();
    (a.session as unknown as { watched: string[] }).watched = ['default', 'b'];
    expect(waiters.reservesAtOnce(a.session)).toBe(false);
    void waiters.wait(a.session, null);
    answer(-1); // nothing in any of them: drained
    expect(ops).toEqual([]);
    waiters.readying('default');
    expect(ops.map((op) => [op.code, op.tubes])).toEqual([['v', ['default', 'b']]]);
  });

  it('serve waiters watching many tubes and waiters watching few in the order they came, naming a wide one\'s watch list by version, and drop it when it closes', () => {
    const { ops, waiters, answer } = setup();
    const few = fakeSession();
    const many = fakeSession();
    const later = fakeSession();
    (many.session as { owner: string }).owner = 'n:2';
    (many.session as unknown as { watched: string[] }).watched = Array.from({ length: 100 }, (_, i) => `t${i}`);
    (many.session as { watchVersion: number }).watchVersion = 7;
    (few.session as unknown as { watched: string[] }).watched = ['t5'];
    (later.session as unknown as { watched: string[] }).watched = ['t5'];
    void waiters.wait(many.session, 5);
    expect([ops[0]!.code, ops[0]!.watch, ops[0]!.tubes.length]).toEqual(['v', 7, 100]);
    answer(5000);
    void waiters.wait(few.session, 5);
    expect(ops[0]!.watch).toBe(-1);
    answer(5000);
    void waiters.wait(later.session, 5);
    answer(5000);
    waiters.onReady('t5', 2); // the first two that came look, the wide one first
    expect(ops.map((op) => op.ctx.session)).toEqual([many.session, few.session]);
    answer({ jobs: [job('1')], drained: false });
    answer(5000);
    expect(many.got).toEqual(['RESERVED 1']);
    waiters.onReady('t99', 1); // watched by the wide one only, which has its job
    expect(ops).toEqual([]);
    waiters.cancel(many.session);
    expect(ops.map((op) => [op.code, op.owner])).toEqual([['x', 'n:2']]);
  });
});
