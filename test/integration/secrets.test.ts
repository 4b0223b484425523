// No password, token or job body in any log line or error message, at any
// log level, including a Redis that refuses the password or cannot be reached.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { freePort } from '../helpers/ports.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT } from '../helpers/redstalk.js';

const PASSWORD = 'pw-DoNotLog-31337';
const TOKEN = 'tok-DoNotLog-4242';

/** The whole output of a sidecar started with these flags (-VV), stopped after `ms`. */
function run(args: string[], ms: number, env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), '-p', '0', '-VV', ...args],
      { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGTERM'), ms);
    child.on('exit', () => { clearTimeout(timer); resolve(out); });
  });
}

describe('secrets', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', 'the-right-one');
    admin.disconnect();
  });
  afterAll(async () => { await redis?.stop(); });

  it('keeps a wrong Redis password out of every line, even at -VV', async () => {
    const out = await run(['--redis', `redis://:${PASSWORD}@127.0.0.1:${redis.port}`, '--redis-timeout-ms', '300', '--auth-token', TOKEN], 6000);
    expect(out).toMatch(/WRONGPASS|NOAUTH|could not start/);
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(TOKEN);
  }, 20_000);

  it('keeps the password of an unreachable Redis and a token from the environment out of every line', async () => {
    const out = await run(['--redis', `redis://user:${PASSWORD}@127.0.0.1:${await freePort()}`, '--redis-timeout-ms', '300'], 4000,
      { REDSTALK_AUTH_TOKEN: TOKEN });
    expect(out).toContain('"msg":"configuration"');
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(TOKEN);
  }, 20_000);
});
