// Micro-benchmarks of the sidecar's hot path, no Redis involved:
//   npm run bench:micro
// parsing a command line, building and encoding a batch call, decoding its
// reply, and a connection taking pipelined puts from the socket to their
// replies (framing, parsing, dispatch, op, completion, reply write). They
// guard speed work: compare ops/s before and after a change in one run.
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { pino } from 'pino';
import { bench, describe } from 'vitest';
import { Dispatcher } from '../../src/commands/dispatch.js';
import type { Services } from '../../src/commands/session.js';
import { parseCommand } from '../../src/protocol/parser.js';
import { jobReply, line } from '../../src/protocol/replies.js';
import { Connection, type ConnectionHost } from '../../src/server/connection.js';
import { Layout } from '../../src/store/layout.js';
import { jobOps, type AnyJobOp } from '../../src/store/ops.js';
import { BatchEncoder, decodeBatch } from '../../src/store/redis/batch-codec.js';
import { encoded } from '../../src/store/redis/resp.js';

const BATCH = 512;
const body = Buffer.alloc(100, 'x');
const none = () => {};
const encoder = new BatchEncoder(new Layout('bench').keys(0));
const evalsha = encoded('EVALSHA', '0'.repeat(40));

describe('parse a command line', () => {
  bench('put 0 0 60 100', () => { parseCommand('put 0 0 60 100'); });
  bench('delete 1234567', () => { parseCommand('delete 1234567'); });
  bench('reserve-with-timeout 5', () => { parseCommand('reserve-with-timeout 5'); });
});

const puts: AnyJobOp[] = Array.from({ length: BATCH }, () => jobOps.put(null, none, 'default', 0, 0, 60, body));
const mixed: AnyJobOp[] = Array.from({ length: BATCH }, (_, i) => [
  jobOps.put(null, none, `t${i % 8}`, 0, 0, 60, body),
  jobOps.delete(null, none, 'n:1', String(i), `t${i % 8}`),
  jobOps.reserve(null, none, 'n:1', ['t1', 't2'], 1),
][i % 3]!);

describe(`a batch call of ${BATCH} ops`, () => {
  bench('build the put ops', () => {
    for (let i = 0; i < BATCH; i++) jobOps.put(null, none, 'default', 0, 0, 60, body);
  });
  bench('encode: puts, one tube', () => { encoder.encode(puts, evalsha); });
  bench('encode: puts, deletes and reserves over 8 tubes', () => { encoder.encode(mixed, evalsha); });
  const putReply = puts.map((_, i) => Buffer.from(String(i + 1)));
  bench('decode: put ids', () => { decodeBatch(puts, putReply); });
});

describe('replies', () => {
  bench('INSERTED <id>', () => { line('INSERTED 1234567'); });
  bench('RESERVED <id> <bytes> + body', () => { jobReply('RESERVED', '1234567', body); });
});

/** A socket that swallows writes, and a host whose batch answers every op at once. */
function connection(): { feed(data: Buffer): void; written(): number } {
  let written = 0;
  const socket = Object.assign(new EventEmitter(), {
    writableLength: 0, destroyed: false, writableEnded: false,
    setNoDelay() {}, cork() {}, uncork() {}, pause() {}, resume() {}, end() {}, destroy() {},
    write(b: Buffer) { written += b.length; return true; },
  });
  const services = { maxJobSize: 65535, draining: () => false, countCommand: none } as unknown as Services;
  let id = 0;
  const host: ConnectionHost = {
    dispatcher: new Dispatcher(services), log: pino({ level: 'silent' }), instruments: null, authRequired: false,
    submit: (op) => op.done(op, String(++id), null),
    dueIn: none, becameProducer: none, becameWorker: none, halfClosed: none, closed: none, strayed: none, jobTimed: none,
  };
  new Connection(1, 'bench', socket as unknown as net.Socket, host);
  return { feed: (data) => socket.emit('data', data), written: () => written };
}

describe('a connection', () => {
  const c = connection();
  const pipelined = Buffer.from(`put 0 0 60 100\r\n${'x'.repeat(100)}\r\n`.repeat(100));
  // Replies leave at the end of the tick (one write per connection).
  const tick = () => new Promise<void>((resolve) => process.nextTick(resolve));
  bench('100 pipelined puts: socket to replies', async () => { c.feed(pipelined); await tick(); }, {
    setup: async () => {
      c.feed(pipelined);
      await tick();
      if (c.written() < 100 * 'INSERTED 1\r\n'.length) throw new Error('the connection did not answer the puts');
    },
  });
});
