// Redis' script cache (SCRIPT FLUSH; on Redis 7.4+ / 8 and Valkey 8+, eviction:
// at most 500 scripts sent with plain EVAL are kept, the oldest dropped, INFO
// stats evicted_scripts) holds none of the sidecar's code: its Lua is a functions
// library (src/store/redis/functions.ts), which neither touches. Every command
// keeps working after a flush or a flood of other scripts, and the sidecar meets
// no NOSCRIPT. And a server that cannot run Lua at all (Valkey 9.1+ built with
// BUILD_LUA=no) is refused at the start, saying why. (README "Servers".)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../helpers/ports.js';
import { ownRedisEachTest, startRedstalk } from '../helpers/redstalk.js';
import { onCluster } from '../helpers/topology.js';
import { Wire, yamlMap } from '../helpers/wire.js';

/** More distinct scripts than any server's EVAL cache keeps (500). */
const FLOOD = 600;

function field(info: string, name: string): number | undefined {
  const m = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : undefined;
}

/** NOSCRIPT errors Redis answered so far (INFO errorstats). */
async function noscripts(admin: Redis): Promise<number> {
  const m = /^errorstat_NOSCRIPT:count=(\d+)/m.exec(await admin.info('errorstats'));
  return m ? Number(m[1]) : 0;
}

/** One job through every state on a new connection, each reply checked: each step runs a script. */
async function lifeCycle(port: number, tube: string): Promise<void> {
  const w = await Wire.connect(port);
  expect(await w.cmd(`use ${tube}`)).toBe(`USING ${tube}`);
  expect(await w.cmd(`watch ${tube}`)).toBe(`WATCHING 2`);
  expect(await w.cmd('ignore default')).toBe('WATCHING 1');
  const id = /^INSERTED (\d+)$/.exec(await w.cmd('put 5 0 60 3\r\nabc'))![1]!;
  expect(await w.cmd('put 0 30 60 1\r\nd')).toMatch(/^INSERTED \d+$/);
  expect(await w.cmd('reserve-with-timeout 1')).toBe(`RESERVED ${id} 3\nabc`);
  expect(await w.cmd(`touch ${id}`)).toBe('TOUCHED');
  expect(await w.cmd(`release ${id} 5 0`)).toBe('RELEASED');
  expect(await w.cmd(`reserve-with-timeout 1`)).toBe(`RESERVED ${id} 3\nabc`);
  expect(await w.cmd(`bury ${id} 5`)).toBe('BURIED');
  expect(await w.cmd('peek-buried')).toBe(`FOUND ${id} 3\nabc`);
  expect(await w.cmd('kick 1')).toBe('KICKED 1');
  expect(yamlMap(await w.cmd(`stats-job ${id}`)).state).toBe('ready');
  expect(yamlMap(await w.cmd(`stats-tube ${tube}`))['current-jobs-delayed']).toBe('1');
  expect(await w.cmd(`reserve-with-timeout 1`)).toBe(`RESERVED ${id} 3\nabc`);
  expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
  expect(await w.cmd('kick 10')).toBe('KICKED 1'); // the delayed one
  expect(await w.cmd(`reserve-with-timeout 1`)).toMatch(/^RESERVED \d+ 1\nd$/);
  w.socket.destroy();
}

// It floods and flushes its own redis-server's script cache: not on the test cluster.
describe.skipIf(onCluster)('the script cache', () => {
  const own = ownRedisEachTest();
  let admin: Redis;

  async function start(): Promise<number> {
    const { admin: link, sidecar } = await own.start();
    admin = link;
    await lifeCycle(sidecar.port, 'warm'); // every function this test calls has run once
    return sidecar.port;
  }

  it('serves every command after SCRIPT FLUSH (as on a restarted Redis or a promoted replica)', async () => {
    const port = await start();
    const before = await noscripts(admin);
    await admin.script('FLUSH');
    await lifeCycle(port, 'flushed');
    expect(await noscripts(admin)).toBe(before); // the sidecar sends no script: FCALL of its functions
    await lifeCycle(port, 'again');
  });

  it(`serves every command when ${FLOOD} other scripts sent with EVAL push its scripts out of the cache (Redis 7.4+, Valkey 8+)`, async () => {
    const port = await start();
    const info = await admin.info('server');
    // Valkey says what it is in server_name and valkey_version (its redis_version stays 7.2.4).
    const name = /^server_name:(\S+)/m.exec(info)?.[1] ?? 'redis';
    const server = `${name} ${new RegExp(`^${name}_version:(\\S+)`, 'm').exec(info)?.[1] ?? '?'}`;
    for (let round = 1; round <= 2; round++) {
      const before = await noscripts(admin);
      const p = admin.pipeline();
      for (let i = 0; i < FLOOD; i++) p.eval(`return ${round * 10_000 + i}`, 0);
      await p.exec();
      const stats = await admin.info('stats');
      const evicted = field(stats, 'evicted_scripts');
      await lifeCycle(port, `flooded${round}`);
      const dropped = (await noscripts(admin)) - before;
      // The servers that evict say so (evicted_scripts); those before Redis 7.4 keep every script.
      console.log(`script cache, ${server}, round ${round}: evicted_scripts ${evicted ?? '(no such field)'}, NOSCRIPT answers to the sidecar's calls ${dropped}`);
      if (evicted !== undefined) expect(evicted).toBeGreaterThanOrEqual(round * (FLOOD - 500));
      expect(dropped).toBe(0); // none of the sidecar's code is in the script cache
    }
  });

  it('refuses to start, saying why, on a server that cannot run Lua scripts', async () => {
    // EVAL and FUNCTION renamed away stand in for a Valkey without Lua, which answers "Could not find scripting engine 'lua'".
    const port = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-test-nolua-'));
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--rename-command', 'EVAL', '', '--rename-command', 'FUNCTION', ''], { stdio: 'ignore' });
    try {
      await waitForPort(port);
      await expect(startRedstalk({ redisUrl: `redis://127.0.0.1:${port}` })).rejects.toThrow(/^this Redis cannot run Lua functions .*FUNCTION LOAD redstalk_[0-9a-f]+ answered: ERR unknown command 'FUNCTION'/);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
