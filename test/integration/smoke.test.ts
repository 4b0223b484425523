import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => { stack = await startStack(); });
afterAll(async () => { await stack?.stop(); });

it('smoke', async () => {
  const a = await Wire.connect(stack.port);
  expect(await a.cmd('put 0 0 60 5\r\nhello')).toBe('INSERTED 1');
  expect(await a.cmd('reserve')).toBe('RESERVED 1 5\nhello');
  expect(await a.cmd('stats-job 1')).toContain('state: reserved');
  expect(await a.cmd('delete 1')).toBe('DELETED');
  console.log(await a.cmd('stats'));
  const b = await Wire.connect(stack.port);
  b.send('reserve\r\n');
  await new Promise((r) => setTimeout(r, 100));
  expect(await a.cmd('put 0 0 60 2\r\nhi')).toBe('INSERTED 2');
  expect((await b.reply()).line).toBe('RESERVED 2 2');
  a.close(); b.close();
});
