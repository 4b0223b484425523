// auth <token>: with a token configured, nothing runs before it; three wrong
// tokens close the connection; the token never shows in logs or stats.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, UnauthorizedError } from '../../clients/node/src/index.js';
import { createLogger } from '../../src/log.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { Wire } from '../helpers/wire.js';

const TOKEN = 's3cr3t-Token_42';

describe('auth', () => {
  let redis: TestRedis;
  let sidecar: TestSidecar;
  let logged = '';
  beforeAll(async () => {
    redis = await startRedis();
    const sink = new Writable({ write(chunk, _enc, done) { logged += String(chunk); done(); } });
    sidecar = await startRedstalk({ redisUrl: redis.url, authToken: TOKEN, logger: createLogger('trace', 'json', sink) });
  });
  afterAll(async () => {
    await sidecar?.stop();
    await redis?.stop();
  });

  it('answers UNAUTHORIZED to every command before auth (bodies still read), then serves', async () => {
    const a = await Wire.connect(sidecar.port);
    expect(await a.cmd('list-tube-used')).toBe('UNAUTHORIZED');
    expect(await a.cmd('put 0 0 60 5\r\nstats')).toBe('UNAUTHORIZED'); // the body "stats" is not run as a command
    expect(await a.cmd('use other')).toBe('UNAUTHORIZED');
    expect(await a.cmd(`auth ${TOKEN}`)).toBe('OK');
    expect(await a.cmd('put 0 0 60 5\r\nhello')).toBe('INSERTED 1');
    expect(await a.cmd('list-tube-used')).toBe('USING default');
  });

  it('answers UNAUTHORIZED to a wrong token and closes the connection after three', async () => {
    const a = await Wire.connect(sidecar.port);
    expect(await a.cmd('auth nope')).toBe('UNAUTHORIZED');
    expect(await a.cmd(`auth ${TOKEN}x`)).toBe('UNAUTHORIZED');
    expect(await a.cmd('auth s3cr3t')).toBe('UNAUTHORIZED');
    await a.waitClosed(2000);
    const b = await Wire.connect(sidecar.port);
    expect(await b.cmd('auth')).toBe('UNKNOWN_COMMAND'); // matched as "auth <token>", like beanstalkd's commands with arguments
    expect(await b.cmd('auth two words')).toBe('BAD_FORMAT');
  });

  it('works through the Node client: UnauthorizedError before auth and for a wrong token', async () => {
    const c = await Client.connect({ port: sidecar.port });
    try {
      await expect(c.listTubeUsed()).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(c.auth('wrong')).rejects.toBeInstanceOf(UnauthorizedError);
      await c.auth(TOKEN);
      expect(await c.listTubeUsed()).toBe('default');
    } finally {
      await c.close();
    }
  });

  it('never shows the token in logs (even at trace) or stats', async () => {
    const a = await Wire.connect(sidecar.port);
    await a.cmd(`auth ${TOKEN}`);
    const stats = await a.cmd('stats');
    expect(stats).not.toContain(TOKEN);
    expect(logged).toContain('"command":"auth"');
    expect(logged).not.toContain(TOKEN);
  });

  it('reads the token from --auth-token-file, and needs none when no token is set', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-auth-'));
    writeFileSync(path.join(dir, 'token'), 'from-a-file\n');
    const s = await startRedstalk({ redisUrl: redis.url, authTokenFile: path.join(dir, 'token') });
    const open = await startRedstalk({ redisUrl: redis.url });
    try {
      const a = await Wire.connect(s.port);
      expect(await a.cmd('auth from-a-file')).toBe('OK');
      const b = await Wire.connect(open.port);
      expect(await b.cmd('list-tube-used')).toBe('USING default');
      expect(await b.cmd('auth anything')).toBe('OK');
    } finally {
      await s.stop();
      await open.stop();
    }
  });
});
