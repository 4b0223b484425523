// The processes of the fault suite: private redis-servers (AOF, fsync always)
// that can be killed, stopped and restarted on the same port and folder,
// sidecars as separate processes (so they can be SIGKILLed), and a TCP proxy
// between a sidecar and Redis that can cut the link. Every process started here
// is registered and stopped by its PID (stopAll); nothing touches 127.0.0.1:6379.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitForPort } from '../helpers/ports.js';
import { longestOutside } from './ledger.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const live = new Set<ChildProcess>();
// Should the test process end without its cleanup (a crash, a timeout), take the children along.
process.once('exit', () => {
  for (const child of live) {
    try { child.kill('SIGCONT'); child.kill('SIGKILL'); } catch { /* gone */ }
  }
});

export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Sends a signal and waits for the exit (SIGKILL after killAfterMs); resolves to the exit code (null: signal). */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, killAfterMs = 10_000): Promise<number | null> {
  if (!running(child)) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill(signal);
  const timer = setTimeout(() => { if (running(child)) { child.kill('SIGCONT'); child.kill('SIGKILL'); } }, killAfterMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

// ---------------------------------------------------------------- Redis

export class FaultRedis {
  child!: ChildProcess;
  /** More redis-server arguments, after the fixed ones (e.g. --replicaof); read at every launch. */
  extraArgs: string[] = [];
  /**
   * When it answered nothing: from a SIGSTOP or kill until it answered PING
   * again (after SIGCONT, or after a restart had loaded its AOF). Closed
   * outages only; one still open is `downSince`.
   */
  readonly outages: Array<{ from: number; to: number }> = [];
  private downSince: number | null = null;
  /** Counts the faults, so a PONG sent before the latest one closes no outage. */
  private faultCount = 0;
  private pinging = false;
  private stopped = false;

  private constructor(readonly port: number, readonly dir: string) {}

  get url(): string { return `redis://127.0.0.1:${this.port}`; }
  get pid(): number { return this.child.pid!; }

  /** A redis-server on a free loopback port with AOF and `appendfsync always`, in a fresh folder. */
  static async start(extraArgs: string[] = []): Promise<FaultRedis> {
    const redis = new FaultRedis(await freePort(), mkdtempSync(path.join(tmpdir(), 'redstalk-faults-redis-')));
    redis.extraArgs = extraArgs;
    await redis.launch();
    return redis;
  }

  /** (Re)starts the server on the same port and folder: it loads its AOF. */
  async launch(): Promise<void> {
    const args = [
      '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir,
      '--save', '', '--appendonly', 'yes', '--appendfsync', 'always',
      '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
      ...this.extraArgs,
    ];
    const child = track(spawn('redis-server', args, { stdio: 'ignore' }));
    this.child = child;
    let exited = false;
    child.once('exit', () => { exited = true; });
    const until = Date.now() + 20_000;
    // The port may still be held for a moment by the previous process: retry the start.
    for (;;) {
      try {
        await waitForPort(this.port, 500);
        if (!exited) {
          this.watchForAnswers();
          return;
        }
      } catch { /* not yet */ }
      if (exited) {
        if (Date.now() > until) throw new Error(`redis-server did not start on ${this.port}`);
        await sleep(200);
        return this.launch();
      }
      if (Date.now() > until) throw new Error(`redis-server did not start on ${this.port}`);
    }
  }

  /** kill -9: the AOF (fsync always) holds every write Redis answered. */
  async kill9(): Promise<void> {
    if (!running(this.child)) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.down();
    process.kill(this.pid, 'SIGKILL');
    await exited;
  }

  /** SIGSTOP: the process stays, its sockets stay open, nothing is answered. */
  pause(): void {
    this.down();
    process.kill(this.pid, 'SIGSTOP');
  }

  resume(): void {
    process.kill(this.pid, 'SIGCONT');
    this.watchForAnswers();
  }

  /** The longest stretch of [from, to] in which it answered (no outage). */
  longestAnswering(from: number, to: number): number {
    return longestOutside([...this.outages, ...(this.downSince === null ? [] : [{ from: this.downSince, to: Infinity }])], from, to);
  }

  private down(): void {
    this.faultCount++;
    this.downSince ??= Date.now();
  }

  /** PINGs until a PONG (not LOADING) comes back to a PING sent after the latest fault: the outage ends. */
  private watchForAnswers(): void {
    if (this.pinging || this.downSince === null) return;
    this.pinging = true;
    void (async () => {
      while (this.downSince !== null && !this.stopped) {
        const count = this.faultCount;
        if ((await pingAnswers(this.port, 200)) && count === this.faultCount) {
          this.outages.push({ from: this.downSince, to: Date.now() });
          this.downSince = null;
        } else await sleep(20);
      }
      this.pinging = false;
    })();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (running(this.child)) {
      try { process.kill(this.pid, 'SIGCONT'); } catch { /* gone */ }
      await stopChild(this.child, 'SIGTERM', 5000);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether a PING on a new connection is answered `+PONG` within ms (a loading Redis answers `-LOADING`). */
function pingAnswers(port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

// ---------------------------------------------------------------- sidecars

/** The sidecar's command: REDSTALK_CMD (e.g. the built bundle), else src/cli.ts under tsx. */
function sidecarCommand(): string[] {
  const cmd = process.env.REDSTALK_CMD?.split(' ').filter(Boolean);
  return cmd?.length ? cmd : [process.execPath, '--import', 'tsx', path.join(ROOT, 'src/cli.ts')];
}

export class SpawnedSidecar {
  port = 0;
  /** The last 16 KB of its log. */
  log = '';
  /** Log lines at warn (40) or above, counted by message. */
  readonly warnings = new Map<string, number>();
  exitCode: number | null | undefined;
  exitSignal: NodeJS.Signals | null | undefined;

  private constructor(readonly name: string, readonly child: ChildProcess) {}

  get pid(): number { return this.child.pid!; }
  get alive(): boolean { return running(this.child); }

  /** Starts `redstalk -l 127.0.0.1 -p 0 --redis url --prefix prefix`; resolves once it is listening and ready. */
  static async start(name: string, redisUrl: string, prefix: string, extra: string[] = []): Promise<SpawnedSidecar> {
    const [bin, ...rest] = sidecarCommand();
    const { REDSTALK_CMD: _, ...env } = process.env; // the sidecar would warn about an unknown REDSTALK_ variable
    if (process.env.FAULTS_SIDECAR_ARGS) extra = [...extra, ...process.env.FAULTS_SIDECAR_ARGS.split(' ').filter(Boolean)];
    const args = [...rest, '-l', '127.0.0.1', '-p', '0', '--redis', redisUrl, '--prefix', prefix, '--log-level', 'info', '--log-format', 'json', ...extra];
    const child = track(spawn(bin!, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    const s = new SpawnedSidecar(name, child);
    child.once('exit', (code, signal) => { s.exitCode = code; s.exitSignal = signal; });
    let pending = '';
    let listening = false;
    let ready = false;
    // FAULTS_LOG_DIR: every line the sidecar writes also goes to <dir>/<name>-<pid>.log (for a post-mortem).
    const file = process.env.FAULTS_LOG_DIR ? createWriteStream(path.join(process.env.FAULTS_LOG_DIR, `${name}-${child.pid}.log`)) : null;
    if (file) child.once('exit', () => file.end());
    const keep = (d: Buffer) => {
      s.log = (s.log + d.toString()).slice(-16_384);
      file?.write(d);
    };
    child.stderr!.on('data', keep);
    child.stdout!.on('data', (d: Buffer) => {
      keep(d);
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        let entry: { level?: number; msg?: string; listen?: string };
        try { entry = JSON.parse(line) as typeof entry; } catch { continue; }
        if (entry.msg === 'redstalk listening' && entry.listen) {
          s.port = Number(entry.listen.slice(entry.listen.lastIndexOf(':') + 1));
          listening = true;
        }
        if (entry.msg === 'redstalk ready') ready = true;
        if ((entry.level ?? 0) >= 40 && entry.msg) s.warnings.set(entry.msg, (s.warnings.get(entry.msg) ?? 0) + 1);
      }
    });
    const until = Date.now() + 30_000;
    while (!(listening && ready)) {
      if (!s.alive) throw new Error(`sidecar ${name} exited before it was ready: ${s.log}`);
      if (Date.now() > until) {
        await stopChild(child, 'SIGKILL');
        throw new Error(`sidecar ${name} was not ready within 30 s: ${s.log}`);
      }
      await sleep(25);
    }
    return s;
  }

  /** Sends a signal; resolves to the exit code once it has exited. */
  signal(signal: NodeJS.Signals, killAfterMs = 15_000): Promise<number | null> {
    return stopChild(this.child, signal, killAfterMs);
  }

  /** The warn/error messages it logged, e.g. `redis link lost ×3`. */
  warningSummary(): string {
    return [...this.warnings].map(([m, n]) => `${m} ×${n}`).join('; ');
  }

  async stop(): Promise<void> { await stopChild(this.child, 'SIGTERM', 10_000); }
}

// ---------------------------------------------------------------- network

/**
 * A TCP proxy to a port (Redis', a sidecar's): cut() drops every link and refuses
 * new ones until restore(); hold() keeps every link open but forwards nothing
 * either way until restore(), which sends on what it held; muteReplies() lets
 * commands through to Redis but drops its replies.
 */
export class CuttableProxy {
  private readonly links = new Set<net.Socket>();
  /** The links' sockets to the target. */
  private readonly upstreams = new Set<net.Socket>();
  private cutOff = false;
  private muted = false;
  /** Bytes held, per socket they are for, in order: forwarded at restore(). */
  private held: Map<net.Socket, Buffer[]> | null = null;
  port = 0;
  cuts = 0;
  holds = 0;
  refused = 0;

  private constructor(private readonly server: net.Server, private target: number) {}

  static async start(target: number): Promise<CuttableProxy> {
    const server = net.createServer();
    const proxy = new CuttableProxy(server, target);
    server.on('connection', (c) => proxy.accept(c));
    proxy.port = await listenOnLoopback(server);
    return proxy;
  }

  get url(): string { return `redis://127.0.0.1:${this.port}`; }

  private accept(client: net.Socket): void {
    client.on('error', () => {});
    if (this.cutOff) {
      this.refused++;
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.target, '127.0.0.1');
    upstream.on('error', () => {});
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.links.add(client);
    this.links.add(upstream);
    this.upstreams.add(upstream);
    const end = () => {
      this.links.delete(client);
      this.links.delete(upstream);
      this.upstreams.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.once('close', end);
    upstream.once('close', end);
    // Read on while holding (not paused): an end that closes its link while bytes are held
    // closes the other end at once, so a connection's close is seen on both sides at the same time.
    client.on('data', (d: Buffer) => this.forward(d, client, upstream));
    upstream.on('data', (d: Buffer) => { if (!this.muted) this.forward(d, upstream, client); });
  }

  /** As a pipe: a reader waits while its writer's buffer is full (except while holding: read on). */
  private forward(d: Buffer, from: net.Socket, to: net.Socket): void {
    if (this.held) {
      const queue = this.held.get(to);
      if (queue) queue.push(d);
      else this.held.set(to, [d]);
    } else if (!to.write(d)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  }

  /** New links go to this port from now on (a restarted server on another port). */
  retarget(port: number): void { this.target = port; }

  /** Redis still gets every command (and runs it); the sidecar hears nothing back. */
  muteReplies(): void { this.muted = true; }

  /** Resets every link (both ways) and refuses new connections. */
  cut(): void {
    this.cutOff = true;
    this.cuts++;
    for (const s of [...this.links]) s.resetAndDestroy();
    this.links.clear();
  }

  /**
   * Holds every link's bytes, both ways, new links' too: nothing is forwarded and
   * nothing closed. A link that one end closes meanwhile is closed on the other
   * end at once, its held bytes dropped.
   */
  hold(): void {
    this.held ??= new Map();
    this.holds++;
  }

  /** The bytes held on their way to the target, in order (a drill reads what a sidecar sent). */
  heldForTarget(): Buffer {
    return Buffer.concat([...(this.held ?? [])].filter(([to]) => this.upstreams.has(to)).flatMap(([, queue]) => queue));
  }

  /** Forwards what was held (in order) and every byte from now on; accepts links again. */
  restore(): void {
    this.cutOff = false;
    this.muted = false;
    const held = this.held;
    this.held = null;
    if (held) for (const [to, queue] of held) if (!to.destroyed) for (const d of queue) to.write(d);
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Listens on a free loopback port; the port. */
export async function listenOnLoopback(server: net.Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return (server.address() as net.AddressInfo).port;
}
