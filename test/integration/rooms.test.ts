// Waiting rooms (enter / check / leave and their settings) against a real
// redis-server. Timeouts are 1-2 s so that lapses happen within the test.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { ROOT, spawnRedstalk, startRedstalk } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';
import { onCluster } from '../helpers/topology.js';

const ctx = sidecarPerTest();
const dial = () => ctx.dial();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function configure(w: Wire, room: string, capacity: number, checkin: number, participant: number, grace: number): Promise<void> {
  expect(await w.cmd(`room-config ${room} ${capacity} ${checkin} ${participant} ${grace}`)).toBe('OK');
}

async function roomStats(w: Wire, room: string): Promise<Record<string, string>> {
  return yamlMap(await w.cmd(`stats-room ${room}`));
}

/** The reply of each user's command, by user. */
async function each(w: Wire, verb: string, room: string, users: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const u of users) out[u] = await w.cmd(`${verb} ${room} ${u}`);
  return out;
}

/** The names in list-rooms' YAML list. */
async function listRooms(w: Wire): Promise<string[]> {
  const [head, ...lines] = (await w.cmd('list-rooms')).split('\n');
  expect(head).toMatch(/^OK \d+$/);
  expect(lines.slice(0, 1)).toEqual(['---']);
  return lines.slice(1, -1).map((l) => l.replace(/^- /, ''));
}

/** The position in a WAITING reply. */
function position(reply: string): number {
  const m = /^WAITING (\d+) \d+$/.exec(reply);
  if (!m) throw new Error(`not WAITING: ${reply}`);
  return Number(m[1]);
}

/** Checks the users in every `everyMs` for `ms` (they keep their places), then returns. */
async function keepCheckingIn(w: Wire, room: string, users: string[], ms: number, everyMs = 200): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(everyMs)) await each(w, 'check', room, users);
}

const users = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

describe('capacity and FIFO', () => {
  it('lets everyone in up to the capacity, then gives newcomers exact positions', async () => {
    const a = await dial();
    await configure(a, 'gig', 2, 30, 30, 0);
    expect(await a.cmd('enter gig p1')).toBe('ENTERED');
    expect(await a.cmd('enter gig p2')).toBe('ENTERED');
    expect(Object.values(await each(a, 'enter', 'gig', users('w', 4))).map(position)).toEqual([1, 2, 3, 4]);
    // enter and check again: same places, nobody moves
    expect(Object.values(await each(a, 'check', 'gig', users('w', 4))).map(position)).toEqual([1, 2, 3, 4]);
    expect(Object.values(await each(a, 'enter', 'gig', users('w', 4))).map(position)).toEqual([1, 2, 3, 4]);
    expect(await a.cmd('enter gig p1')).toBe('ENTERED'); // already inside
    expect(await a.cmd('check gig p2')).toBe('READY');
    const s = await roomStats(a, 'gig');
    expect([s.participants, s.waiting, s['open-places'], s['admitted-total']]).toEqual(['2', '4', '0', '2']);
  });

  it('admits in arrival order as people leave; newcomers queue behind', async () => {
    const a = await dial();
    await configure(a, 'fifo', 2, 30, 30, 0);
    await each(a, 'enter', 'fifo', ['p1', 'p2', 'w1', 'w2', 'w3']);
    expect(await a.cmd('leave fifo p1')).toBe('LEFT');
    // One place: only the head of the line may enter; a newcomer does not jump it.
    const first = await each(a, 'check', 'fifo', ['w1', 'w2', 'w3']);
    expect([first.w1, position(first.w2!), position(first.w3!)]).toEqual(['READY', 2, 3]);
    expect(position(await a.cmd('enter fifo late'))).toBe(4);
    expect(position(await a.cmd('enter fifo w2'))).toBe(2);
    expect(await a.cmd('enter fifo w1')).toBe('ENTERED');
    expect((await each(a, 'check', 'fifo', ['w2', 'w3', 'late'])).late).toMatch(/^WAITING 3 /);
    expect(await a.cmd('leave fifo p2')).toBe('LEFT');
    expect(await a.cmd('leave fifo w1')).toBe('LEFT');
    // Two places: the two who waited longest.
    expect(await each(a, 'check', 'fifo', ['late', 'w3', 'w2'])).toMatchObject({ w2: 'READY', w3: 'READY' });
    expect(position(await a.cmd('check fifo late'))).toBe(3);
    expect(await a.cmd('enter fifo w3')).toBe('ENTERED');
    expect(await a.cmd('enter fifo w2')).toBe('ENTERED');
    expect(position(await a.cmd('check fifo late'))).toBe(1);
    expect((await roomStats(a, 'fifo'))['admitted-total']).toBe('5');
  });

  it('moves the line up when someone waiting leaves it', async () => {
    const a = await dial();
    await configure(a, 'q', 1, 30, 30, 0);
    await each(a, 'enter', 'q', ['in', 'w1', 'w2', 'w3', 'w4']);
    expect(await a.cmd('leave q w2')).toBe('LEFT');
    expect(Object.values(await each(a, 'check', 'q', ['w1', 'w3', 'w4'])).map(position)).toEqual([1, 2, 3]);
    expect(await a.cmd('leave q w2')).toBe('NOT_FOUND');
    expect(await a.cmd('leave q nobody')).toBe('NOT_FOUND');
    expect(await a.cmd('leave nowhere nobody')).toBe('NOT_FOUND');
    expect((await roomStats(a, 'q'))['left-total']).toBe('1');
  });

  it('lets a checking newcomer know it may enter without putting it in line', async () => {
    const a = await dial();
    await configure(a, 'open', 1, 30, 30, 0);
    expect(await a.cmd('check open first')).toBe('READY');
    expect((await roomStats(a, 'open')).waiting).toBe('0');
    expect(await a.cmd('enter open second')).toBe('ENTERED');
    expect(position(await a.cmd('check open first'))).toBe(1); // now it joins the line
  });
});

