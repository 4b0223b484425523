// The hand-written RESP of batch calls (src/store/redis/resp.ts): every kind
// of argument comes out as Redis' own bulk-string encoding.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encoded, RespWriter } from '../../src/store/redis/resp.js';

const bulk = (items: readonly string[]) => items.map((s) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`).join('');

describe('RespWriter', () => {
  it('writes integers, strings (ASCII, UTF-8, short, long), ids and bytes as bulk strings, after a head', () => {
    const w = new RespWriter(8); // grows as it goes
    const ints = [0, 7, 9, 10, 99, 100, 4294967295, -1, -10, -12345, 2 ** 53 - 1, 1e21];
    const strings = ['', 'p', 'default', 'é☃', 'x'.repeat(70), 'ü'.repeat(70), 'abc\u0080'];
    for (const n of ints) w.int(n);
    for (const s of strings) w.string(s);
    w.ascii('1234567');
    w.bytes(Buffer.from([0, 13, 10, 255]));
    w.raw(encoded('k1', 'k2'), 2);
    const items = ['EVALSHA', 'abc', ...ints.map(String), ...strings, '1234567'];
    const expected = Buffer.concat([
      Buffer.from(`*${items.length + 3}\r\n${bulk(items)}`), Buffer.from('$4\r\n'), Buffer.from([0, 13, 10, 255]), Buffer.from(`\r\n${bulk(['k1', 'k2'])}`),
    ]);
    expect(w.command(encoded('EVALSHA', 'abc'), 2)).toEqual(expected);
    // Empty again, and the buffer is reused.
    w.int(5);
    expect(w.command(encoded('GET'), 1).toString()).toBe(`*2\r\n${bulk(['GET', '5'])}`);
  });

  it('encodes any string and any safe integer as Buffer.from and String do', () => {
    fc.assert(fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.maxSafeInteger().map(String))), (values) => {
      const w = new RespWriter(16);
      for (const v of values) if (/^-?\d+$/.test(v)) w.int(Number(v)); else w.string(v);
      expect(w.take().toString('utf8')).toBe(bulk(values.map((v) => (/^-?\d+$/.test(v) ? String(Number(v)) : v))));
    }));
  });
});
