// Every command and every error word against a live redstalk.
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client, type TubeSetting } from '../src/client.js';
import { DECODERS } from '../src/commands.js';
import {
  BadFormatError, ConnectionError, DeadlineSoonError, DrainingError, errorFor, ExpectedCrlfError, InternalError,
  JobTooBigError, NotFoundError, NotIgnoredError, OutOfMemoryError, TimedOutError, UnknownCommandError,
} from '../src/errors.js';
import { ReplyReader, type Reply } from '../src/reader.js';
import { hasBeanstalkd, startBeanstalkd } from '../../../test/helpers/beanstalkd.js';
import { redisCommand, Servers, type Sidecar } from './harness.js';

const servers = new Servers();
let server: Sidecar;
const open: Client[] = [];

async function client(port = server.port): Promise<Client> {
  const c = await Client.connect({ port, timeoutMs: 5000 });
  open.push(c);
  return c;
}

/** A fresh server and a connection to it. */
async function fresh(): Promise<Client> {
  return client((await servers.fresh()).port);
}

beforeAll(async () => { server = await servers.fresh(); });
afterEach(async () => { await Promise.all(open.splice(0).map((c) => c.close())); });
afterAll(() => servers.stopAll());

describe('jobs', () => {
  it('put, peek, reserve, delete: bodies are Buffers, strings go in as UTF-8', async () => {
    const c = await fresh();
    const binary = Buffer.from([0, 1, 13, 10, 255, 0x80]);
    expect(await c.put(binary, { priority: 5, ttr: 30 })).toBe(1);
    expect(await c.put('héllo')).toBe(2);
    expect(await c.peek(1)).toEqual({ id: 1, body: binary });
    expect((await c.peekReady()).id).toBe(1);
    const job = await c.reserve();
    expect(job).toEqual({ id: 1, body: binary });
    const second = await c.reserveWithTimeout(0);
    expect(second.body.toString()).toBe('héllo');
    await c.delete(1);
    await c.delete(2);
    await expect(c.peek(1)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.peekReady()).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.delete(1)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('release (with a delay), bury, kick, kick-job, touch, reserve-job, peek-delayed, peek-buried', async () => {
    const c = await fresh();
    await c.put('a');
    await c.put('b');
    const a = await c.reserve();
    await c.touch(a.id);
    await c.release(a.id, { priority: 7, delay: 60 });
    expect((await c.peekDelayed()).id).toBe(a.id);
    expect((await c.statsJob(a.id))).toMatchObject({ state: 'delayed', pri: 7, releases: 1 });
    const b = await c.reserveJob(2);
    await c.bury(b.id, 9);
    expect((await c.peekBuried()).id).toBe(2);
    await expect(c.reserveJob(2)).resolves.toMatchObject({ id: 2 });
    await c.bury(2);
    expect(await c.kick(10)).toBe(1); // buried first
    expect((await c.statsJob(2)).state).toBe('ready');
    await c.kickJob(a.id); // delayed -> ready
    expect((await c.statsJob(a.id)).state).toBe('ready');
    await expect(c.kickJob(99)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.touch(2)).rejects.toBeInstanceOf(NotFoundError); // not reserved
    await expect(c.release(99)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.bury(99)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.reserveJob(99)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reserve-with-timeout 0 on nothing: TimedOutError; a blocked reserve gets the next put', async () => {
    const c = await client();
    await c.use('blocking');
    await c.watch('blocking');
    await c.ignore('default');
    await expect(c.reserveWithTimeout(0)).rejects.toBeInstanceOf(TimedOutError);
    const waiting = c.reserve();
    const producer = await client();
    await producer.use('blocking');
    const id = await producer.put('wake');
    await expect(waiting).resolves.toEqual({ id, body: Buffer.from('wake') });
    await c.delete(id);
  });

  it('DEADLINE_SOON: a reserve while holding a job in its last second', async () => {
    const c = await client();
    await c.use('deadline');
    await c.watch('deadline');
    await c.ignore('default');
    await c.put('x', { ttr: 1 });
    const job = await c.reserve();
    await expect(c.reserveWithTimeout(2)).rejects.toBeInstanceOf(DeadlineSoonError);
    await expect(c.reserveMany(5, 2)).rejects.toBeInstanceOf(DeadlineSoonError);
    await c.delete(job.id);
  });

  it('JOB_TOO_BIG past max-job-size; BAD_FORMAT for arguments the server refuses', async () => {
    const c = await client();
    await expect(c.put(Buffer.alloc(65536))).rejects.toBeInstanceOf(JobTooBigError);
    await expect(c.use('-starts-with-a-dash')).rejects.toBeInstanceOf(BadFormatError);
    await expect(c.reserveMany(0, 0)).rejects.toBeInstanceOf(BadFormatError);
    await expect(c.reserveMany(1001, 0)).rejects.toBeInstanceOf(BadFormatError);
    await expect(c.roomConfig('r', { capacity: 0, checkinTimeout: 1, participantTimeout: 1, grace: 0 })).rejects.toBeInstanceOf(BadFormatError);
    // The connection is still in step.
    expect(await c.listTubeUsed()).toBe('default');
  });

  it('refuses, before sending, what would break the command line', async () => {
    const c = await client();
    await expect(c.use('a\r\nput 0 0 1 1')).rejects.toBeInstanceOf(TypeError);
    await expect(c.put('x', { priority: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(c.delete(1.5)).rejects.toBeInstanceOf(RangeError);
    expect(await c.listTubeUsed()).toBe('default');
  });
});

describe('tubes and stats', () => {
  it('use, watch, ignore, list-tubes*, NOT_IGNORED', async () => {
    const c = await fresh();
    expect(await c.use('emails')).toBe('emails');
    expect(await c.listTubeUsed()).toBe('emails');
    expect(await c.watch('emails')).toBe(2);
    expect(await c.listTubesWatched()).toEqual(['default', 'emails']);
    expect(await c.ignore('default')).toBe(1);
    await expect(c.ignore('emails')).rejects.toBeInstanceOf(NotIgnoredError);
    expect((await c.listTubes()).sort()).toEqual(['default', 'emails']);
  });

  it('stats, stats-tube, stats-job as typed objects with numbers as numbers', async () => {
    const c = await fresh();
    await c.use('typed');
    const id = await c.put('x', { priority: 3, delay: 0, ttr: 40 });
    const job = await c.statsJob(id);
    expect(job).toMatchObject({ id, tube: 'typed', state: 'ready', pri: 3, ttr: 40, reserves: 0 });
    expect(typeof job.age).toBe('number');
    const tube = await c.statsTube('typed');
    expect(tube).toMatchObject({ 'name': 'typed', 'current-jobs-ready': 1, 'total-jobs': 1, 'pause': 0 });
    const stats = await c.stats();
    expect(stats).toMatchObject({ 'current-jobs-ready': 1, 'cmd-put': 1, 'max-job-size': 65535, 'draining': false, 'version': '1.13' });
    expect(typeof stats['rusage-utime']).toBe('number');
    expect(typeof stats.id).toBe('string');
    await expect(c.statsJob(999)).rejects.toBeInstanceOf(NotFoundError);
    await expect(c.statsTube('nosuch')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('pause-tube', async () => {
    const c = await client();
    await c.use('paused');
    await c.pauseTube('paused', 60);
    expect((await c.statsTube('paused'))['pause']).toBe(60);
    await c.pauseTube('paused', 0);
    await expect(c.pauseTube('nosuch', 1)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('reserve-many', () => {
  it('takes up to count jobs in priority order, then TIMED_OUT; a blocked one wakes on a put', async () => {
    const c = await client();
    await c.use('many');
    await c.watch('many');
    await c.ignore('default');
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await c.put(`job ${i}`, { priority: 10 - i }));
    const first = await c.reserveMany(3, 0);
    expect(first.map((j) => j.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(first[0]!.body.toString()).toBe('job 4');
    const rest = await c.reserveMany(10, 0);
    expect(rest.map((j) => j.id)).toEqual([ids[1], ids[0]]);
    for (const j of [...first, ...rest]) expect((await c.statsJob(j.id)).state).toBe('reserved');
    await expect(c.reserveMany(1, 0)).rejects.toBeInstanceOf(TimedOutError);
    await Promise.all([...first, ...rest].map((j) => c.delete(j.id)));

    const blocked = c.reserveMany(5, 5);
    const producer = await client();
    await producer.use('many');
    const late = await producer.put('late');
    expect((await blocked).map((j) => j.id)).toEqual([late]);
    await c.delete(late);
  });
});

/** Polls until `ok` (a live server's timers take their time). */
async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TCP proxy to a server that closes its first connection when the server answers
 * INSERTED, without passing the reply on: a put stored whose reply is lost.
 */
async function droppingFirstInsert(port: number): Promise<{ port: number; close(): Promise<void> }> {
  let dropped = false;
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((downstream) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [downstream, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => { downstream.destroy(); upstream.destroy(); });
    }
    downstream.pipe(upstream);
    upstream.on('data', (d: Buffer) => {
      if (!dropped && d.includes('INSERTED')) {
        dropped = true;
        downstream.destroy();
      } else {
        downstream.write(d);
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as net.AddressInfo).port,
    close: () => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      proxy.close(() => resolve());
    }),
  };
}

describe('put-with and tube-set (redstalk)', () => {
  it('put-with: INSERTED, then DUPLICATE with the first id for the same key in the tube (also after its delete); keys are per tube', async () => {
    const c = await fresh();
    await c.use('mail');
    expect(await c.putWith('hi', { key: 'a7' })).toEqual({ id: 1, duplicate: false });
    expect(await c.putWith('another body', { key: 'a7', priority: 1 })).toEqual({ id: 1, duplicate: true });
    await c.delete(1);
    expect(await c.putWith('hi', { key: 'a7' })).toEqual({ id: 1, duplicate: true }); // within dedup-window
    expect(await c.statsTube('mail')).toMatchObject({ 'total-jobs': 1, 'duplicate-puts': 2, 'dedup-window': 300, 'jobs-expired': 0 });
    await c.use('other');
    expect(await c.putWith('hi', { key: 'a7' })).toEqual({ id: 2, duplicate: false });
    expect(await c.putWith('no key')).toEqual({ id: 3, duplicate: false });
    expect((await c.statsTube('default'))['duplicate-puts']).toBeUndefined(); // beanstalkd's 14 fields only
  });

  it('put-with expire: a job no reserve took is buried or deleted, and counted in jobs-expired', async () => {
    const c = await fresh();
    await c.use('expiring');
    const buried = await c.putWith('b', { expire: 1, onExpiry: 'bury' });
    const deleted = await c.putWith('d', { expire: 1 });
    const kept = await c.putWith('k', { expire: 60 });
    await until('both expired', async () => (await c.statsTube('expiring'))['jobs-expired'] === 2);
    expect((await c.statsJob(buried.id)).state).toBe('buried');
    await expect(c.statsJob(deleted.id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await c.statsJob(kept.id)).state).toBe('ready');
  });

  it('tube-set: settings in stats-tube, max-reserved holds back a reserve; BAD_FORMAT for another setting or a rate over 100000', async () => {
    const c = await fresh();
    await c.use('limited');
    await c.watch('limited');
    await c.ignore('default');
    await c.tubeSet('limited', 'max-reserved', 1);
    await c.tubeSet('limited', 'reserve-rate', 100);
    await c.tubeSet('limited', 'dedup-window', 3600);
    await c.put('a');
    await c.put('b');
    expect(await c.statsTube('limited')).toMatchObject({ 'max-reserved': 1, 'reserve-rate': 100, 'dedup-window': 3600, 'jobs-expired': 0, 'duplicate-puts': 0 });
    const job = await c.reserveWithTimeout(0);
    await expect(c.reserveWithTimeout(0)).rejects.toBeInstanceOf(TimedOutError);
    await c.delete(job.id);
    expect((await c.reserveWithTimeout(0)).body.toString()).toBe('b');
    await expect(c.tubeSet('limited', 'reserve-rate', 100_001)).rejects.toBeInstanceOf(BadFormatError);
    await expect(c.tubeSet('limited', 'speed' as TubeSetting, 1)).rejects.toBeInstanceOf(BadFormatError);
  });

  it('a put-with with a key whose reply is lost is sent again: DUPLICATE with the stored job\'s id, one job in the tube', async () => {
    const sidecar = await servers.fresh();
    const proxy = await droppingFirstInsert(sidecar.port);
    try {
      const c = await Client.connect({ port: proxy.port, retry: { baseMs: 10, maxMs: 100 } });
      open.push(c);
      await c.use('retried');
      expect(await c.putWith('once', { key: 'order-1' })).toEqual({ id: 1, duplicate: true });
      expect(await c.listTubeUsed()).toBe('retried');
      const direct = await client(sidecar.port);
      expect(await direct.statsTube('retried')).toMatchObject({ 'total-jobs': 1, 'current-jobs-ready': 1, 'duplicate-puts': 1 });
    } finally {
      await proxy.close();
    }
  });

  it('idempotent: a plain put whose reply is lost is sent again, with its random key, and gives the one job\'s id', async () => {
    const sidecar = await servers.fresh();
    const proxy = await droppingFirstInsert(sidecar.port);
    try {
      const c = await Client.connect({ port: proxy.port, idempotent: true, retry: { baseMs: 10, maxMs: 100 } });
      open.push(c);
      expect(await c.put('once')).toBe(1);
      expect(await c.put('twice')).toBe(2);
      const direct = await client(sidecar.port);
      expect(await direct.statsTube('default')).toMatchObject({ 'total-jobs': 2, 'duplicate-puts': 1 });
    } finally {
      await proxy.close();
    }
  });
});

describe('waiting rooms', () => {
  it('enter, check, leave, room-config, room-rate, pause-room, room-lottery, stats-room, list-rooms', async () => {
    const c = await fresh();
    await c.roomConfig('lobby', { capacity: 1, checkinTimeout: 30, participantTimeout: 120, grace: 0 });
    expect(await c.enter('lobby', 'ann')).toEqual({ state: 'entered' });
    expect(await c.enter('lobby', 'bob')).toMatchObject({ state: 'waiting', position: 1 });
    expect(await c.check('lobby', 'bob')).toMatchObject({ state: 'waiting', position: 1 });
    await c.leave('lobby', 'ann');
    expect(await c.check('lobby', 'bob')).toEqual({ state: 'ready' });
    await expect(c.leave('lobby', 'zed')).rejects.toBeInstanceOf(NotFoundError);
    await c.roomRate('lobby', 10);
    await c.pauseRoom('lobby', true);
    await c.roomLottery('lobby', 30);
    const stats = await c.statsRoom('lobby');
    expect(stats).toMatchObject({ 'name': 'lobby', 'capacity': 1, 'rate-limit': 10, 'paused': true, 'configured': true, 'waiting': 1 });
    expect(typeof stats['admission-rate']).toBe('number');
    await c.pauseRoom('lobby', false);
    await c.roomLottery('lobby', 0);
    expect(await c.listRooms()).toEqual(['lobby']);
    await expect(c.statsRoom('nosuch')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('pipelining', () => {
  it('keeps thousands of commands in flight on one connection, each answered in order', async () => {
    const c = await fresh();
    const n = 3000;
    const ids = await Promise.all(Array.from({ length: n }, (_, i) => c.put(`body ${i}`)));
    expect(ids).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const mixed = await Promise.all([
      c.peek(1), c.statsJob(2), c.delete(3), c.peek(3).catch((e: unknown) => e), c.listTubeUsed(), c.reserveMany(4, 0), c.put('last'),
    ]);
    expect((mixed[0] as { body: Buffer }).body.toString()).toBe('body 0');
    expect(mixed[1]).toMatchObject({ id: 2, state: 'ready' });
    expect(mixed[2]).toBeUndefined();
    expect(mixed[3]).toBeInstanceOf(NotFoundError);
    expect(mixed[4]).toBe('default');
    expect((mixed[5] as { id: number }[]).map((j) => j.id)).toEqual([1, 2, 4, 5]);
    expect(mixed[6]).toBe(n + 1);
    expect(c.inFlight).toBe(0);
  });

  it('commands behind a blocked reserve wait for it', async () => {
    const c = await client();
    await c.watch('behind');
    await c.ignore('default');
    const order: string[] = [];
    const reserved = c.reserveWithTimeout(1).catch(() => order.push('reserve'));
    const used = c.listTubeUsed().then(() => order.push('list-tube-used'));
    await Promise.all([reserved, used]);
    expect(order).toEqual(['reserve', 'list-tube-used']);
  });
});

describe('the connection', () => {
  it('quit closes it; later commands fail with ConnectionError', async () => {
    const c = await client();
    await c.quit();
    await expect(c.stats()).rejects.toBeInstanceOf(ConnectionError);
  });

  it('close fails what is still owed', async () => {
    const c = await client();
    await c.watch('never');
    await c.ignore('default');
    const waiting = c.reserve();
    await c.close();
    await expect(waiting).rejects.toBeInstanceOf(ConnectionError);
  });

  it('connect: ConnectionError when nothing listens', async () => {
    const unused = net.createServer();
    await new Promise<void>((r) => unused.listen(0, '127.0.0.1', r));
    const port = (unused.address() as net.AddressInfo).port;
    await new Promise((r) => unused.close(r));
    await expect(Client.connect({ port, timeoutMs: 2000 })).rejects.toBeInstanceOf(ConnectionError);
  });
});

/** Raw bytes on a socket, replies through the client's reader: for what the typed API cannot send. */
async function rawReplies(port: number, bytes: string, count: number): Promise<Reply[]> {
  const replies: Reply[] = [];
  const socket = net.connect(port, '127.0.0.1');
  const reader = new ReplyReader((r) => replies.push(r));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got ${replies.map((r) => r.line).join(', ')}`)), 3000);
    socket.on('data', (d: Buffer) => {
      reader.push(d);
      if (replies.length >= count) { clearTimeout(timer); resolve(); }
    });
    socket.once('connect', () => socket.write(Buffer.from(bytes, 'latin1')));
  });
  socket.destroy();
  return replies;
}

describe('error words the typed API cannot provoke', () => {
  it('EXPECTED_CRLF and UNKNOWN_COMMAND', async () => {
    const [crlf, unknown] = await rawReplies(server.port, 'put 0 0 10 2\r\nhello\r\n', 2);
    expect(() => DECODERS.put(crlf!)).toThrow(ExpectedCrlfError);
    expect(errorFor(unknown!, 'llo')).toBeInstanceOf(UnknownCommandError);
  });

  it('DRAINING after SIGUSR1', async () => {
    const sidecar = await servers.fresh();
    const c = await client(sidecar.port);
    sidecar.child.kill('SIGUSR1');
    for (let i = 0; i < 100 && !(await c.stats()).draining; i++) await new Promise((r) => setTimeout(r, 20));
    await expect(c.put('x')).rejects.toBeInstanceOf(DrainingError);
  });

  it('OUT_OF_MEMORY when Redis refuses writes (maxmemory)', async () => {
    const redis = await servers.anotherRedis();
    const sidecar = await servers.sidecar(['--redis', redis.url, '--prefix', 'oom']);
    const c = await client(sidecar.port);
    await c.put('x'); // the sidecar has started (a full Redis would stop its start)
    expect(await redisCommand(redis.url, 'CONFIG', 'SET', 'maxmemory', '1')).toBe('+OK');
    await expect(c.put('x')).rejects.toBeInstanceOf(OutOfMemoryError);
    await redisCommand(redis.url, 'CONFIG', 'SET', 'maxmemory', '0');
  });

  it('INTERNAL_ERROR while Redis is down', async () => {
    const redis = await servers.anotherRedis();
    const sidecar = await servers.sidecar(['--redis', redis.url, '--prefix', 'down']);
    const c = await client(sidecar.port);
    await c.put('x');
    await redis.stop();
    await expect(c.put('y')).rejects.toBeInstanceOf(InternalError);
    await c.close();
    await sidecar.stop();
  });
});

describe.runIf(hasBeanstalkd)('against the real beanstalkd', () => {
  it('speaks beanstalkd\'s commands; the extensions are refused', async () => {
    const bs = await startBeanstalkd();
    try {
      const c = await client(bs.port);
      const id = await c.put(Buffer.from([0, 13, 10]), { ttr: 30 });
      expect(await c.reserve()).toEqual({ id, body: Buffer.from([0, 13, 10]) });
      expect(await c.statsJob(id)).toMatchObject({ id, tube: 'default', state: 'reserved', ttr: 30 });
      expect((await c.stats())['current-jobs-reserved']).toBe(1);
      await c.delete(id);
      await expect(c.reserveMany(2, 0)).rejects.toBeInstanceOf(BadFormatError);
      await expect(c.enter('lobby', 'ann')).rejects.toBeInstanceOf(UnknownCommandError);
      await expect(c.tubeSet('default', 'max-reserved', 1)).rejects.toBeInstanceOf(UnknownCommandError);
      expect(await c.listTubes()).toEqual(['default']);
    } finally {
      await Promise.all(open.splice(0).map((c) => c.close()));
      await bs.stop();
    }
  });
});
