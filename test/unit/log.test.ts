import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { serializeError } from '../../src/log.js';
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