describe('timeouts', () => {
  it('drops people who stop checking in, and the line moves up', async () => {
    const a = await dial();
    await configure(a, 'drop', 1, 1, 30, 0);
    await each(a, 'enter', 'drop', ['in', 'w1', 'w2', 'w3', 'w4']);
    // w1 and w3 fall silent; w2 and w4 keep checking in (and so does the participant).
    await keepCheckingIn(a, 'drop', ['in', 'w2', 'w4'], 1600);
    expect(Object.values(await each(a, 'check', 'drop', ['w2', 'w4'])).map(position)).toEqual([1, 2]);
    const s = await roomStats(a, 'drop');
    expect([s.waiting, s['dropouts-total']]).toEqual(['2', '2']);
    // A dropout who comes back starts again at the end.
    expect(position(await a.cmd('check drop w1'))).toBe(3);
  });

  it('counts people whose check-in lapsed as gone in stats-room, before anyone removes them', async () => {
    const a = await dial();
    await configure(a, 'lapse', 1, 1, 1, 1);
    await each(a, 'enter', 'lapse', ['in', 'w1']);
    expect(await a.cmd('leave lapse in')).toBe('LEFT');
    await sleep(1300);
    const s = await roomStats(a, 'lapse');
    expect([s.participants, s.tickets, s.waiting]).toEqual(['0', '0', '0']);
    expect([s['dropouts-total'], s['tickets-expired-total']]).toEqual(['1', '1']);
    await a.cmd('enter lapse x'); // removes them for good, counted once
    const t = await roomStats(a, 'lapse');
    expect([t['dropouts-total'], t['tickets-expired-total'], t.participants]).toEqual(['1', '1', '1']);
  });

  it('removes a participant who stops checking in, and their place goes to the next', async () => {
    const a = await dial();
    await configure(a, 'part', 2, 30, 1, 0);
    await each(a, 'enter', 'part', ['quiet', 'busy', 'w1']);
    await keepCheckingIn(a, 'part', ['busy', 'w1'], 1600);
    expect(await a.cmd('check part w1')).toBe('READY');
    expect(await a.cmd('enter part w1')).toBe('ENTERED');
    expect(await a.cmd('check part busy')).toBe('READY');
    expect(position(await a.cmd('check part quiet'))).toBe(1); // back at the end of the line
    expect((await roomStats(a, 'part'))['participant-timeouts-total']).toBe('1');
  });

  it('keeps a place for a participant who left during the grace period, then gives it to the next', async () => {
    const a = await dial();
    await configure(a, 'grace', 1, 30, 30, 1);
    await each(a, 'enter', 'grace', ['p', 'w1']);
    expect(await a.cmd('leave grace p')).toBe('LEFT');
    // The ticket holds the place: the line does not move, newcomers wait.
    expect(await a.cmd('check grace w1')).toMatch(/^WAITING 1 /);
    expect(await a.cmd('enter grace new')).toMatch(/^WAITING 2 /);
    expect(await a.cmd('check grace p')).toBe('READY');
    expect(await a.cmd('enter grace p')).toBe('ENTERED'); // straight back in, ahead of the line
    expect(await a.cmd('leave grace p')).toBe('LEFT');
    await sleep(1300);
    // The ticket expired: the place is the head of the line's; p starts again at the end.
    expect(await a.cmd('check grace w1')).toBe('READY');
    expect(position(await a.cmd('enter grace p'))).toBe(3);
    const s = await roomStats(a, 'grace');
    expect([s['tickets-used-total'], s['tickets-expired-total'], s['left-total']]).toEqual(['1', '1', '2']);
  });

  it('frees a ticket holder\'s place at once when they leave again', async () => {
    const a = await dial();
    await configure(a, 'twice', 1, 30, 30, 30);
    await each(a, 'enter', 'twice', ['p', 'w1']);
    expect(await a.cmd('leave twice p')).toBe('LEFT');
    expect(await a.cmd('check twice w1')).toMatch(/^WAITING 1 /);
    expect(await a.cmd('leave twice p')).toBe('LEFT');
    expect(await a.cmd('check twice w1')).toBe('READY');
    expect(await a.cmd('leave twice p')).toBe('NOT_FOUND');
  });
});

