// A reserve never times out while a job it could take became ready before
// its end: `put` with a 1 s delay then at once `reserve-with-timeout 1` is
// RESERVED; `release` with a 2 s delay then `reserve-with-timeout 1` twice
// delivers on the second. 50 tries of each (in parallel, one tube per try),
// against redstalk and against the real beanstalkd where installed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';
import { startStack } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';

const TRIES = 50;

const targets: Array<[string, () => Promise<{ port: number; stop(): Promise<void> }>]> = [['redstalk', () => startStack()]];
if (hasBeanstalkd) targets.push(['beanstalkd', () => startBeanstalkd()]);

describe.each(targets)('the last look before TIMED_OUT, on %s', (_name, start) => {
  let server: { port: number; stop(): Promise<void> };
  let wires: Wire[];
  beforeAll(async () => {
    server = await start();
    wires = await Promise.all(Array.from({ length: TRIES }, () => Wire.connect(server.port)));
    await Promise.all(wires.map(async (w, i) => {
      await w.cmd(`use look${i}`);
      await w.cmd(`watch look${i}`);
      await w.cmd('ignore default');
    }));
  });
  afterAll(async () => { for (const w of wires) w.close(); await server.stop(); });

  it('reserves a job whose delay ends with the timeout', async () => {
    const replies = await Promise.all(wires.map(async (w) => {
      w.send('put 0 1 60 1\r\nx\r\nreserve-with-timeout 1\r\n');
      await w.reply();
      const r = (await w.reply(4000)).line;
      if (r.startsWith('RESERVED')) await w.cmd(`delete ${r.split(' ')[1]}`);
      return r.split(' ')[0];
    }));
    expect(replies).toEqual(Array(TRIES).fill('RESERVED'));
  });

  it('delivers a job released with a 2 s delay on the second 1 s reserve', async () => {
    const replies = await Promise.all(wires.map(async (w) => {
      const id = (await w.cmd('put 0 0 60 1\r\nx')).split(' ')[1];
      await w.cmd('reserve');
      w.send(`release ${id} 0 2\r\nreserve-with-timeout 1\r\nreserve-with-timeout 1\r\n`);
      await w.reply();
      const first = (await w.reply(4000)).line;
      const second = (await w.reply(4000)).line;
      await w.cmd(`delete ${id}`);
      return `${first.split(' ')[0]} ${second.split(' ')[0]}`;
    }));
    expect(replies).toEqual(Array(TRIES).fill('TIMED_OUT RESERVED'));
  });
});
