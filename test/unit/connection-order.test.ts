// Replies leave a connection in command order even when its batched commands
// finish out of it (ops of different shards go in different calls): a real
// Connection on a loopback socket, its ops settled by hand in any order.
import net from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Dispatcher } from '../../src/commands/dispatch.js';
import type { Services } from '../../src/commands/session.js';
import { Connection, type ConnectionHost } from '../../src/server/connection.js';
import { StoreError } from '../../src/store/errors.js';
import type { AnyJobOp } from '../../src/store/ops.js';

const services = { maxJobSize: 65535, draining: () => false, countCommand: () => {} } as unknown as Services;

interface Harness { client: net.Socket; conn: Connection; ops: AnyJobOp[]; closed: boolean; received: () => string }

const open: Array<{ server: net.Server; client: net.Socket }> = [];
afterEach(() => {
  for (const { server, client } of open.splice(0)) { client.destroy(); server.close(); }
});

async function connect(): Promise<Harness> {
  const ops: AnyJobOp[] = [];
  const h = { ops, closed: false } as Harness;
  const host: ConnectionHost = {
    dispatcher: new Dispatcher(services), log: pino({ level: 'silent' }), authRequired: false, instruments: null,
    submit: (op) => ops.push(op), dueIn: () => {}, becameProducer: () => {}, becameWorker: () => {},
    halfClosed: () => {}, closed: () => { h.closed = true; }, strayed: () => {}, jobTimed: () => {},
  };
  const server = net.createServer();
  const accepted = new Promise<Connection>((resolve) => server.once('connection', (socket) => resolve(new Connection(1, 'n', socket, host))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  open.push({ server, client });
  let text = '';
  client.on('data', (d) => { text += d.toString('latin1'); });
  h.client = client;
  h.conn = await accepted;
  h.received = () => text;
  return h;
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(ok()).toBe(true);
};
const turns = () => new Promise((r) => setTimeout(r, 20));

/** A connection that holds job 7 (tube other) and has sent put, delete 7, put as one pipeline. */
async function threeInFlight(): Promise<Harness> {
  const h = await connect();
  h.conn.reserved.set('7', { tube: 'other', deadline: Date.now() + 60_000, since: Date.now() });
  h.client.write('put 0 0 10 1\r\na\r\ndelete 7\r\nput 0 0 10 1\r\nb\r\nlist-tube-used\r\n');
  await until(() => h.ops.length === 3);
  return h;
}

describe('a connection whose batched commands finish out of order', () => {
  it('answers them in command order, each as soon as those before it are answered', async () => {
    const h = await threeInFlight();
    const [put1, del, put2] = h.ops as [AnyJobOp, AnyJobOp, AnyJobOp];
    put2.done(put2, '9', null);
    del.done(del, true, null);
    await turns();
    expect(h.received()).toBe('');
    put1.done(put1, '8', null);
    await until(() => h.received().length > 0);
    await turns();
    // list-tube-used waited for all three, as it does with one shard.
    expect(h.received()).toBe('INSERTED 8\r\nDELETED\r\nINSERTED 9\r\nUSING default\r\n');
    expect(h.conn.reserved.has('7')).toBe(false);
  });

  it('answers an error in its place too', async () => {
    const h = await threeInFlight();
    const [put1, del, put2] = h.ops as [AnyJobOp, AnyJobOp, AnyJobOp];
    put2.done(put2, '9', null);
    put1.done(put1, undefined, new StoreError('failed', 'script error'));
    await turns();
    expect(h.received()).toBe('INTERNAL_ERROR\r\n');
    del.done(del, false, null);
    await until(() => h.received().includes('USING'));
    expect(h.received()).toBe('INTERNAL_ERROR\r\nNOT_FOUND\r\nINSERTED 9\r\nUSING default\r\n');
  });

  it('closes at the place of a command whose outcome is unknown, after answering those before it', async () => {
    const h = await threeInFlight();
    const [put1, del, put2] = h.ops as [AnyJobOp, AnyJobOp, AnyJobOp];
    del.done(del, undefined, new StoreError('unknown', 'connection lost after the call was sent'));
    put2.done(put2, '9', null);
    await turns();
    expect(h.closed).toBe(false);
    put1.done(put1, '8', null);
    await until(() => h.closed);
    await turns();
    expect(h.received()).toBe('INSERTED 8\r\n');
    expect(h.conn.uncertain).toBe(true);
  });
});