describe('admission control', () => {
  it('lets at most R people in per minute, even with places free', async () => {
    const a = await dial();
    await configure(a, 'rate', 10, 30, 30, 0);
    expect(await a.cmd('room-rate rate 2')).toBe('OK');
    expect(await a.cmd('enter rate a1')).toBe('ENTERED');
    expect(await a.cmd('enter rate a2')).toBe('ENTERED');
    expect(position(await a.cmd('enter rate a3'))).toBe(1);
    expect(position(await a.cmd('check rate a3'))).toBe(1);
    const s = await roomStats(a, 'rate');
    expect([s['rate-limit'], s.participants, s['open-places']]).toEqual(['2', '2', '0']);
    // The limit counts the admissions of the last minute: raising it to 3 opens one place.
    expect(await a.cmd('room-rate rate 3')).toBe('OK');
    expect(position(await a.cmd('enter rate a4'))).toBe(2);
    expect(await a.cmd('enter rate a3')).toBe('ENTERED');
    expect(position(await a.cmd('check rate a4'))).toBe(1);
    expect(await a.cmd('room-rate rate 0')).toBe('OK');
    expect(await a.cmd('enter rate a4')).toBe('ENTERED');
  });

  it('pauses admission: nobody gets in, no estimate, tickets still honoured', async () => {
    const a = await dial();
    await configure(a, 'pause', 5, 30, 30, 30);
    expect(await a.cmd('enter pause p')).toBe('ENTERED');
    expect(await a.cmd('leave pause p')).toBe('LEFT');
    expect(await a.cmd('pause-room pause 1')).toBe('OK');
    expect(await a.cmd('enter pause w1')).toBe('WAITING 1 0');
    expect(await a.cmd('check pause w2')).toBe('WAITING 2 0');
    expect(await a.cmd('enter pause p')).toBe('ENTERED');
    expect((await roomStats(a, 'pause')).paused).toBe('true');
    expect(await a.cmd('pause-room pause 0')).toBe('OK');
    expect(await a.cmd('check pause w2')).toBe('READY');
    expect(await a.cmd('enter pause w1')).toBe('ENTERED');
  });

  it('estimates the wait from the decaying admission rate: eta = ceil(position * 60 / admissions per minute)', async () => {
    const a = await dial();
    await configure(a, 'eta', 4, 30, 30, 0);
    expect(await a.cmd('pause-room eta 1')).toBe('OK');
    expect(await a.cmd('enter eta early')).toBe('WAITING 1 0'); // no admission yet: no estimate
    expect(await a.cmd('pause-room eta 0')).toBe('OK');
    await each(a, 'enter', 'eta', ['early', 'p2', 'p3', 'p4']);
    // Four admissions just now: 4 per minute (decay over these milliseconds may add a second).
    const waits = Object.values(await each(a, 'enter', 'eta', users('w', 3)));
    for (const [i, reply] of waits.entries()) {
      const [, pos, eta] = /^WAITING (\d+) (\d+)$/.exec(reply)!.map(Number);
      expect(pos).toBe(i + 1);
      expect(eta).toBeGreaterThanOrEqual(Math.ceil((pos! * 60) / 4));
      expect(eta).toBeLessThanOrEqual(Math.ceil((pos! * 60) / 4) + 1);
    }
    const s = await roomStats(a, 'eta');
    expect(Number(s['admission-rate'])).toBeGreaterThan(3.99);
    expect(Number(s['admission-rate'])).toBeLessThanOrEqual(4);
    expect(Number(s['last-in-line-eta'])).toBeGreaterThanOrEqual(45);
    expect(Number(s['last-in-line-eta'])).toBeLessThanOrEqual(46);
    // A rate limit below the observed rate caps the estimate.
    expect(await a.cmd('room-rate eta 1')).toBe('OK');
    expect(await a.cmd('check eta w1')).toBe('WAITING 1 60');
  });
});

