// Every command, reply and error path against a real redis-server.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { yamlMap } from '../helpers/wire.js';

const ctx = sidecarPerTest();
const dial = () => ctx.dial();

describe('put', () => {
  it('inserts with increasing ids and accepts empty and binary bodies', async () => {
    const a = await dial();
    expect(await a.cmd('put 0 0 60 5\r\nhello')).toBe('INSERTED 1');
    expect(await a.cmd('put 0 0 60 0\r\n')).toBe('INSERTED 2');
    a.send(Buffer.concat([Buffer.from('put 1 0 60 6\r\n'), Buffer.from([0, 13, 10, 255, 13, 10]), Buffer.from('\r\n')]));
    expect(await a.line()).toBe('INSERTED 3');
    a.send('peek 3\r\n');
    const r = await a.reply();
    expect(r.line).toBe('FOUND 3 6');
    expect([...r.body!]).toEqual([0, 13, 10, 255, 13, 10]);
  });

  it('answers JOB_TOO_BIG after skipping the body, and keeps the stream in sync', async () => {
    await ctx.restart({ maxJobSize: 10 });
    const a = await dial();
    a.send(`put 0 0 60 11\r\n${'x'.repeat(11)}\r\nput 0 0 60 10\r\n${'y'.repeat(10)}\r\n`);
    expect(await a.line()).toBe('JOB_TOO_BIG');
    expect(await a.line()).toBe('INSERTED 1');
    // The size check comes before the trailing-garbage check, and the body is skipped.
    expect(await a.cmd(`put 0 0 1 11 junk\r\n${'z'.repeat(11)}`)).toBe('JOB_TOO_BIG');
    expect(await a.cmd('list-tube-used')).toBe('USING default');
  });

  it('EXPECTED_CRLF uses up an id and parses the extra bytes as commands', async () => {
    const a = await dial();
    a.send('put 0 0 1 1\r\nxyz\r\n');
    expect(await a.line()).toBe('EXPECTED_CRLF');
    expect(await a.line()).toBe('UNKNOWN_COMMAND');
    expect(await a.cmd('put 0 0 1 1\r\nx')).toBe('INSERTED 2');
  });

  it('BAD_FORMAT leaves the body unread', async () => {
    const a = await dial();
    a.send('put -1 0 1 5\r\nstats\r\n');
    expect(await a.line()).toBe('BAD_FORMAT');
    expect((await a.reply()).line).toMatch(/^OK \d+$/);
    for (const bad of ['put 0 0 1 5 ', 'put 0 0 1', 'put 4294967296 0 1 1', 'put 0 0 1 1x', 'put +1 0 1 1', 'put 0x1 0 1 1']) {
      expect(await a.cmd(bad)).toBe('BAD_FORMAT');
    }
    expect(await a.cmd('put  0  0  1  1\r\nz')).toBe('INSERTED 1');
  });

  it('raises ttr 0 to 1', async () => {
    const a = await dial();
    await a.cmd('put 0 0 0 1\r\nx');
    expect(yamlMap(await a.cmd('stats-job 1')).ttr).toBe('1');
  });

  it('answers DRAINING in drain mode, after reading the body', async () => {
    const a = await dial();
    ctx.sidecar.server.drain();
    a.send('put 0 0 1 1\r\nx\r\nput 0 0 1 1\r\ny\r\n');
    expect(await a.line()).toBe('DRAINING');
    expect(await a.line()).toBe('DRAINING');
    expect(yamlMap(await a.cmd('stats')).draining).toBe('true');
  });

  it('accepts command words in any case', async () => {
    const a = await dial();
    expect(await a.cmd('PUT 0 0 1 1\r\nx')).toBe('INSERTED 1');
    expect(await a.cmd('Peek-Ready')).toBe('FOUND 1 1\nx');
    expect(await a.cmd('USE Foo')).toBe('USING Foo');
  });
});

