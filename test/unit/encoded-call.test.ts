// What src/store/redis/encoded-call.ts relies on from ioredis, pinned: it
// subclasses ioredis' Command, the client writes what toWritable() returns,
// replies come back as Buffers, and a Redis Cluster routes by getSlot(), which
// returns the private `slot` field the subclass sets. A fake server stands in
// for Redis: it records the bytes and answers what each test scripts.
import net from 'node:net';
import { Cluster, Command, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { EncodedCommand, sendEncoded } from '../../src/store/redis/encoded-call.js';
import { isFunctionMissing } from '../../src/store/redis/functions.js';
import { encoded, RespWriter } from '../../src/store/redis/resp.js';

interface Fake { port: number; received: Buffer[]; close(): Promise<void> }

/** A TCP server that answers each FCALL written with the next of `answers` (a command per write). */
async function fakeRedis(answers: string[]): Promise<Fake> {
  const received: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (d) => {
      // What ioredis says on connecting (CLIENT SETINFO) is answered +OK and not kept.
      if (!d.includes('FCALL')) { socket.write('+OK\r\n'.repeat(d.toString('latin1').match(/\*\d+\r\n\$/g)?.length ?? 1)); return; }
      received.push(d);
      socket.write(answers.shift() ?? '-ERR no more answers\r\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

const open: Array<{ close(): unknown }> = [];
afterEach(async () => { for (const o of open.splice(0)) await o.close(); });

async function client(answers: string[]): Promise<{ fake: Fake; redis: Redis }> {
  const fake = await fakeRedis(answers);
  const redis = new Redis(fake.port, '127.0.0.1', { enableReadyCheck: false, lazyConnect: true, maxRetriesPerRequest: 0 });
  await redis.connect();
  await redis.call('PING'); // answered after what ioredis sent on connecting: nothing of it shares a write with an FCALL
  open.push(fake, { close: () => redis.disconnect() });
  return { fake, redis };
}

function fcall(): Buffer {
  const w = new RespWriter();
  w.int(1);
  w.string('{t}:jobs');
  w.string('arg');
  return w.command(encoded('FCALL', 'redstalk_0123456789ab_jobs_batch'), 2);
}

describe('the hand-written call through ioredis', () => {
  it('is an ioredis Command whose slot is the one given, not one read from arguments it does not keep', () => {
    const cmd = new EncodedCommand(fcall(), 1234);
    expect(cmd).toBeInstanceOf(Command);
    expect(cmd.getSlot()).toBe(1234);
    expect(new EncodedCommand(fcall(), null).getSlot()).toBeNull();
    expect(cmd.args).toEqual([]);
  });

  it('is written as its bytes, unchanged, and answered in Buffers', async () => {
    const { fake, redis } = await client(['$3\r\nabc\r\n']);
    const bytes = fcall();
    expect(await redis.sendCommand(new EncodedCommand(bytes, null))).toEqual(Buffer.from('abc'));
    expect(Buffer.concat(fake.received)).toEqual(bytes);
  });

  it('loads the library and sends the same bytes again when Redis answers that the function does not exist', async () => {
    const { fake, redis } = await client(['-ERR Function not found\r\n', '-ERR Function not found\r\n', ':7\r\n']);
    let loads = 0;
    const bytes = fcall();
    expect(await sendEncoded(redis, bytes, null, async () => { loads++; })).toBe(7);
    expect(loads).toBe(2);
    expect(fake.received.map((b) => b.equals(bytes))).toEqual([true, true, true]);
  });

  it('gives up after three sends, and passes any other error on at once', async () => {
    const { redis } = await client(['-ERR Function not found\r\n', '-ERR Function not found\r\n', '-ERR Function not found\r\n', '-WRONGTYPE x\r\n']);
    const err = await sendEncoded(redis, fcall(), null, async () => {}).catch((e: unknown) => e);
    expect(isFunctionMissing(err)).toBe(true);
    await expect(sendEncoded(redis, fcall(), null, async () => { throw new Error('no load expected'); })).rejects.toThrow(/^WRONGTYPE/);
  });

  it('relies on a Redis Cluster routing a command by command.getSlot() (ioredis\' source)', () => {
    // Cluster.sendCommand reads the slot through getSlot() when no node is given; were that to change,
    // the batch call would go to a random node (and come back MOVED, or fail).
    expect(Cluster.prototype.sendCommand.toString()).toMatch(/command\.getSlot\(\)/);
  });
});
