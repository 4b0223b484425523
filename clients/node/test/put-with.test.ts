// put-with and tube-set against a scripted server in this process, which drops
// connections and stays silent on cue: a put-with with a key whose reply is lost
// is sent again on a new connection, a plain put never is.
import { afterEach, describe, expect, it } from 'vitest';
import { Client, type ConnectOptions, type OnExpiry } from '../src/client.js';
import { DECODERS } from '../src/commands.js';
import { ConnectionError } from '../src/errors.js';
import { fakeServer, type FakeServer, type Script } from './harness.js';

const started: FakeServer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(started.splice(0).map((s) => s.close()));
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Quick reconnects, so the tests do not wait out the default backoff. */
const FAST = { baseMs: 1, maxMs: 10 };

async function setup(script: Script, options: ConnectOptions = {}): Promise<{ server: FakeServer; c: Client }> {
  const server = await fakeServer(script);
  started.push(server);
  const c = await Client.connect({ port: server.port, retry: FAST, ...options });
  clients.push(c);
  return { server, c };
}

/** The usual answer of a scripted server to `use`. */
function using(line: string): string | undefined {
  return line.startsWith('use ') ? `USING ${line.slice(4)}\r\n` : undefined;
}

describe('put-with', () => {
  it('sends its arguments, and reads INSERTED and DUPLICATE as the id and whether it is a duplicate', async () => {
    const { server, c } = await setup((line) => (line.includes(' first ') ? 'INSERTED 4\r\n' : 'DUPLICATE 4\r\n'));
    expect(await c.putWith('hello', { key: 'first' })).toEqual({ id: 4, duplicate: false });
    expect(await c.putWith('hello', { key: 'again', expire: 30, onExpiry: 'bury', priority: 5, delay: 6, ttr: 7 })).toEqual({ id: 4, duplicate: true });
    expect(server.connections).toEqual([['put-with first 0 delete 1024 0 60 5', 'put-with again 30 bury 5 6 7 5']]);
    expect(DECODERS['put-with']({ line: 'DUPLICATE 12', word: 'DUPLICATE', args: ['12'] })).toEqual({ id: 12, duplicate: true });
  });

  it('refuses, before sending, a key or on-expiry the server would refuse (it would read the body as a command)', async () => {
    const { server, c } = await setup(() => 'INSERTED 1\r\n');
    for (const key of ['a b', '', '-', 'k'.repeat(129), 'caf\u00e9']) await expect(c.putWith('x', { key }), key).rejects.toBeInstanceOf(TypeError);
    await expect(c.putWith('x', { onExpiry: 'keep' as OnExpiry })).rejects.toBeInstanceOf(TypeError);
    expect(await c.putWith('x', { key: 'k'.repeat(128) })).toEqual({ id: 1, duplicate: false });
    expect(server.connections[0]).toHaveLength(1);
  });
});