describe('line framing', () => {
  it('handles unknown commands, empty lines, NUL bytes and over-long lines', async () => {
    const a = await dial();
    expect(await a.cmd('')).toBe('UNKNOWN_COMMAND');
    expect(await a.cmd('hello')).toBe('UNKNOWN_COMMAND');
    expect(await a.cmd('use')).toBe('UNKNOWN_COMMAND');
    expect(await a.cmd('stats\0')).toBe('BAD_FORMAT');
    a.send(`${'x'.repeat(300)}\r\nlist-tube-used\r\n`);
    expect(await a.line()).toBe('BAD_FORMAT');
    expect(await a.line()).toBe('USING default');
    expect(await a.cmd(`use ${'a'.repeat(200)}`)).toBe(`USING ${'a'.repeat(200)}`);
  });

  it('does not treat a bare LF as a line end', async () => {
    const a = await dial();
    a.send('stats\n');
    expect(await a.silent(150)).toBe(true);
  });

  it('answers pipelined commands in order', async () => {
    const a = await dial();
    a.send('put 5 0 60 1\r\na\r\nput 1 0 60 1\r\nb\r\n');
    expect(await a.line()).toBe('INSERTED 1');
    expect(await a.line()).toBe('INSERTED 2');
    // (The ids known before they are pipelined: sharded runs show ids by put order, test/helpers/topology.ts.)
    a.send('peek-ready\r\nlist-tube-used\r\nreserve\r\ndelete 2\r\n');
    expect((await a.reply()).line).toBe('FOUND 2 1');
    expect(await a.line()).toBe('USING default');
    expect((await a.reply()).line).toBe('RESERVED 2 1');
    expect(await a.line()).toBe('DELETED');
  });

  it('follows beanstalkd prefix matching quirks', async () => {
    const a = await dial();
    for (const q of ['reservex', 'reserve ', 'statsx', 'stats-job', 'peek-readyX', 'list-tubesX', 'reserve-with-timeout']) {
      expect(await a.cmd(q)).toBe('BAD_FORMAT');
    }
    expect(await a.cmd('pause-tubedefault 0')).toBe('PAUSED');
    a.send('quitxyz\r\n');
    await a.waitClosed();
  });
});