describe('lottery', () => {
  it('shuffles everyone who joins before the start, keeps earlier arrivals ahead, then goes FIFO', async () => {
    const a = await dial();
    await configure(a, 'drop', 1, 30, 30, 0);
    await each(a, 'enter', 'drop', ['in', 'f1', 'f2']); // waiting before the lottery is announced
    expect(await a.cmd('room-lottery drop 2')).toBe('OK');
    const pre = users('u', 40);
    const joined = await each(a, 'enter', 'drop', pre);
    for (const reply of Object.values(joined)) expect(reply).toMatch(/^WAITING \d+ \d+$/);
    const places = await each(a, 'check', 'drop', pre);
    const order = pre.map((u) => position(places[u]!));
    expect([...order].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 3));
    expect(order).not.toEqual([...order].sort((x, y) => x - y)); // not arrival order (1 in 40! otherwise)
    expect(Object.values(await each(a, 'check', 'drop', ['f1', 'f2'])).map(position)).toEqual([1, 2]);
    // Re-joining draws nothing new.
    expect(await a.cmd('leave drop u7')).toBe('LEFT');
    expect(position(await a.cmd('enter drop u7'))).toBe(position(places.u7!));
    // Nobody gets in before the start, even into a free place.
    expect(await a.cmd('leave drop in')).toBe('LEFT');
    expect(position(await a.cmd('check drop f1'))).toBe(1);
    expect(Number((await roomStats(a, 'drop'))['lottery-time-left'])).toBeGreaterThan(0);
    await keepCheckingIn(a, 'drop', [], 2100);
    expect(await a.cmd('check drop f1')).toBe('READY');
    expect(position(await a.cmd('enter drop late'))).toBe(43);
    const after = await each(a, 'check', 'drop', pre);
    expect(pre.map((u) => position(after[u]!))).toEqual(order);
  });

  it('draws a new order for a new lottery', async () => {
    const a = await dial();
    const pre = users('u', 30);
    const orders: number[][] = [];
    for (const room of ['first', 'second']) {
      await configure(a, room, 1, 30, 30, 0);
      expect(await a.cmd(`room-lottery ${room} 60`)).toBe('OK');
      await each(a, 'enter', room, pre);
      const places = await each(a, 'check', room, pre);
      orders.push(pre.map((u) => position(places[u]!)));
    }
    expect(orders[0]).not.toEqual(orders[1]);
  });

  it('moving the start keeps every draw; 0 starts the event now', async () => {
    const a = await dial();
    await configure(a, 'move', 1, 30, 30, 0);
    expect(await a.cmd('room-lottery move 60')).toBe('OK');
    const pre = users('u', 10);
    await each(a, 'enter', 'move', pre);
    const before = await each(a, 'check', 'move', pre);
    expect(await a.cmd('room-lottery move 120')).toBe('OK');
    await each(a, 'leave', 'move', pre);
    await each(a, 'enter', 'move', pre);
    const again = await each(a, 'check', 'move', pre);
    expect(pre.map((u) => position(again[u]!))).toEqual(pre.map((u) => position(before[u]!)));
    expect(await a.cmd('room-lottery move 0')).toBe('OK');
    const first = pre.find((u) => position(again[u]!) === 1)!;
    expect(await a.cmd(`enter move ${first}`)).toBe('ENTERED');
  });
});

