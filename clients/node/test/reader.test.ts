import { describe, expect, it } from 'vitest';
import { MalformedReplyError, ReplyReader, type Reply } from '../src/reader.js';

function readAll(chunks: Buffer[]): Reply[] {
  const replies: Reply[] = [];
  const reader = new ReplyReader((r) => replies.push(r));
  for (const c of chunks) reader.push(c);
  return replies;
}

const STREAM = Buffer.from([
  'INSERTED 1\r\n',
  'RESERVED 7 6\r\na\r\nb\0c\r\n',
  'FOUND 3 0\r\n\r\n',
  'OK 19\r\n---\n- default\n- kk\n\r\n',
  'OK\r\n',
  'RESERVED-MANY 2\r\nRESERVED 1 1\r\nx\r\nRESERVED 2 2\r\nyz\r\n',
  'RESERVED-MANY 0\r\n',
  'WAITING 3 31\r\n',
  'DUPLICATE 12\r\n',
].join(''), 'latin1');

const EXPECTED = [
  { line: 'INSERTED 1', word: 'INSERTED', args: ['1'] },
  { line: 'RESERVED 7 6', word: 'RESERVED', args: ['7', '6'], body: Buffer.from('a\r\nb\0c', 'latin1') },
  { line: 'FOUND 3 0', word: 'FOUND', args: ['3', '0'], body: Buffer.alloc(0) },
  { line: 'OK 19', word: 'OK', args: ['19'], body: Buffer.from('---\n- default\n- kk\n') },
  { line: 'OK', word: 'OK', args: [] },
  {
    line: 'RESERVED-MANY 2', word: 'RESERVED-MANY', args: ['2'], jobs: [
      { line: 'RESERVED 1 1', word: 'RESERVED', args: ['1', '1'], body: Buffer.from('x') },
      { line: 'RESERVED 2 2', word: 'RESERVED', args: ['2', '2'], body: Buffer.from('yz') },
    ],
  },
  { line: 'RESERVED-MANY 0', word: 'RESERVED-MANY', args: ['0'], jobs: [] },
  { line: 'WAITING 3 31', word: 'WAITING', args: ['3', '31'] },
  { line: 'DUPLICATE 12', word: 'DUPLICATE', args: ['12'] },
];

describe('ReplyReader', () => {
  it('frames every kind of reply from one chunk', () => {
    expect(readAll([STREAM])).toEqual(EXPECTED);
  });

  it('gives the same replies however the stream is cut: byte by byte, and at every split point', () => {
    expect(readAll([...STREAM].map((b) => Buffer.from([b])))).toEqual(EXPECTED);
    for (let cut = 1; cut < STREAM.length; cut++) {
      expect(readAll([STREAM.subarray(0, cut), STREAM.subarray(cut)])).toEqual(EXPECTED);
    }
  });

  it('joins a large body from many chunks', () => {
    const body = Buffer.alloc(1 << 20, 'q');
    const stream = Buffer.concat([Buffer.from(`RESERVED 9 ${body.length}\r\n`), body, Buffer.from('\r\nDELETED\r\n')]);
    const chunks: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 65536) chunks.push(stream.subarray(at, at + 65536));
    const replies = readAll(chunks);
    expect(replies.map((r) => r.word)).toEqual(['RESERVED', 'DELETED']);
    expect(replies[0]!.body!.equals(body)).toBe(true);
  });

  it('copies bodies out of the socket chunk', () => {
    const chunk = Buffer.from('FOUND 1 3\r\nabc\r\n');
    const [reply] = readAll([chunk]);
    chunk.fill(0);
    expect(reply!.body!.toString()).toBe('abc');
  });

  it('rejects what cannot be framed', () => {
    const bad = ['INSERTED 1\n', 'FOUND 1 3\r\nabcd\r\n', 'RESERVED 1 x\r\n', 'RESERVED-MANY 1\r\nINSERTED 1\r\n', 'RESERVED-MANY -1\r\n', `${'x'.repeat(5000)}`];
    for (const b of bad) expect(() => readAll([Buffer.from(b)]), b).toThrow(MalformedReplyError);
  });
});