describe('reserve', () => {
  it('hands out by priority, then by id, across watched tubes', async () => {
    const a = await dial();
    await a.cmd('use t1');
    await a.cmd('put 10 0 60 1\r\na');
    await a.cmd('use t2');
    await a.cmd('put 10 0 60 1\r\nb');
    await a.cmd('put 5 0 60 1\r\nc');
    await a.cmd('watch t1');
    await a.cmd('watch t2');
    expect(await a.cmd('reserve')).toBe('RESERVED 3 1\nc');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\na');
    expect(await a.cmd('reserve')).toBe('RESERVED 2 1\nb');
  });

  it('times out, at once for 0, and to the second otherwise', async () => {
    const a = await dial();
    expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    const t0 = Date.now();
    expect(await a.cmd('reserve-with-timeout 1', 3000)).toBe('TIMED_OUT');
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(950);
    expect(await a.cmd('reserve-with-timeout 2147483648')).toBe('BAD_FORMAT');
    expect(await a.cmd('reserve-with-timeout -1')).toBe('BAD_FORMAT');
    expect(await a.cmd('reserve-with-timeout 0 junk')).toBe('TIMED_OUT');
  });

  it('wakes a blocked reserve on put, and serves waiters first come first served', async () => {
    const [a, b, p] = [await dial(), await dial(), await dial()];
    a.send('reserve\r\n');
    await new Promise((r) => setTimeout(r, 50));
    b.send('reserve\r\n');
    expect(await a.silent(100)).toBe(true);
    expect(yamlMap(await p.cmd('stats'))['current-waiting']).toBe('2');
    await p.cmd('put 0 0 60 1\r\n1');
    expect((await a.reply()).line).toBe('RESERVED 1 1');
    await p.cmd('put 0 0 60 1\r\n2');
    expect((await b.reply()).line).toBe('RESERVED 2 1');
  });

  it('holds commands sent behind a blocked reserve', async () => {
    const [a, p] = [await dial(), await dial()];
    a.send('reserve\r\nlist-tube-used\r\n');
    expect(await a.silent(100)).toBe(true);
    await p.cmd('put 0 0 60 1\r\nx');
    expect((await a.reply()).line).toBe('RESERVED 1 1');
    expect(await a.line()).toBe('USING default');
  });

  it('answers DEADLINE_SOON inside the safety margin unless a job is ready', async () => {
    const a = await dial();
    await a.cmd('put 0 0 1 1\r\nx');
    expect(await a.cmd('reserve')).toBe('RESERVED 1 1\nx');
    expect(await a.cmd('reserve')).toBe('DEADLINE_SOON');
    await a.cmd('put 0 0 1 1\r\ny');
    expect(await a.cmd('reserve')).toBe('RESERVED 2 1\ny');
  });

  it('ends a blocked reserve with DEADLINE_SOON when a reservation enters the margin', async () => {
    const a = await dial();
    await a.cmd('put 0 0 2 1\r\nx');
    await a.cmd('reserve');
    const t0 = Date.now();
    expect(await a.cmd('reserve', 4000)).toBe('DEADLINE_SOON');
    expect(Date.now() - t0).toBeLessThan(1800);
  });

  it('waits out a blocked reserve whose deadlines lie beyond what one timer holds (24.8 days)', async () => {
    const a = await dial();
    await a.cmd('put 0 0 4294967295 1\r\nx');
    await a.cmd('reserve');
    expect(await a.cmd('reserve-with-timeout 1', 4000)).toBe('TIMED_OUT');
    const b = await dial();
    b.send('reserve-with-timeout 2147483647\r\n');
    expect(await b.silent(300)).toBe(true);
    await a.cmd('put 0 0 60 1\r\ny');
    expect(await b.reply()).toMatchObject({ line: 'RESERVED 2 1' });
  });

  it('keeps 20 blocked reserves quiet when the next delayed job is 30 days away (no busy loop)', async () => {
    const a = await dial();
    await a.cmd('put 0 2592000 60 1\r\nlater');
    const waiting = await Promise.all(Array.from({ length: 20 }, () => dial()));
    for (const w of waiting) w.send('reserve-with-timeout 5\r\n');
    await new Promise((r) => setTimeout(r, 300));
    const admin = new Redis(ctx.redis.url);
    const calls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    await new Promise((r) => setTimeout(r, 1000));
    const during = (await calls()) - before;
    admin.disconnect();
    // The promotion timer (about one call a second) and a heartbeat, not 20 waiters spinning.
    expect(during).toBeLessThan(10);
    for (const w of waiting) expect(await w.silent(0)).toBe(true);
  });

  it('returns a job to ready when its TTR runs out, counting a timeout', async () => {
    const a = await dial();
    await a.cmd('put 0 0 1 1\r\nx');
    await a.cmd('reserve');
    const b = await dial();
    expect(await b.cmd('reserve-with-timeout 3', 5000)).toBe('RESERVED 1 1\nx');
    const s = yamlMap(await b.cmd('stats-job 1'));
    expect(s.timeouts).toBe('1');
    expect(s.reserves).toBe('2');
    expect(yamlMap(await b.cmd('stats'))['job-timeouts']).toBe('1');
    expect(await a.cmd('delete 1')).toBe('NOT_FOUND');
  });

  it('gives reserved jobs back at once when the connection closes or quits', async () => {
    const [a, b] = [await dial(), await dial()];
    await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('reserve');
    a.close();
    expect(await b.cmd('reserve-with-timeout 2')).toBe('RESERVED 1 1\nx');
    b.send('quit\r\n');
    await b.waitClosed();
    const c = await dial();
    expect(await c.cmd('reserve-with-timeout 2')).toBe('RESERVED 1 1\nx');
    expect(yamlMap(await c.cmd('stats-job 1')).timeouts).toBe('0');
  });

  it('answers TIMED_OUT when the client half-closes during a blocked reserve', async () => {
    const a = await dial();
    a.send('reserve\r\n');
    expect(await a.silent(50)).toBe(true);
    a.socket.end();
    expect(await a.line()).toBe('TIMED_OUT');
    await a.waitClosed();
  });

  it('reserve-job takes ready, delayed and buried jobs but not reserved ones', async () => {
    const a = await dial();
    await a.cmd('put 0 0 60 1\r\na');
    await a.cmd('put 0 100 60 1\r\nb');
    expect(await a.cmd('reserve-job 2')).toBe('RESERVED 2 1\nb');
    expect(await a.cmd('bury 2 0')).toBe('BURIED');
    expect(await a.cmd('reserve-job 2')).toBe('RESERVED 2 1\nb');
    expect(await a.cmd('reserve-job 2')).toBe('NOT_FOUND');
    expect(await a.cmd('reserve-job 1')).toBe('RESERVED 1 1\na');
    expect(await a.cmd('reserve-job 99')).toBe('NOT_FOUND');
    expect(await a.cmd('reserve-job x')).toBe('BAD_FORMAT');
  });

  it('does not reserve from a paused tube until the pause ends', async () => {
    const a = await dial();
    await a.cmd('put 0 0 60 1\r\nx');
    expect(await a.cmd('pause-tube default 1')).toBe('PAUSED');
    expect(await a.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    const t0 = Date.now();
    expect(await a.cmd('reserve', 3000)).toBe('RESERVED 1 1\nx');
    expect(Date.now() - t0).toBeGreaterThan(700);
    expect(await a.cmd('pause-tube nosuch 1')).toBe('NOT_FOUND');
  });

  it('pause-tube 0 unpauses at once and wakes waiters', async () => {
    const [a, b] = [await dial(), await dial()];
    await b.cmd('pause-tube default 100');
    a.send('reserve\r\n');
    await b.cmd('put 0 0 60 1\r\nx');
    expect(await a.silent(150)).toBe(true);
    expect(await b.cmd('pause-tube default 0')).toBe('PAUSED');
    expect((await a.reply()).line).toBe('RESERVED 1 1');
  });
});

describe('delayed jobs', () => {
  it('become ready after their delay and wake waiters', async () => {
    const [a, b] = [await dial(), await dial()];
    await a.cmd('put 0 1 60 1\r\nx');
    expect(yamlMap(await a.cmd('stats-job 1')).state).toBe('delayed');
    expect(await a.cmd('peek-delayed')).toBe('FOUND 1 1\nx');
    const t0 = Date.now();
    expect(await b.cmd('reserve', 3000)).toBe('RESERVED 1 1\nx');
    expect(Date.now() - t0).toBeGreaterThan(700);
  });

  it('release with a delay makes the job delayed', async () => {
    const a = await dial();
    await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('reserve');
    expect(await a.cmd('release 1 7 100')).toBe('RELEASED');
    const s = yamlMap(await a.cmd('stats-job 1'));
    expect([s.state, s.pri, s.delay, s.releases]).toEqual(['delayed', '7', '100', '1']);
    expect(Number(s['time-left'])).toBeGreaterThan(97);
  });
});

describe('ownership', () => {
  it('only the reserving connection may release, bury, touch or delete a reserved job', async () => {
    const [a, b] = [await dial(), await dial()];
    await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('reserve');
    expect(await b.cmd('release 1 0 0')).toBe('NOT_FOUND');
    expect(await b.cmd('bury 1 0')).toBe('NOT_FOUND');
    expect(await b.cmd('touch 1')).toBe('NOT_FOUND');
    expect(await b.cmd('delete 1')).toBe('NOT_FOUND');
    expect(await a.cmd('touch 1')).toBe('TOUCHED');
    expect(await a.cmd('bury 1 3')).toBe('BURIED');
    expect(await a.cmd('touch 1')).toBe('NOT_FOUND');
    expect(await b.cmd('delete 1')).toBe('DELETED');
    expect(await b.cmd('delete 1')).toBe('NOT_FOUND');
  });
});

describe('bury and kick', () => {
  it('kicks buried jobs first (oldest first), else delayed ones', async () => {
    const a = await dial();
    for (let i = 0; i < 3; i++) await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('put 0 100 60 1\r\nd');
    for (const id of [2, 1, 3]) {
      await a.cmd(`reserve-job ${id}`);
      await a.cmd(`bury ${id} 0`);
    }
    expect(await a.cmd('peek-buried')).toBe('FOUND 2 1\nx');
    expect(await a.cmd('kick 2')).toBe('KICKED 2');
    expect(await a.cmd('peek-buried')).toBe('FOUND 3 1\nx');
    expect(await a.cmd('kick 10')).toBe('KICKED 1');
    expect(await a.cmd('kick 10')).toBe('KICKED 1');
    expect(yamlMap(await a.cmd('stats-job 4')).kicks).toBe('1');
    expect(await a.cmd('kick 10')).toBe('KICKED 0');
    expect(await a.cmd('kick -1 junk')).toBe('KICKED 0');
    expect(await a.cmd('kick x')).toBe('BAD_FORMAT');
  });

  it('kick-job moves one buried or delayed job in any tube', async () => {
    const a = await dial();
    await a.cmd('use other');
    await a.cmd('put 0 100 60 1\r\nx');
    await a.cmd('use default');
    expect(await a.cmd('kick-job 1')).toBe('KICKED');
    expect(await a.cmd('kick-job 1')).toBe('NOT_FOUND');
    expect(await a.cmd('kick-job 42')).toBe('NOT_FOUND');
  });
});

describe('tubes', () => {
  it('use, watch, ignore and the lists', async () => {
    const a = await dial();
    expect(await a.cmd('watch foo')).toBe('WATCHING 2');
    expect(await a.cmd('watch foo')).toBe('WATCHING 2');
    expect(await a.cmd('ignore bar')).toBe('WATCHING 2');
    expect(await a.cmd('ignore default')).toBe('WATCHING 1');
    expect(await a.cmd('ignore foo')).toBe('NOT_IGNORED');
    expect(await a.cmd('list-tubes-watched')).toBe('OK 10\n---\n- foo\n');
    expect(await a.cmd('use bar')).toBe('USING bar');
    expect(await a.cmd('list-tube-used')).toBe('USING bar');
    const tubes = (await a.cmd('list-tubes')).split('\n').slice(2).filter(Boolean).sort();
    expect(tubes).toEqual(['- bar', '- default', '- foo']);
    for (const bad of ['use -x', 'use a b', 'use  a', 'use a:b', `use ${'a'.repeat(201)}`, 'watch ', 'ignore *']) {
      expect(await a.cmd(bad)).toBe('BAD_FORMAT');
    }
  });

  it('a tube disappears when unused and empty', async () => {
    const a = await dial();
    await a.cmd('use gone');
    await a.cmd('put 0 0 60 1\r\nx');
    expect(yamlMap(await a.cmd('stats-tube gone'))['total-jobs']).toBe('1');
    await a.cmd('use default');
    expect(yamlMap(await a.cmd('stats-tube gone'))['current-jobs-ready']).toBe('1');
    expect(await a.cmd('delete 1')).toBe('DELETED');
    expect(await a.cmd('stats-tube gone')).toBe('NOT_FOUND');
    expect(await a.cmd('list-tubes')).toBe('OK 14\n---\n- default\n');
  });
});

describe('stats', () => {
  it('stats-job has every field in order', async () => {
    const a = await dial();
    await a.cmd('use ttr');
    await a.cmd('put 7 0 1 1\r\nx');
    const reply = await a.cmd('stats-job 1');
    expect(reply.split('\n').slice(1, -1)).toEqual([
      '---', 'id: 1', 'tube: "ttr"', 'state: ready', 'pri: 7', 'age: 0', 'delay: 0', 'ttr: 1',
      'time-left: 0', 'file: 0', 'reserves: 0', 'timeouts: 0', 'releases: 0', 'buries: 0', 'kicks: 0',
    ]);
    expect(reply.split('\n')[0]).toBe(`OK ${reply.length - reply.indexOf('\n') - 1}`);
    expect(await a.cmd('stats-job 2')).toBe('NOT_FOUND');
    expect(await a.cmd('stats-job 1 ')).toBe('BAD_FORMAT');
  });

  it('stats-tube counts jobs by state and connections', async () => {
    const [a, b] = [await dial(), await dial()];
    await a.cmd('use s');
    await b.cmd('watch s');
    await a.cmd('put 1 0 60 1\r\nx');
    await a.cmd('put 2000 0 60 1\r\nx');
    await a.cmd('put 1 100 60 1\r\nx');
    await b.cmd('reserve');
    const s = yamlMap(await a.cmd('stats-tube s'));
    expect(s).toMatchObject({
      name: '"s"', 'current-jobs-urgent': '0', 'current-jobs-ready': '1', 'current-jobs-reserved': '1',
      'current-jobs-delayed': '1', 'current-jobs-buried': '0', 'total-jobs': '3', 'current-using': '1',
      'current-watching': '1', 'current-waiting': '0', 'cmd-delete': '0', 'cmd-pause-tube': '0', pause: '0', 'pause-time-left': '0',
    });
    expect(Object.keys(s)).toEqual(['name', 'current-jobs-urgent', 'current-jobs-ready', 'current-jobs-reserved', 'current-jobs-delayed',
      'current-jobs-buried', 'total-jobs', 'current-using', 'current-watching', 'current-waiting', 'cmd-delete', 'cmd-pause-tube', 'pause', 'pause-time-left']);
    await a.cmd('pause-tube s 60');
    const p = yamlMap(await a.cmd('stats-tube s'));
    expect(p.pause).toBe('60');
    expect(Number(p['pause-time-left'])).toBeGreaterThanOrEqual(58);
  });

  it('stats has the 51 keys of 1.13 with live counters', async () => {
    const a = await dial();
    await a.cmd('put 0 0 60 1\r\nx');
    await a.cmd('reserve');
    const s = yamlMap(await a.cmd('stats'));
    expect(Object.keys(s)).toHaveLength(51);
    expect(s).toMatchObject({ 'current-jobs-reserved': '1', 'cmd-put': '1', 'cmd-reserve': '1', 'total-jobs': '1',
      'current-connections': '1', 'current-producers': '1', 'current-workers': '1', 'max-job-size': '65535', version: '"1.13"' });
    expect(s['rusage-utime']).toMatch(/^\d+\.\d{6}$/);
  });
});
