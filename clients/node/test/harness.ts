// Live servers for the tests: one private redis-server per test file and
// redstalk sidecars on it, each with a fresh key prefix (a fresh, empty server).
// The sidecar is the command in REDSTALK_CMD, else the repo's src/cli.ts under tsx;
// the transcripts, which need a fresh server for each of their 100+ scenarios,
// may use the repo's in-process sidecar instead (a process costs a second of CPU).
// Every process started here is stopped by its PID in stopAll(). Also a scripted
// server in this process (fakeServer), for what a live one will not do on cue.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis, type TestRedis } from '../../../test/helpers/redis.js';
import { startRedstalk } from '../../../test/helpers/redstalk.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;

function serverCommand(): string[] {
  const cmd = process.env.REDSTALK_CMD?.split(' ').filter(Boolean);
  return cmd?.length ? cmd : [process.execPath, '--import', 'tsx', path.join(ROOT, 'src/cli.ts')];
}

export interface Sidecar {
  port: number;
  child: ChildProcess;
  /** SIGTERM, then waits for the exit (SIGKILL after a while). */
  stop(): Promise<void>;
}

/** A sidecar: its port, and how to stop it. */
export interface Server { port: number; stop(): Promise<void> }

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** Starts `args` and resolves with the port of its "redstalk listening" log line. */
function startProcess(args: string[]): Promise<{ child: ChildProcess; port: number }> {
  const [bin, ...rest] = serverCommand();
  const { REDSTALK_CMD: _, ...env } = process.env; // the server would warn about an unknown REDSTALK_ variable
  const child = spawn(bin!, [...rest, '-l', '127.0.0.1', '-p', '0', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`redstalk did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      void stopChild(child);
      reject(new Error(`${err.message}; output: ${output}`));
    };
    child.once('exit', (code) => fail(new Error(`redstalk exited with code ${code}`)));
    const keep = (d: Buffer) => { output = (output + d.toString()).slice(-4096); };
    child.stderr!.on('data', keep);
    let pending = '';
    child.stdout!.on('data', (d: Buffer) => {
      keep(d);
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        let entry: { msg?: string; listen?: string };
        try { entry = JSON.parse(line) as typeof entry; } catch { continue; }
        if (entry.msg !== 'redstalk listening' || !entry.listen) continue;
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume(); // keep reading, so the log never blocks the server
        resolve({ child, port: Number(entry.listen.slice(entry.listen.lastIndexOf(':') + 1)) });
      }
    });
  });
}

export class Servers {
  /** The private redis-server: one promise, so that callers at once share one server. */
  private redis: Promise<TestRedis> | null = null;
  private readonly allRedis: TestRedis[] = [];
  private readonly children = new Set<ChildProcess>();

  constructor() {
    // Should the test process end without stopAll (a crash, a timeout), take the children along.
    process.once('exit', () => {
      for (const child of [...this.children, ...this.allRedis.map((r) => r.process)]) child.kill('SIGKILL');
    });
  }

  /** The private redis-server, started on first use. */
  async redisUrl(): Promise<string> {
    this.redis ??= this.anotherRedis();
    return (await this.redis).url;
  }

  /** Another private redis-server, for a test that stops or fills it. */
  async anotherRedis(): Promise<TestRedis> {
    const redis = await startRedis();
    this.allRedis.push(redis);
    return redis;
  }

  /** A fresh, empty redstalk: a new sidecar with a new key prefix on the private Redis. */
  async fresh(extraArgs: string[] = []): Promise<Sidecar> {
    return this.sidecar(['--redis', await this.redisUrl(), '--prefix', `c${randomBytes(6).toString('hex')}`, ...extraArgs]);
  }

  /**
   * A fresh, empty redstalk as cheaply as it comes: a sidecar inside this process,
   * unless REDSTALK_CMD names the server to test.
   */
  async freshCheap(): Promise<Server> {
    if (process.env.REDSTALK_CMD) return this.fresh();
    const sidecar = await startRedstalk({ redisUrl: await this.redisUrl() });
    return { port: sidecar.port, stop: () => sidecar.stop() };
  }

  /** A sidecar with the given flags (e.g. its own --redis). */
  async sidecar(args: string[]): Promise<Sidecar> {
    const { child, port } = await startProcess(args);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return { port, child, stop: () => stopChild(child) };
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.children].map(stopChild));
    for (const redis of this.allRedis.splice(0)) await redis.stop();
    this.redis = null;
  }
}

/** Sends one command to a Redis (RESP), for the tests that change its settings; resolves to the reply line. */
export function redisCommand(url: string, ...args: string[]): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    socket.once('error', reject);
    socket.once('data', (d: Buffer) => {
      socket.destroy();
      resolve(d.toString().trimEnd());
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

/** What a scripted server sends for a command line: a reply, or nothing (it may also destroy the socket). */
export type Script = (line: string, socket: net.Socket, connection: number) => Buffer | string | undefined;

export interface FakeServer {
  port: number;
  /** The command lines received on each connection, in order. */
  connections: string[][];
  close(): Promise<void>;
}

/**
 * A server in this process for what a live one will not do on cue (drop a connection
 * unanswered, stay silent): each command line goes to `script` (a put's body is skipped)
 * and what it returns is written back; `quit` ends the connection.
 */
export async function fakeServer(script: Script): Promise<FakeServer> {
  const sockets = new Set<net.Socket>();
  const connections: string[][] = [];
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const connection = connections.push([]) - 1;
    let buf = Buffer.alloc(0);
    let skip = 0;
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (!socket.destroyed) {
        if (skip > 0) {
          if (buf.length < skip) return;
          buf = buf.subarray(skip);
          skip = 0;
        }
        const end = buf.indexOf('\r\n');
        if (end < 0) return;
        const line = buf.toString('latin1', 0, end);
        buf = buf.subarray(end + 2);
        connections[connection]!.push(line);
        const put = /^put(-with)? .* (\d+)$/.exec(line);
        if (put) skip = Number(put[2]) + 2;
        const reply = script(line, socket, connection);
        if (line === 'quit') { socket.end(); return; }
        if (reply !== undefined && !socket.destroyed) socket.write(reply);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    close: () => new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
