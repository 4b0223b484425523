import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { serializeError } from '../../src/log.js';

it('never logs the command arguments ioredis attaches to an error (a job body)', () => {
  const err = Object.assign(new Error('OOM command not allowed'), { command: { name: 'evalsha', args: ['sha', 'SECRET-BODY'] } });
  let out = '';
  const sink = new Writable({ write(chunk, _enc, done) { out += String(chunk); done(); } });
  pino({ serializers: { err: serializeError } }, sink).error({ err }, 'command failed');
  expect(out).toContain('OOM command not allowed');
  expect(out).not.toContain('SECRET-BODY');
});
