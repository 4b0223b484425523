// Memory a client can make the sidecar hold: a body sent one byte per TCP
// segment costs about its size, not hundreds of bytes per byte.
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { spawnRedstalk, type SpawnedSidecar } from '../helpers/redstalk.js';

// FULL=1 runs the size of the report this guards against (50 connections); CI runs 25.
const CONNECTIONS = process.env.FULL ? 50 : 25;
const BODY = 65_000;

function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

describe('memory per connection', () => {
  let redis: TestRedis;
  let sidecar: SpawnedSidecar;
  beforeAll(async () => {
    redis = await startRedis();
    sidecar = await spawnRedstalk(['--redis', redis.url, '--prefix', 'mem', '--log-level', 'warn']);
  });
  afterAll(async () => {
    await sidecar?.stop();
    await redis?.stop();
  });

  it(`holds a body sent a byte at a time in about its size (${CONNECTIONS} connections, ${BODY} bytes each)`, async () => {
    // Past the start's one-time work (dist/cli.js writes its code cache 1 s after a start): not a connection's memory.
    await new Promise((r) => setTimeout(r, 1500));
    // The client is a process of its own, so that its one-byte writes reach the sidecar as reads of a byte or two.
    const client = spawn(process.execPath, ['-e', `
      const net = require('node:net');
      const sockets = [];
      let open = 0;
      for (let c = 0; c < ${CONNECTIONS}; c++) {
        const s = net.connect(${sidecar.port}, '127.0.0.1', () => { s.setNoDelay(true); s.write('put 0 0 60 ${BODY}\\r\\n'); if (++open === ${CONNECTIONS}) go(); });
        s.on('data', (d) => process.stdout.write(d));
        sockets.push(s);
      }
      async function go() {
        for (let i = 0; i < ${BODY - 1}; i++) {
          for (const s of sockets) s.write('x');
          await new Promise((r) => setImmediate(r));
        }
        process.stdout.write('held\\n');
        process.stdin.once('data', () => { for (const s of sockets) s.write('x\\r\\n'); });
      }
    `], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    client.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    await new Promise((r) => setTimeout(r, 300));
    const before = rssBytes(sidecar.child.pid!);
    await expect.poll(() => out, { timeout: 100_000, interval: 100 }).toContain('held');
    await new Promise((r) => setTimeout(r, 300));
    const perConnection = (rssBytes(sidecar.child.pid!) - before) / CONNECTIONS;
    process.stdout.write(`memory per connection holding ${BODY - 1} body bytes sent a byte at a time: ${(perConnection / 1024).toFixed(0)} KiB\n`);
    expect(perConnection).toBeLessThan(1 << 20);
    // The bodies are whole: the last byte and CRLF complete every put.
    client.stdin.write('go\n');
    await expect.poll(() => (out.match(/INSERTED \d+\r\n/g) ?? []).length, { timeout: 10_000 }).toBe(CONNECTIONS);
    client.kill();
  }, 120_000);
});
