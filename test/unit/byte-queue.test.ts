import { describe, expect, it } from 'vitest';
import { ByteQueue } from '../../src/server/byte-queue.js';

describe('ByteQueue', () => {
  it('takes, skips and looks ahead across chunk boundaries', () => {
    const q = new ByteQueue();
    q.push(Buffer.from('ab'));
    q.push(Buffer.from(''));
    q.push(Buffer.from('cde'));
    q.push(Buffer.from('f'));
    expect(q.length).toBe(6);
    expect(q.head(4).toString()).toBe('abcd');
    expect(q.head(100).toString()).toBe('abcdef');
    expect(q.take(3).toString()).toBe('abc');
    expect(q.skip(2)).toBe(2);
    expect(q.length).toBe(1);
    expect(q.skip(5)).toBe(1);
    expect(q.length).toBe(0);
    expect(q.head(3).length).toBe(0);
  });

  it('gives back exactly the bytes pushed, whatever the sizes of reads and takes (small reads copied into blocks)', () => {
    let seed = 7;
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    const q = new ByteQueue();
    let model = Buffer.alloc(0);
    const taken: Buffer[] = [];
    const expected: Buffer[] = [];
    let next = 0;
    for (let step = 0; step < 20_000; step++) {
      const op = rand(10);
      if (op < 6) {
        const size = rand(3) === 0 ? rand(20_000) : rand(40);
        const b = Buffer.alloc(size, 0);
        for (let i = 0; i < size; i++) b[i] = (next++) & 0xff;
        q.push(b);
        model = Buffer.concat([model, b]);
      } else if (op < 8) {
        const n = rand(model.length + 1);
        const got = q.take(n);
        taken.push(got);
        expected.push(Buffer.from(model.subarray(0, n)));
        model = model.subarray(n);
      } else if (op < 9) {
        const n = rand(50);
        expect(q.skip(n)).toBe(Math.min(n, model.length));
        model = model.subarray(Math.min(n, model.length));
      } else {
        const n = rand(300);
        expect(q.head(n).equals(model.subarray(0, Math.min(n, model.length)))).toBe(true);
      }
      expect(q.length).toBe(model.length);
    }
    // Bytes handed out earlier are never overwritten by later reads.
    for (let i = 0; i < taken.length; i++) expect(taken[i]!.equals(expected[i]!)).toBe(true);
  });
});