describe('stats-room and list-rooms', () => {
  it('prints the room in beanstalkd\'s YAML style, lists rooms, and answers NOT_FOUND for others', async () => {
    const a = await dial();
    await configure(a, 'show', 3, 20, 40, 5);
    expect(await a.cmd('enter show a')).toBe('ENTERED');
    expect(await a.cmd('enter other b')).toBe('ENTERED');
    const raw = await a.cmd('stats-room show');
    expect(raw.split('\n').slice(1, 3)).toEqual(['---', 'name: "show"']);
    expect(Object.keys(yamlMap(raw))).toEqual([
      'name', 'capacity', 'checkin-timeout', 'participant-timeout', 'grace', 'rate-limit', 'paused', 'lottery-time-left',
      'configured', 'participants', 'tickets', 'waiting', 'open-places', 'admitted-total', 'dropouts-total', 'left-total',
      'participant-timeouts-total', 'tickets-used-total', 'tickets-expired-total', 'admission-rate', 'last-in-line-eta',
    ]);
    expect(yamlMap(raw)).toMatchObject({ capacity: '3', 'checkin-timeout': '20', 'participant-timeout': '40', grace: '5', configured: 'true', participants: '1', 'open-places': '2', 'admission-rate': '1.000' });
    expect(await a.cmd('list-rooms')).toBe('OK 19\n---\n- other\n- show\n');
    expect(await a.cmd('stats-room nope')).toBe('NOT_FOUND');
    expect(await a.cmd('Stats-Room show')).toMatch(/^OK \d+\n/);
  });

  it('forgets a room without settings once nobody can be in it; keeps a configured one', async () => {
    await ctx.restart({ roomCapacity: 5, roomCheckinTimeout: 1, roomParticipantTimeout: 1, roomGrace: 1 });
    const a = await dial();
    expect(await a.cmd('enter passing a')).toBe('ENTERED');
    expect(await a.cmd('enter kept a')).toBe('ENTERED');
    expect(await a.cmd('room-rate kept 0')).toBe('OK'); // any setting keeps a room
    expect(await listRooms(a)).toEqual(['kept', 'passing']);
    expect((await roomStats(a, 'passing')).configured).toBe('false');
    await sleep(1200);
    expect(await listRooms(a)).toEqual(['kept']);
    expect(await a.cmd('stats-room passing')).toBe('NOT_FOUND');
    const redis = new Redis(ctx.redis.url);
    expect(await redis.keys(`*room:passing*`)).toEqual([]);
    redis.disconnect();
    expect((await roomStats(a, 'kept'))['admitted-total']).toBe('1');
  });
});

