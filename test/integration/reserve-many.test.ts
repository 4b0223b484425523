// reserve-many (protocol extension): many jobs in one command, each reserved
// with its own TTR, waiting like reserve-with-timeout when none is ready.
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { yamlMap, type Wire } from '../helpers/wire.js';

const ctx = sidecarPerTest();
const dial = () => ctx.dial();

/** RESERVED-MANY <n> and its n RESERVED blocks, as [id, body] pairs. */
async function reserveMany(w: Wire, command: string, timeoutMs = 5000): Promise<Array<[string, string]> | string> {
  w.send(`${command}\r\n`);
  const head = await w.line(timeoutMs);
  const m = /^RESERVED-MANY (\d+)$/.exec(head);
  if (!m) return head;
  const jobs: Array<[string, string]> = [];
  for (let k = 0; k < Number(m[1]); k++) {
    const r = await w.reply(timeoutMs);
    const id = /^RESERVED (\d+) \d+$/.exec(r.line)?.[1];
    expect(id, r.line).toBeDefined();
    jobs.push([id!, r.body!.toString('latin1')]);
  }
  return jobs;
}

describe('reserve-many', () => {
  it('takes up to count ready jobs of the watched tubes in priority then id order, each reserved with its own ttr', async () => {
    const a = await dial();
    await a.cmd('put 5 0 60 1\r\na');
    await a.cmd('put 1 0 30 1\r\nb');
    await a.cmd('use other');
    await a.cmd('put 1 0 10 1\r\nc');
    await a.cmd('put 0 0 60 1\r\nd');
    await a.cmd('watch other');
    expect(await reserveMany(a, 'reserve-many 3 0')).toEqual([['4', 'd'], ['2', 'b'], ['3', 'c']]);
    expect(yamlMap(await a.cmd('stats-job 3'))).toMatchObject({ state: 'reserved', ttr: '10', reserves: '1' });
    expect(yamlMap(await a.cmd('stats-job 2'))).toMatchObject({ state: 'reserved', ttr: '30' });
    expect(await reserveMany(a, 'reserve-many 1000 0')).toEqual([['1', 'a']]);
    expect(await a.cmd('reserve-many 10 0')).toBe('TIMED_OUT');
    // The jobs are this connection's: it deletes, releases and touches them.
    expect(await a.cmd('delete 4')).toBe('DELETED');
    expect(await a.cmd('touch 3')).toBe('TOUCHED');
    expect(await a.cmd('release 2 0 0')).toBe('RELEASED');
    const b = await dial();
    expect(await b.cmd('delete 3')).toBe('NOT_FOUND');
  });

  it('answers BAD_FORMAT for a count of 0, over 1000, or junk, and for a bad timeout', async () => {
    const a = await dial();
    await a.cmd('put 0 0 60 1\r\nx');
    for (const bad of ['reserve-many 0 0', 'reserve-many 1001 0', 'reserve-many x 0', 'reserve-many 1', 'reserve-many 1 0 junk',
      'reserve-many -1 0', 'reserve-many 1 -1', 'reserve-many 1 2147483648', 'reserve-many 4294967296 0']) {
      expect(await a.cmd(bad), bad).toBe('BAD_FORMAT');
    }
    // As beanstalkd answers `reserve-with-timeout` without its argument.
    expect(await a.cmd('reserve-many')).toBe('BAD_FORMAT');
    expect(await reserveMany(a, 'RESERVE-MANY 1000 0')).toEqual([['1', 'x']]);
  });

  it('waits when nothing is ready and returns as soon as one job is, without waiting to fill the count', async () => {
    const a = await dial();
    const b = await dial();
    a.send('reserve-many 50 5\r\n');
    expect(await a.silent(150)).toBe(true);
    await b.cmd('put 0 0 60 2\r\nhi');
    expect(await reserveMany(a, '', 2000)).toEqual([['1', 'hi']]);
  });

  it('answers TIMED_OUT when its timeout ends, and DEADLINE_SOON when a reservation of the connection is about to expire', async () => {
    const a = await dial();
    const t0 = Date.now();
    expect(await a.cmd('reserve-many 5 1')).toBe('TIMED_OUT');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    await a.cmd('put 0 0 1 1\r\nx');
    expect(await reserveMany(a, 'reserve-many 5 0')).toEqual([['1', 'x']]);
    expect(await a.cmd('reserve-many 5 10')).toBe('DEADLINE_SOON');
  });

  it('counts cmd-reserve-many (not a BAD_FORMAT one, as beanstalkd) in the stats model, not in the beanstalkd stats reply', async () => {
    const a = await dial();
    await a.cmd('reserve-many 1 0');
    await a.cmd('reserve-many 0 0');
    expect((await ctx.sidecar.server.stats())['cmd-reserve-many']).toBe(1);
    expect(await a.cmd('stats')).not.toContain('reserve-many');
  });

  it('hands the jobs of a connection that closed while they were being reserved back to ready', async () => {
    const a = await dial();
    const b = await dial();
    for (let i = 0; i < 20; i++) await b.cmd(`put 0 0 60 1\r\n${i % 10}`);
    a.send('reserve-many 20 0\r\n');
    a.close();
    // Whether the reserve ran before the close or not, every job is ready again soon.
    await expect.poll(async () => yamlMap(await b.cmd('stats-tube default'))['current-jobs-ready'], { timeout: 3000 }).toBe('20');
  });
});
