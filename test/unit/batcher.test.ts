import { describe, expect, it } from 'vitest';
import { Batcher, LinkFlush, type BatchLimits } from '../../src/store/batcher.js';
import { jobOps, type Completion, type OpResult } from '../../src/store/ops.js';

interface Call { ops: string[]; settle(results: OpResult[] | Error): void }

/** A Batcher over a fake store whose calls the test settles by hand. */
function harness(limits: Partial<BatchLimits> = {}) {
  const calls: Call[] = [];
  const settled: string[] = [];
  const reported: unknown[] = [];
  const batcher = new Batcher(
    (ops) => new Promise((resolve, reject) => {
      calls.push({ ops: ops.map((o) => o.tube), settle: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
    }),
    { maxOps: 100, maxBytes: 1 << 20, maxInFlight: 1, ...limits },
    (err) => reported.push(err),
  );
  // Each op is a put whose tube names it in the test.
  const add = (name: string, body = Buffer.alloc(0), done?: Completion<null, string>) => batcher.add(jobOps.put(null,
    done ?? ((op, r, err) => settled.push(`${op.tube}=${err ? `error:${err.message}` : String(r)}`)), name, 0, 0, 1, body));
  const turn = () => new Promise((r) => setImmediate(r));
  return { batcher, calls, settled, reported, add, turn };
}

describe('Batcher', () => {
  it('sends a lone op at the end of the event-loop turn, without a timer', async () => {
    const h = harness();
    h.add('a');
    expect(h.calls).toHaveLength(0);
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a']]);
  });

  it('puts everything that arrived during a round trip into the next call, in order', async () => {
    const h = harness();
    h.add('a');
    await h.turn();
    for (const id of ['b', 'c', 'd']) h.add(id);
    await h.turn();
    expect(h.calls).toHaveLength(1); // one call in flight at a time
    h.calls[0]!.settle([1]);
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a'], ['b', 'c', 'd']]);
    h.calls[1]!.settle([2, 3, 4]);
    await h.turn();
    expect(h.settled).toEqual(['a=1', 'b=2', 'c=3', 'd=4']);
    expect(h.batcher.pending).toBe(0);
    expect([h.batcher.calls, h.batcher.ops]).toEqual([2, 4]);
  });

  it('caps a call by op count and by body bytes (a bigger single job still goes alone)', async () => {
    const h = harness({ maxOps: 2, maxBytes: 10, maxInFlight: 8 });
    h.add('a', Buffer.alloc(4));
    h.add('b', Buffer.alloc(4));
    h.add('c', Buffer.alloc(4));
    h.add('d', Buffer.alloc(50));
    h.add('e', Buffer.alloc(6));
    h.add('f', Buffer.alloc(5));
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a', 'b'], ['c'], ['d'], ['e'], ['f']]);
  });

  it('keeps up to maxInFlight calls out at once', async () => {
    const h = harness({ maxOps: 1, maxInFlight: 2 });
    for (const id of ['a', 'b', 'c']) h.add(id);
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a'], ['b']]);
    h.calls[0]!.settle([1]);
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a'], ['b'], ['c']]);
  });

  it('answers every op of a failed call with the error, in order, and goes on with the next call', async () => {
    const h = harness();
    h.add('a');
    await h.turn();
    h.add('b');
    h.add('c');
    h.calls[0]!.settle(new Error('boom'));
    await h.turn();
    expect(h.settled).toEqual(['a=error:boom']);
    h.calls[1]!.settle(new Error('again'));
    await h.turn();
    h.add('d');
    await h.turn();
    h.calls[2]!.settle([7]);
    await h.turn();
    expect(h.settled).toEqual(['a=error:boom', 'b=error:again', 'c=error:again', 'd=7']);
  });

  it('reports a completion that throws and still completes the other ops', async () => {
    const h = harness();
    h.add('a', undefined, () => { throw new Error('bug'); });
    h.add('b');
    await h.turn();
    h.calls[0]!.settle([1, 2]);
    await h.turn();
    expect(h.settled).toEqual(['b=2']);
    expect(h.reported).toHaveLength(1);
  });

  it('includes ops added by completions in the very next call', async () => {
    const h = harness();
    h.add('a', undefined, () => h.add('from-completion'));
    await h.turn();
    h.add('b');
    h.calls[0]!.settle([1]);
    await h.turn();
    expect(h.calls.map((c) => c.ops)).toEqual([['a'], ['b', 'from-completion']]);
  });

  it('flushes the batchers of one link together: their calls of a turn are made inside one `together`, also after calls return', async () => {
    const events: string[] = [];
    const pending: Array<() => void> = [];
    const link = new LinkFlush((send) => { events.push('['); send(); events.push(']'); });
    const batcher = (name: string) => new Batcher((ops) => {
      events.push(`${name}:${ops.map((o) => o.tube).join(',')}`);
      return new Promise((resolve) => pending.push(() => resolve(ops.map(() => '1'))));
    }, { maxOps: 100, maxBytes: 1 << 20, maxInFlight: 1 }, (err) => { throw err; }, link);
    const [a, b] = [batcher('A'), batcher('B')];
    const put = (to: Batcher, tube: string) => to.add(jobOps.put(null, () => {}, tube, 0, 0, 1, Buffer.alloc(0)));
    put(a, 'a1');
    put(b, 'b1');
    expect(events).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['[', 'A:a1', 'B:b1', ']']);
    put(a, 'a2');
    put(b, 'b2'); // queued behind the calls in flight
    for (const settle of pending.splice(0)) settle();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(events.slice(4)).toEqual(['[', 'A:a2', 'B:b2', ']']);
  });
});