describe('settings', () => {
  it('uses the sidecar\'s defaults until room-config, which persists in Redis', async () => {
    const prefix = ctx.sidecar.prefix;
    await ctx.restart({ prefix, roomCapacity: 1, roomCheckinTimeout: 30, roomParticipantTimeout: 30, roomGrace: 0 });
    const a = await dial();
    expect(await a.cmd('enter small a')).toBe('ENTERED');
    expect(position(await a.cmd('enter small b'))).toBe(1);
    expect(await a.cmd('room-config small 2 30 30 0')).toBe('OK');
    await ctx.restart({ prefix, roomCapacity: 1, roomCheckinTimeout: 30, roomParticipantTimeout: 30, roomGrace: 0 });
    const b = await dial();
    expect(await b.cmd('check small b')).toBe('READY');
    expect((await roomStats(b, 'small')).capacity).toBe('2');
  });

  it('takes the defaults from the command line, within room-config\'s bounds', async () => {
    const s = await spawnRedstalk(['--redis', ctx.redis.url, '--prefix', 'cliroom', '--log-level', 'warn', '--room-capacity', '1',
      '--room-checkin-timeout', '7', '--room-participant-timeout', '8', '--room-grace', '0']);
    try {
      const a = await Wire.connect(s.port);
      expect(await a.cmd('enter cli a')).toBe('ENTERED');
      expect(position(await a.cmd('enter cli b'))).toBe(1);
      expect(await roomStats(a, 'cli')).toMatchObject({ capacity: '1', 'checkin-timeout': '7', 'participant-timeout': '8', grace: '0' });
      a.close();
    } finally {
      expect(await s.stop()).toBe(0);
    }
    const bad = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), '--redis', ctx.redis.url, '--room-checkin-timeout', '0'], { cwd: ROOT, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('roomCheckinTimeout');
  });

  it('rejects bad input with BAD_FORMAT', async () => {
    const a = await dial();
    for (const bad of ['enter lobby', 'enter lobby  alice', 'enter lobby alice ', 'enter lobby alice bob', 'enter -x alice',
      'check lobby al:ice', 'leave lobby', `enter lobby ${'a'.repeat(201)}`, 'room-config lobby 0 30 30 0', 'room-config lobby 1 0 30 0',
      'room-config lobby 1 30 0 0', 'room-config lobby 1 30 30', 'room-config lobby 1 30 30 -1', 'room-rate lobby x',
      'pause-room lobby 2', 'room-lottery lobby', 'stats-room', 'stats-room a:b', 'list-rooms x']) {
      expect([bad, await a.cmd(bad)]).toEqual([bad, 'BAD_FORMAT']);
    }
    expect(await a.cmd('enter')).toBe('UNKNOWN_COMMAND');
    expect(await listRooms(a)).toEqual([]); // nothing was created
  });
});

describe('one truth in Redis', () => {
  it.skipIf(onCluster)('runs each enter, check and leave as one script call on Redis\' clock', async () => {
    const a = await dial();
    for (const c of ['enter warm x', 'check warm x', 'leave warm x']) await a.cmd(c); // each path taken once before MONITOR
    const monitor = await new Redis(ctx.redis.url, { retryStrategy: () => null }).monitor();
    const log: Array<{ source: string; args: string[] }> = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => log.push({ source, args }));
    await sleep(50);
    for (const c of ['enter mon u', 'check mon u', 'leave mon u']) await a.cmd(c);
    await sleep(100);
    monitor.disconnect();
    const calls = log.flatMap((entry, i) => (entry.source !== 'lua' && entry.args.some((x) => x.includes(':room:mon')) ? [i] : []));
    expect(calls.map((i) => log[i]!.args[0]!.toLowerCase())).toEqual(['fcall', 'fcall', 'fcall']);
    for (const i of calls) expect([log[i + 1]!.source, log[i + 1]!.args[0]!.toUpperCase()]).toEqual(['lua', 'TIME']);
  });

  it('serves one room from two sidecars', async () => {
    const a = await dial();
    await configure(a, 'shared', 1, 30, 30, 0);
    const other = await startRedstalk({ redisUrl: ctx.redis.url, prefix: ctx.sidecar.prefix });
    try {
      const b = await Wire.connect(other.port);
      expect(await a.cmd('enter shared x')).toBe('ENTERED');
      expect(position(await b.cmd('enter shared y'))).toBe(1);
      expect(position(await a.cmd('enter shared z'))).toBe(2);
      expect(await b.cmd('leave shared x')).toBe('LEFT');
      expect(await a.cmd('check shared y')).toBe('READY');
      expect(await b.cmd('enter shared y')).toBe('ENTERED');
      expect((await roomStats(b, 'shared')).participants).toBe('1');
      b.close();
    } finally {
      await other.stop();
    }
  });
});
