// Blocked reserves (src/server/waiters.ts) with a store that refuses attempts:
// a waiter keeps waiting through an outage and is served after it; an attempt
// whose outcome is unknown closes its session instead.
import { describe, expect, it } from 'vitest';
import type { Session } from '../../src/commands/session.js';
import { Waiters } from '../../src/server/waiters.js';
import { StoreError } from '../../src/store/errors.js';
import type { AnyJobOp, ReservedJob } from '../../src/store/ops.js';

function fakeSession() {
  const got: string[] = [];
  const session = {
    owner: 'n:1', watched: ['default'], reserved: new Map(),
    soonestDeadline: () => Infinity,
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
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, shardOf: () => 0 });
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
    op.done(op, [{ id: '7', tube: 'default', ttr: 60, body: Buffer.from('x') }], null);
    await done;
    expect(got).toEqual(['RESERVED 7']);
  });

  it('end a reserve-with-timeout with TIMED_OUT when its time is up while the store refuses', async () => {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, shardOf: () => 0 });
    const { session, got } = fakeSession();
    const done = waiters.wait(session, 0);
    const op = ops.shift()!;
    op.done(op, undefined, new StoreError('failed', 'down'));
    await done;
    expect(got).toEqual(['TIMED_OUT']);
  });

  it('fail the session (which closes it) when an attempt\'s outcome is unknown: a job may have been reserved for it', async () => {
    const ops: AnyJobOp[] = [];
    const waiters = new Waiters({ submit: (op) => ops.push(op), waitingChanged: () => {}, giveBack: () => {}, shardOf: () => 0 });
    const { session, got } = fakeSession();
    const done = waiters.wait(session, null);
    const op = ops.shift()!;
    op.done(op, undefined, new StoreError('unknown', 'Command timed out'));
    await done;
    expect(got).toEqual(['failed: unknown']);
  });
});
