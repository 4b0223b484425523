// Every command and its reply pass one point: at trace level, the sidecar
// logs each command with its reply word, in order, pipelined or not, for
// batched commands, waits, framing errors and parse errors alike.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';

let redis: TestRedis;
let sidecar: TestSidecar;
const records: Array<{ msg: string; command?: string; reply?: string; ms?: number }> = [];

beforeAll(async () => {
  redis = await startRedis();
  const sink = new Writable({ write(chunk, _enc, done) { records.push(JSON.parse(String(chunk))); done(); } });
  // One shard: the hook sees real ids, which this test spells out.
  sidecar = await startRedstalk({ redisUrl: redis.url, shards: 1, logger: pino({ level: 'trace' }, sink), maxJobSize: 10 });
});
afterAll(async () => { await sidecar.stop(); await redis.stop(); });

describe('the dispatch point', () => {
  it('sees every command and its reply, in order', async () => {
    const w = await Wire.connect(sidecar.port);
    w.send('put 0 0 60 1\r\na\r\nput 0 0 60 1\r\nb\r\nreserve\r\nbogus\r\nput 0 0 60 11\r\n0123456789a\r\n'
      + `${'x'.repeat(300)}\r\nput 0 0 60 1\r\nbb\r\nreserve-with-timeout 0\r\nreserve-with-timeout 0\r\ndelete 1\r\nstats-job 9\r\nlist-tube-used\r\n`);
    const expected = ['INSERTED 1', 'INSERTED 2', 'RESERVED 1 1', 'UNKNOWN_COMMAND', 'JOB_TOO_BIG', 'BAD_FORMAT',
      // the body's terminator was "b\r": the "\n" left starts the next line
      'EXPECTED_CRLF', 'UNKNOWN_COMMAND', 'RESERVED 2 1', 'DELETED', 'NOT_FOUND', 'USING default'];
    const replies: string[] = [];
    for (let i = 0; i < expected.length; i++) replies.push((await w.reply()).line);
    expect(replies).toEqual(expected);
    w.close();
    const seen = records.filter((r) => r.msg === 'command');
    expect(seen.map((r) => [r.command, r.reply])).toEqual([
      ['put', 'INSERTED 1'], ['put', 'INSERTED 2'], ['reserve', 'RESERVED 1 1'], ['(invalid)', 'UNKNOWN_COMMAND'],
      ['put', 'JOB_TOO_BIG'], ['(too long)', 'BAD_FORMAT'], ['put', 'EXPECTED_CRLF'], ['(invalid)', 'UNKNOWN_COMMAND'],
      ['reserve-with-timeout', 'RESERVED 2 1'], ['delete', 'DELETED'], ['stats-job', 'NOT_FOUND'], ['list-tube-used', 'USING default'],
    ]);
    for (const r of seen) expect(r.ms).toBeGreaterThanOrEqual(0);
  });
});
