// Nothing a client sends can crash the server, grow its memory without
// bound, or disturb other clients.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { onCluster } from '../helpers/topology.js';

const ctx = sidecarPerTest();
const dial = () => ctx.dial();

it('an endless line is discarded and answered with one BAD_FORMAT', async () => {
  const a = await dial();
  for (let i = 0; i < 20; i++) a.send(Buffer.alloc(100_000, 'x'));
  a.send('\r\nlist-tube-used\r\n');
  expect(await a.line()).toBe('BAD_FORMAT');
  expect(await a.line()).toBe('USING default');
});

it('random bytes never crash the server nor touch another client\'s jobs', async () => {
  const [victim, fuzz] = [await dial(), await dial()];
  expect(await victim.cmd('put 0 0 60 4\r\nsafe')).toBe('INSERTED 1');
  const words = ['put ', 'reserve', 'delete ', 'release ', 'bury ', 'kick ', 'use ', 'watch ', 'ignore ', 'pause-tube ', 'stats', 'peek ', 'touch '];
  for (let i = 0; i < 400; i++) {
    const word = words[i % words.length]!;
    // Random payloads, but never a CRLF-less valid "reserve" line that would block the fuzzer.
    fuzz.send(Buffer.concat([Buffer.from(word), randomBytes(1 + (i % 50)), Buffer.from(i % 3 ? '\r\n' : '')]));
  }
  fuzz.send('\r\n'.repeat(3));
  await new Promise((r) => setTimeout(r, 300));
  fuzz.close();
  const check = await dial();
  expect(await check.cmd('peek 1')).toBe('FOUND 1 4\nsafe');
  expect(await victim.cmd('list-tube-used')).toBe('USING default');
});

it('stops reading from a client that floods while its reserve is blocked', async () => {
  const a = await dial();
  a.send('reserve\r\n');
  const chunk = Buffer.from('list-tube-used\r\n'.repeat(4096));
  for (let i = 0; i < 200; i++) a.send(chunk); // ~13 MB queued behind the blocked reserve
  await new Promise((r) => setTimeout(r, 500));
  // The server stopped reading: most of the flood is still in the client's own buffer.
  expect(a.socket.writableLength).toBeGreaterThan(5_000_000);
  const b = await dial();
  expect(await b.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
  expect((await a.reply(5000)).line).toBe('RESERVED 1 1');
  expect(await a.line()).toBe('USING default');
});

it.skipIf(onCluster)('answers OUT_OF_MEMORY when Redis is full, and stores nothing', async () => {
  const admin = new Redis(ctx.redis.url);
  try {
    const a = await dial();
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    await admin.config('SET', 'maxmemory', '1');
    expect(await a.cmd('put 0 0 60 1\r\ny')).toBe('OUT_OF_MEMORY');
    expect(await a.cmd('peek 1')).toBe('FOUND 1 1\nx');
    await admin.config('SET', 'maxmemory', '0');
    expect(await a.cmd('put 0 0 60 1\r\nz')).toBe('INSERTED 2');
  } finally {
    await admin.config('SET', 'maxmemory', '0');
    admin.disconnect();
  }
});

it('recovers when Redis loses its functions (FUNCTION FLUSH, restart, failover)', async () => {
  const admin = new Redis(ctx.redis.url);
  try {
    const a = await dial();
    expect(await a.cmd('put 0 0 60 1\r\nx')).toBe('INSERTED 1');
    await admin.function('FLUSH');
    expect(await a.cmd('put 0 0 60 1\r\ny')).toBe('INSERTED 2');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nx');
  } finally {
    admin.disconnect();
  }
});
