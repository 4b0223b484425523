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
});