describe('a put-with with a key whose reply is lost', () => {
  it('is sent again on a new connection, into its tube; DUPLICATE resolves it with the first job\'s id', async () => {
    const { server, c } = await setup((line, socket, connection) => {
      if (line.startsWith('put-with') && connection === 0) socket.destroy(); // stored, say, but the reply is lost
      else return using(line) ?? (line.startsWith('put-with') ? 'DUPLICATE 7\r\n' : 'USING mail\r\n');
    });
    await c.use('mail');
    expect(await c.putWith('hi', { key: 'order-1234' })).toEqual({ id: 7, duplicate: true });
    expect(await c.listTubeUsed()).toBe('mail');
    const [first, second] = server.connections;
    expect(first).toEqual(['use mail', 'put-with order-1234 0 delete 1024 0 60 2']);
    expect(second).toEqual(['use mail', 'put-with order-1234 0 delete 1024 0 60 2', 'list-tube-used']);
  });

  it('puts owed in several tubes go back each into its own, a put only once its use has answered; the used tube comes back', async () => {
    const { server, c } = await setup((line, socket, connection) => {
      if (line.startsWith('put-with') && connection === 0) socket.destroy();
      else if (line === 'use b' && connection === 1) return 'INTERNAL_ERROR\r\n'; // then put k2 must not go into a
      else return using(line) ?? (line.startsWith('put-with k1') ? 'INSERTED 1\r\n' : 'DUPLICATE 2\r\n');
    });
    await c.use('a');
    const replies = await Promise.allSettled([c.putWith('x', { key: 'k1' }), c.use('b'), c.putWith('y', { key: 'k2' }), c.use('c')]);
    expect(replies.map((r) => (r.status === 'fulfilled' ? r.value : r.reason))).toEqual([
      { id: 1, duplicate: false },
      expect.any(ConnectionError), // the outcome of a use is unknown, as for any command but a keyed put
      { id: 2, duplicate: true },
      expect.any(ConnectionError),
    ]);
    const put = (key: string) => `put-with ${key} 0 delete 1024 0 60 1`;
    expect(server.connections).toEqual([
      ['use a', put('k1')],
      ['use a', put('k1'), 'use b'],
      ['use b', put('k2'), 'use c'],
    ]);
  });

  it('many in flight: each resolves once, with its key\'s one id, in order', async () => {
    const ids = new Map<string, number>();
    const { server, c } = await setup((line, socket, connection) => {
      const key = line.split(' ')[1]!;
      const known = ids.get(key);
      if (known === undefined) ids.set(key, ids.size + 1);
      if (connection === 0 && ids.size === 50) socket.destroy(); // the 50th is stored, its reply lost, the rest unread
      else return known === undefined ? `INSERTED ${ids.get(key)}\r\n` : `DUPLICATE ${known}\r\n`;
      return undefined;
    });
    const n = 200;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => c.putWith(`body ${i}`, { key: `job-${i}` })));
    expect(results.map((r) => r.id)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(results.filter((r) => r.duplicate).map((r) => r.id)).toEqual([50]);
    expect(server.connections.map((lines) => lines.length)).toEqual([50, 151]);
    expect(c.inFlight).toBe(0);
  });

  it('gives the new connection the watch list back, after the used tube (an ignore of the last tube changes nothing)', async () => {
    const { server, c } = await setup((line, socket, connection) => {
      if (line.startsWith('put-with') && connection === 0) socket.destroy();
      else if (line.startsWith('put-with')) return 'INSERTED 5\r\n';
      else if (line.startsWith('watch ')) return 'WATCHING 2\r\n';
      else if (line === 'ignore emails' && connection === 0) return 'NOT_IGNORED\r\n';
      else if (line.startsWith('ignore ')) return 'WATCHING 1\r\n';
      else if (line === 'list-tube-used') return 'USING out\r\n';
      return using(line);
    });
    await c.use('out');
    await c.watch('emails');
    await c.watch('sms');
    await c.ignore('default');
    await c.ignore('sms');
    await expect(c.ignore('emails')).rejects.toThrow(); // the last one: refused, still watched
    expect(await c.putWith('x', { key: 'k' })).toEqual({ id: 5, duplicate: false });
    expect(await c.listTubeUsed()).toBe('out'); // sent once the session is back
    expect(server.connections[1]).toEqual(['use out', 'put-with k 0 delete 1024 0 60 1', 'watch emails', 'ignore default', 'list-tube-used']);
  });

  it('is sent again when no reply comes within replyTimeoutMs', async () => {
    const { server, c } = await setup((line, _socket, connection) => (connection === 0 ? undefined : 'INSERTED 3\r\n'),
      { retry: { ...FAST, replyTimeoutMs: 100 } });
    expect(await c.putWith('x', { key: 'slow' })).toEqual({ id: 3, duplicate: false });
    expect(server.connections).toHaveLength(2);
  });

  it('gives the new connection the token back; commands called meanwhile wait for it, after the put', async () => {
    let dropped = () => {};
    const drop = new Promise<void>((resolve) => { dropped = resolve; });
    const { server, c } = await setup((line, socket, connection) => {
      if (line.startsWith('auth')) return 'OK\r\n';
      if (line.startsWith('put-with') && connection === 0) {
        socket.destroy();
        dropped();
        return undefined;
      }
      return line.startsWith('put-with') ? 'INSERTED 9\r\n' : 'USING default\r\n';
    }, { retry: { baseMs: 200, maxMs: 200 } });
    await c.auth('s3cret');
    const put = c.putWith('x', { key: 'k' });
    await drop;
    await sleep(20); // the client sees the close (its first reconnect is 100 to 200 ms away)
    const used = c.listTubeUsed();
    expect(c.inFlight).toBe(2);
    expect(await put).toEqual({ id: 9, duplicate: false });
    expect(await used).toBe('default');
    expect(server.connections[1]).toEqual(['auth s3cret', 'put-with k 0 delete 1024 0 60 1', 'list-tube-used']);
  });

  it('fails with ConnectionError after `attempts` connections, and the client is closed', async () => {
    const { server, c } = await setup((_line, socket) => { socket.destroy(); return undefined; }, { retry: { ...FAST, attempts: 3 } });
    await expect(c.putWith('x', { key: 'doomed' })).rejects.toBeInstanceOf(ConnectionError);
    await c.closed;
    expect(server.connections).toHaveLength(3);
    await expect(c.stats()).rejects.toBeInstanceOf(ConnectionError);
  });

  it('fails with ConnectionError when the client is closed while it waits to reconnect', async () => {
    let dropped = () => {};
    const drop = new Promise<void>((resolve) => { dropped = resolve; });
    const { server, c } = await setup((_line, socket) => {
      socket.destroy();
      dropped();
      return undefined;
    }, { retry: { baseMs: 60_000, maxMs: 60_000 } });
    const put = c.putWith('x', { key: 'k' });
    await drop;
    await c.close();
    await expect(put).rejects.toBeInstanceOf(ConnectionError);
    expect(server.connections).toHaveLength(1);
  });
});

