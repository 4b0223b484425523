import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { createLogger, serializeError } from '../../src/log.js';
import { StoreError } from '../../src/store/errors.js';
import { ROOT } from '../helpers/redstalk.js';

it('never logs the command arguments ioredis attaches to an error (a job body)', () => {
  const err = Object.assign(new Error('OOM command not allowed'), { command: { name: 'evalsha', args: ['sha', 'SECRET-BODY'] } });
  let out = '';
  const sink = new Writable({ write(chunk, _enc, done) { out += String(chunk); done(); } });
  pino({ serializers: { err: serializeError } }, sink).error({ err }, 'command failed');
  expect(out).toContain('OOM command not allowed');
  expect(out).not.toContain('SECRET-BODY');
});

it('writes readable lines with --log-format pretty (auto: on a terminal), JSON lines otherwise', () => {
  const run = (format: string[]) => spawnSync(process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), '-p', '0', '--redis', 'redis://127.0.0.1:1', '--redis-timeout-ms', '200', ...format],
    { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
  const pretty = run(['--log-format', 'pretty']);
  expect(pretty.stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*: redstalk listening/m);
  expect(pretty.stdout).not.toMatch(/^\{/m);
  const json = run([]); // stdout is a pipe here, so auto means JSON
  expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ msg: 'redstalk listening' });
  expect(json.status).toBe(1);
});

it('lets a repeated warning or error through once a second, saying how many it stands for, and drops store errors\' stacks', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk)) as Record<string, unknown>); done(); } });
  const log = createLogger('info', 'json', sink);
  const err = new StoreError('failed', "Stream isn't writeable");
  for (let i = 0; i < 500; i++) log.error({ err }, 'command failed');
  for (let i = 0; i < 3; i++) log.info('not limited');
  expect(lines.filter((l) => l.msg === 'command failed')).toHaveLength(1);
  expect(lines.filter((l) => l.msg === 'not limited')).toHaveLength(3);
  expect((lines[0]!.err as Record<string, unknown>).stack).toBeUndefined();
  await new Promise((r) => setTimeout(r, 1100));
  log.error({ err }, 'command failed');
  expect(lines.filter((l) => l.msg === 'command failed').at(-1)).toMatchObject({ repeated: 499 });
});
