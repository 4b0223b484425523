// The Redis side of the light-load floor: what one call costs Redis when calls
// come one at a time at a fixed rate (no batching can help), as a sidecar's
// calls do at light load. A private redis-server with AOF everysec (as the
// bench runs redstalk's) gets bare commands at --rate calls/s for --duration s:
// PING (a wake-up, a read, a reply), HSET of a 100-byte value (a write, fed to
// the AOF), EVAL of a script doing that HSET (what a script call adds), and
// FCALL of a function doing it (a functions library, as redstalk's Lua runs).
//   npx tsx bench/call-floor.ts [--rate 400] [--duration 8]
// At light load a job needs two calls (its put, its delete), so two of these
// are the least Redis CPU a job can cost there; bench/README.md compares them.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, loopback, waitUntilAccepting } from '../src/cli/ports.js';
import { cpuSeconds } from './cpu.js';

const { values } = parseArgs({ options: { rate: { type: 'string', default: '400' }, duration: { type: 'string', default: '8' } } });
const rate = Number(values.rate);
const seconds = Number(values.duration);

/** RESP of a command. */
const resp = (...args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
const VALUE = 'x'.repeat(100);
const COMMANDS: Array<[string, string]> = [
  ['PING', resp('PING')],
  ['HSET 100 B', resp('HSET', 'h', 'f', VALUE)],
  ['EVAL HSET 100 B', resp('EVAL', "return redis.call('HSET', KEYS[1], 'f', ARGV[1])", '1', 'h', VALUE)],
  ['FCALL HSET 100 B', resp('FCALL', 'floor_hset', '1', 'h', VALUE)],
];
const LIBRARY = "#!lua name=floor\nredis.register_function('floor_hset', function(keys, args) return redis.call('HSET', keys[1], 'f', args[1]) end)";

/** One command, its reply awaited (the FUNCTION LOAD before the runs). */
async function once(port: number, command: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  const reply = await new Promise<string>((resolve) => {
    socket.once('data', (d) => resolve(d.toString()));
    socket.write(command);
  });
  socket.destroy();
  return reply;
}

/** Sends `command` at the fixed rate for the duration; Redis' CPU µs per call. */
async function measure(port: number, pid: number, command: string): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  socket.on('data', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  const cpu0 = cpuSeconds(pid);
  const t0 = Date.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(Math.floor(((Date.now() - t0) / 1000) * rate), rate * seconds);
      for (; sent < due; sent++) socket.write(command);
      if (sent >= rate * seconds) { clearInterval(timer); setTimeout(resolve, 200); }
    }, 1);
  });
  socket.destroy();
  return ((cpuSeconds(pid) - cpu0) * 1e6) / sent;
}

const port = await freePort();
const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-call-floor-'));
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
  '--appendonly', 'yes', '--appendfsync', 'everysec'], { stdio: 'ignore' });
try {
  await waitUntilAccepting(loopback(port), `redis-server port ${port}`, 10_000, () => {});
  const loaded = await once(port, resp('FUNCTION', 'LOAD', LIBRARY));
  if (!loaded.startsWith('$')) throw new Error(`FUNCTION LOAD: ${loaded}`);
  process.stdout.write(`Redis CPU µs per call, one call at a time at ${rate} calls/s for ${seconds} s (AOF everysec):\n`);
  for (const [name, command] of COMMANDS) {
    process.stdout.write(`  ${name.padEnd(16)} ${(await measure(port, redis.pid!, command)).toFixed(0)}\n`);
  }
} finally {
  redis.kill('SIGTERM');
  await new Promise((resolve) => redis.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