describe('a plain put whose reply is lost', () => {
  it('fails with ConnectionError and is never sent again (it might double the job)', async () => {
    const { server, c } = await setup((line, socket) => {
      if (line.startsWith('put')) socket.destroy();
      return undefined;
    });
    await expect(c.put('x')).rejects.toBeInstanceOf(ConnectionError);
    await c.closed;
    expect(server.connections).toEqual([['put 1024 0 60 1']]);
  });

  it('so does a put-with without a key', async () => {
    const { server, c } = await setup((line, socket) => {
      if (line.startsWith('put')) socket.destroy();
      return undefined;
    });
    await expect(c.putWith('x', { expire: 60 })).rejects.toBeInstanceOf(ConnectionError);
    await c.closed;
    expect(server.connections).toEqual([['put-with - 60 delete 1024 0 60 1']]);
  });
});

describe('idempotent', () => {
  it('makes every put a put-with with a random 128-bit key, sent again with the same key', async () => {
    const { server, c } = await setup((line, socket, connection) => {
      if (connection === 0 && server.connections[0]!.length === 2) socket.destroy(); // the second put's reply is lost
      else return connection === 0 ? 'INSERTED 1\r\n' : 'DUPLICATE 2\r\n';
      return undefined;
    }, { idempotent: true });
    expect(await c.put('a')).toBe(1);
    expect(await c.put('b', { priority: 3 })).toBe(2);
    expect(await c.putWith('c', { expire: 9 })).toEqual({ id: 2, duplicate: true });
    const [[a, b], [bAgain, c2]] = server.connections as [string[], string[]];
    expect(a).toMatch(/^put-with [0-9a-f]{32} 0 delete 1024 0 60 1$/);
    expect(b).toMatch(/^put-with [0-9a-f]{32} 0 delete 3 0 60 1$/);
    expect(bAgain).toBe(b);
    expect(c2).toMatch(/^put-with [0-9a-f]{32} 9 delete 1024 0 60 1$/);
    expect(new Set([a, b, c2].map((l) => l!.split(' ')[1])).size).toBe(3);
  });
});

describe('tube-set and stats-tube', () => {
  it('tube-set sends the setting; stats-tube\'s five more fields are numbers when printed, absent otherwise', async () => {
    const extras = 'max-reserved: 5\nreserve-rate: 100\ndedup-window: 3600\njobs-expired: 2\nduplicate-puts: 1\n';
    const yaml = (more: string) => `---\nname: "mail"\ncurrent-jobs-ready: 0\npause: 0\n${more}`;
    const { server, c } = await setup((line) => {
      if (line.startsWith('tube-set')) return 'OK\r\n';
      const doc = yaml(line === 'stats-tube mail' ? extras : '');
      return `OK ${Buffer.byteLength(doc)}\r\n${doc}\r\n`;
    });
    await c.tubeSet('mail', 'reserve-rate', 100);
    const stats = await c.statsTube('mail');
    expect(stats).toMatchObject({ 'name': 'mail', 'max-reserved': 5, 'reserve-rate': 100, 'dedup-window': 3600, 'jobs-expired': 2, 'duplicate-puts': 1 });
    const plain = await c.statsTube('plain');
    expect(plain['max-reserved']).toBeUndefined();
    expect(server.connections[0]).toEqual(['tube-set mail reserve-rate 100', 'stats-tube mail', 'stats-tube plain']);
  });
});
