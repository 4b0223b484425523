// Time left is truncated to whole seconds from a finer clock, as beanstalkd
// does (nanoseconds): right after a 10-second reservation, touch, delay or
// pause starts, 9 whole seconds are left, never 10. Each sequence runs 50
// times against redstalk, and against the real beanstalkd where installed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';
import { startStack } from '../helpers/redstalk.js';
import { Wire, yamlMap } from '../helpers/wire.js';

const TRIES = 50;

const targets: Array<[string, () => Promise<{ port: number; stop(): Promise<void> }>]> = [['redstalk', () => startStack()]];
if (hasBeanstalkd) targets.push(['beanstalkd', () => startBeanstalkd()]);

describe.each(targets)('time left on %s', (_name, start) => {
  let server: { port: number; stop(): Promise<void> };
  let w: Wire;
  beforeAll(async () => { server = await start(); w = await Wire.connect(server.port); });
  afterAll(async () => { w.close(); await server.stop(); });

  const nines = Array<string>(TRIES).fill('9');

  it('after reserve and after touch', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TRIES; i++) {
      const id = (await w.cmd('put 0 0 10 1\r\nx')).split(' ')[1]!;
      ids.push(id);
      // Pipelined, so each stats-job follows its command as closely as the server allows.
      w.send(`reserve-job ${id}\r\nstats-job ${id}\r\ntouch ${id}\r\nstats-job ${id}\r\n`);
      await w.reply();
      const afterReserve = yamlMap(await readYaml(w));
      await w.reply();
      const afterTouch = yamlMap(await readYaml(w));
      expect([afterReserve['time-left'], afterTouch['time-left']], `try ${i}`).toEqual(['9', '9']);
    }
    for (const id of ids) await w.cmd(`delete ${id}`);
  });

  it('after a delayed put and a pause', async () => {
    const delayed: string[] = [];
    for (let i = 0; i < TRIES; i++) {
      w.send('put 0 10 60 1\r\nx\r\n');
      const id = (await w.reply()).line.split(' ')[1]!;
      w.send(`stats-job ${id}\r\n`);
      delayed.push(yamlMap(await readYaml(w))['time-left']!);
      await w.cmd(`delete ${id}`);
    }
    expect(delayed).toEqual(nines);
    const paused: string[] = [];
    for (let i = 0; i < TRIES; i++) {
      w.send('pause-tube default 10\r\nstats-tube default\r\n');
      await w.reply();
      paused.push(yamlMap(await readYaml(w))['pause-time-left']!);
    }
    expect(paused).toEqual(nines);
    await w.cmd('pause-tube default 0');
  });
});

/** The next reply, an `OK <bytes>` YAML document, as the text yamlMap reads. */
async function readYaml(w: Wire): Promise<string> {
  const r = await w.reply();
  return `${r.line}\n${r.body!.toString('latin1')}`;
}
