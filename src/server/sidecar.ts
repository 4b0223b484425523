// One redstalk process, composed: the backend (stores and wake-ups), the
// command dispatcher and its services, the listener and its
// connections, and the background work (promotion timer, presence).
// Several sidecars on one Redis behave as one server.
import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import type { Logger } from 'pino';
import { readFileSync } from 'node:fs';
import { tokenDigest, tokenMatches } from '../commands/auth.js';
import type { Config } from '../config/settings.js';
import { Dispatcher, unhandledCommands } from '../commands/dispatch.js';
import type { Services } from '../commands/session.js';
import { COMMANDS } from '../protocol/spec.js';
import type { Backend } from '../store/backend.js';
import { isOutcomeUnknown, StoreError } from '../store/errors.js';
import type { JobStore } from '../store/job-store.js';
import { OpCode, readyAtOnce, type AnyJobOp, type ReservedJob } from '../store/ops.js';
import type { RoomSettings } from '../store/room-store.js';
import { Background } from './background.js';
import { Connection, type ConnectionHost } from './connection.js';
import { allOf, type Instruments } from './instruments.js';
import { Listener, tlsFilesOf, type EarlyRead } from './listener.js';
import { Counters } from './counters.js';
import type { LatencyKind } from './latencies.js';
import { Presence } from './presence.js';
import { Promoter } from './promoter.js';
import { StatsCollector } from './stats.js';
import { Waiters } from './waiters.js';

/** The settings a sidecar itself reads (src/config/settings.ts says what each means). */
export type SidecarConfig = Pick<Config, 'listen' | 'port' | 'maxJobSize' | 'heartbeatMs' | 'shutdownGraceMs'
  | 'tlsCert' | 'tlsKey' | 'tlsCa' | 'maxConnections' | 'authToken' | 'authTokenFile'>;

/** The configured auth token's digest (from the setting or its file), or null when connections need none. */
export function authDigest(config: Pick<Config, 'authToken' | 'authTokenFile'>): Buffer | null {
  let token = config.authToken;
  if (config.authTokenFile) {
    try {
      token = readFileSync(config.authTokenFile, 'latin1').split(/\r?\n/)[0]!.trim();
    } catch (err) {
      throw new Error(`cannot read the auth token file ${config.authTokenFile}: ${(err as Error).message}`);
    }
    if (!token) throw new Error(`the auth token file ${config.authTokenFile} is empty`);
    if (!/^[\x21-\x7e]{1,217}$/.test(token)) throw new Error(`the auth token in ${config.authTokenFile} must be 1 to 217 printable bytes without spaces (auth <token> fits a 224-byte line)`);
  }
  return token ? tokenDigest(token) : null;
}

/** What a reserve gets while this sidecar's lease is not renewed: it took no effect. */
const NOT_SERVING = new StoreError('failed', 'this sidecar\'s lease is not renewed: no reserve until it is');

/** A hand-back the store refused (its link up) is tried again after this, doubling up to the max. */
const REFUSED_PAUSE_MS = 100;
const MAX_REFUSED_PAUSE_MS = 2000;

/** Polls cond every 5 ms until it holds or the deadline (ms since epoch) passes. */
async function until(cond: () => boolean, deadline: number): Promise<void> {
  while (!cond() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Logs every command with its reply line and time, and every batch call, at trace level (-VV). */
function traceLog(log: Logger): Instruments {
  return {
    answered: (command, reply, ms) => log.trace({ command, reply, ms }, 'command'),
    batchApplied: (ops, ms, failed) => log.trace({ ops, ms, failed }, 'batch call'),
    jobTimed: () => {},
  };
}

export class Sidecar implements ConnectionHost {
  readonly nodeId = randomBytes(8).toString('hex');
  readonly counters = new Counters();
  readonly dispatcher: Dispatcher;
  readonly instruments: Instruments | null;
  readonly authRequired: boolean;
  readonly stats: StatsCollector;
  private readonly waiters: Waiters;
  private readonly presence: Presence;
  private readonly promoter: Promoter;
  private readonly background: Background;
  private listener: Listener | null = null;
  private readonly connections = new Set<Connection>();
  /** Open client sockets, including those a graceful stop has half-closed. */
  private readonly sockets = new Set<net.Socket>();
  private nextConnectionId = 1;
  /** What closes after the sidecar (the HTTP endpoint). */
  private readonly companions: Array<() => Promise<void>> = [];
  private draining = false;
  private stopping = false;
  /** Settles when the sidecar starts to stop (ends waits for the store). */
  private readonly stopped: Promise<void>;
  private stop!: () => void;
  /** The listening address: host:port, or unix:PATH. */
  address = '';
  port = 0;

  constructor(private readonly config: SidecarConfig, private readonly backend: Backend, readonly log: Logger, instruments: Instruments[] = []) {
    const { jobs, rooms } = backend;
    this.stopped = new Promise((resolve) => { this.stop = resolve; });
    this.instruments = allOf(log.isLevelEnabled('trace') ? [...instruments, traceLog(log)] : instruments);
    this.background = new Background(log);
    const timing = this.instruments;
    if (timing) jobs.observe((ops, ms, failed) => timing.batchApplied(ops, ms, failed));
    this.presence = new Presence(this.nodeId, jobs, this.counters, config.heartbeatMs, this.background, log,
      () => this.closeHolders(), () => this.closeHolders());
    this.promoter = new Promoter(jobs, log);
    this.waiters = new Waiters({
      submit: (op) => this.submit(op),
      reservesAtOnce: (tubes) => jobs.reservesAtOnce(tubes),
      waitingChanged: (owner, tubes, wide, delta) => {
        if (wide) this.counters.wideWaitingDelta(owner, wide, delta);
        else this.counters.waitingDelta(tubes, delta);
        this.presence.statsChanged();
      },
      giveBack: (owner, jobs) => this.giveBack(owner, jobs),
      giveBackAll: (owner) => this.giveBackAll(owner),
    });
    this.stats = new StatsCollector({
      jobs, rooms, counters: this.counters, presence: this.presence, startedAt: Date.now(),
      maxJobSize: config.maxJobSize, draining: () => this.draining,
    });
    const auth = authDigest(config);
    this.authRequired = auth !== null;
    const services: Services = {
      jobs: this.fenced(jobs), rooms, stats: this.stats, maxJobSize: config.maxJobSize,
      authenticates: (token) => auth === null || tokenMatches(auth, token),
      wait: (s, timeout, shape) => this.waiters.wait(s, timeout, shape),
      reference: (tube, use, delta) => this.presence.reference(tube, use, delta),
      draining: () => this.draining,
      reservesAtOnce: (s) => this.waiters.reservesAtOnce(s),
      countCommand: (counter) => {
        this.counters.count(counter);
        this.presence.statsChanged();
      },
    };
    this.dispatcher = new Dispatcher(services);
  }

  /** Connects to the store, then serves on the listener (one opened now if none is given). */
  async start(listener?: Listener): Promise<void> {
    const missing = unhandledCommands(COMMANDS.map((c) => c.name));
    if (missing.length) throw new Error(`no handler for: ${missing.join(', ')}`);
    await this.backend.open(this.waiters);
    await this.presence.start();
    this.promoter.arm(0);
    if (!listener) {
      listener = await Listener.open(this.config.listen, this.config.port, tlsFilesOf(this.config));
      this.log.info({ listen: listener.address }, 'redstalk listening');
    }
    this.listener = listener;
    this.address = listener.address;
    this.port = listener.port;
    listener.attach((socket, early) => this.accept(socket, early), (err) => this.log.error({ err }, 'listener error'));
    this.log.info({ listen: this.address, node: this.nodeId }, 'redstalk ready');
  }

  private accept(socket: net.Socket, early: readonly EarlyRead[]): void {
    if (this.stopping) { socket.destroy(); return; }
    if (this.config.maxConnections > 0 && this.connections.size >= this.config.maxConnections) {
      socket.destroy();
      this.log.warn({ limit: this.config.maxConnections }, 'connection refused: --max-connections reached');
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    const c = new Connection(this.nextConnectionId++, this.nodeId, socket, this);
    this.connections.add(c);
    this.counters.connections++;
    this.counters.totalConnections++;
    this.presence.reference('default', 'using', 1);
    this.presence.reference('default', 'watching', 1);
    for (const r of early) c.receive(r.data, r.at);
  }

  /** The job store, but a reserve-job takes nothing while the lease is not renewed (see Presence). */
  private fenced(jobs: JobStore): JobStore {
    const reserveJob: JobStore['reserveJob'] = (owner, id, tube) => (this.presence.serving ? jobs.reserveJob(owner, id, tube) : Promise.reject(NOT_SERVING));
    // The store's methods run with the proxy as `this`, which reads their fields through to the store.
    return new Proxy(jobs, { get: (target, name) => (name === 'reserveJob' ? reserveJob : Reflect.get(target, name)) });
  }

  // ---- ConnectionHost ----

  submit(op: AnyJobOp): void {
    if (op.code === OpCode.Reserve && !this.presence.serving) {
      setImmediate(() => op.done(op, undefined, NOT_SERVING));
      return;
    }
    this.backend.jobs.submit(op);
    // A job about to be ready goes to a waiter of this sidecar in the same call.
    if ((op.code === OpCode.Put || op.code === OpCode.PutWith || op.code === OpCode.Release) && readyAtOnce(op)) this.waiters.readying(op.tube);
  }

  dueIn(ms: number): void {
    this.promoter.arm(ms);
  }

  becameProducer(): void {
    this.counters.producers++;
  }

  jobTimed(kind: LatencyKind, tube: string, ms: number): void {
    this.counters.latencies.observe(kind, tube, ms);
    this.instruments?.jobTimed(kind, tube, ms);
  }

  becameWorker(): void {
    this.counters.workers++;
  }

  halfClosed(c: Connection): void {
    this.waiters.timeOut(c);
  }

  closed(c: Connection): void {
    this.connections.delete(c);
    this.counters.connections--;
    if (c.isProducer) this.counters.producers--;
    if (c.isWorker) this.counters.workers--;
    this.waiters.cancel(c);
    if (c.uncertain) {
      c.reserved.clear();
      this.giveBackAll(c.owner);
    } else if (c.reserved.size > 0) {
      const jobs = [...c.reserved].map(([id, r]) => ({ id, tube: r.tube }));
      c.reserved.clear();
      this.giveBack(c.owner, jobs);
    }
    this.presence.reference(c.used, 'using', -1);
    for (const t of c.watched) this.presence.reference(t, 'watching', -1);
  }

  strayed(c: Connection, jobs: readonly ReservedJob[] | null): void {
    if (jobs) this.giveBack(c.owner, jobs);
    else this.giveBackAll(c.owner);
  }

  /**
   * Everything `owner` holds goes back, found in the store (for a connection
   * closed with an unknown outcome: it may hold jobs it was never told of).
   */
  private giveBackAll(owner: string): void {
    this.untilStored(() => this.backend.jobs.releaseHeldBy(owner), owner, 'handed back the jobs of a connection closed with an unknown outcome');
  }

  private giveBack(owner: string, jobs: ReadonlyArray<Pick<ReservedJob, 'id' | 'tube'>>): void {
    const held = jobs.map((j) => [j.id, j.tube] as const);
    this.untilStored(() => this.backend.jobs.releaseOwned(owner, held), owner, 'handed back the jobs of a closed connection');
  }

  /**
   * Reservations go back as soon as the store answers. A stopping sidecar
   * hands back nothing here: its sockets may still be open (replies not yet
   * read), and a client must not see its job handed to another before its
   * connection closes; leaving (close) hands back everything it held once
   * every socket is closed.
   */
  private untilStored(release: () => Promise<number>, owner: string, done: string): void {
    if (this.stopping) return;
    this.background.track(this.persist(release, this.stopped).then((n) => {
      if (n > 0) this.log.debug({ owner, jobs: n }, done);
    }), 'give back jobs');
  }

  /**
   * Runs a store call until the store takes it, or `until` has settled (then
   * the last error). An attempt that timed out is tried again at once (it
   * queues behind what a stalled store has yet to run); one the store's link
   * refused, once the link is up again; one the store refused, after a
   * growing pause.
   */
  private async persist<T>(call: () => Promise<T>, until: Promise<void>): Promise<T> {
    let over = false;
    void until.then(() => { over = true; });
    for (let pause = REFUSED_PAUSE_MS; ;) {
      const sent = performance.now();
      try {
        return await call();
      } catch (err) {
        if (over) throw err;
        // (Quickly unknown, as when the link broke: no spinning.)
        if (isOutcomeUnknown(err) && performance.now() - sent >= REFUSED_PAUSE_MS) continue;
        const link = this.backend.linkWait();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([link ?? new Promise((r) => { timer = setTimeout(r, pause); }), until]);
        clearTimeout(timer);
        if (!link) pause = Math.min(pause * 2, MAX_REFUSED_PAUSE_MS);
      }
    }
  }

  // ---- lifetime ----

  /**
   * Closes at once every connection that holds a reservation or may come to
   * (anything of it running: a reserve waiting or in flight); keeps listening.
   */
  private closeHolders(): void {
    for (const c of [...this.connections]) if (c.reserved.size > 0 || c.uncertain || !c.idle) c.abort();
  }

  /** Closes `close` once the sidecar has stopped. */
  closeWith(close: () => Promise<void>): void {
    this.companions.push(close);
  }

  /** Whether new puts answer DRAINING. */
  get isDraining(): boolean { return this.draining; }

  /** null when this sidecar serves and its store answers (within 1 s), else why not (for /readyz). */
  async readiness(): Promise<string | null> {
    if (this.stopping) return 'stopping';
    if (!this.listener) return 'starting';
    if (this.draining) return 'draining';
    return this.backend.health(1000);
  }

  /** SIGUSR1: new puts answer DRAINING (cannot be undone, as in beanstalkd). */
  drain(): void {
    this.draining = true;
    this.log.info('entering drain mode');
  }

  /**
   * Stops accepting and reading; answers what is in flight; closes every
   * connection, without waiting for clients to close their side; once every
   * socket is closed, hands back their reservations and leaves Redis clean.
   * Commands in flight and replies not yet written get shutdownGraceMs at
   * most; so does leaving, once the store answers (tried again until then).
   */
  async close(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stop();
    const deadline = Date.now() + this.config.shutdownGraceMs;
    const stoppedListening = this.listener?.close() ?? Promise.resolve();
    for (const c of this.connections) {
      c.stopReading();
      this.waiters.cancel(c); // a blocked reserve ends without a reply, as when beanstalkd exits
    }
    await until(() => this.backend.jobs.pending === 0 && [...this.connections].every((c) => c.idle), deadline);
    for (const c of [...this.connections]) c.quit();
    this.promoter.stop();
    this.presence.stop();
    // Replies handed to the kernel still reach the client after we close; only
    // a client too slow to read them holds the stop, for the grace period at most.
    await until(() => [...this.sockets].every((socket) => socket.writableLength === 0), deadline);
    for (const socket of this.sockets) socket.destroy();
    await this.background.idle();
    // Every socket is closed now: what its connection held may go to others.
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((r) => { timer = setTimeout(r, Math.max(0, deadline - Date.now())); });
    try {
      await this.persist(() => this.presence.leave(), graceOver);
    } catch (err) {
      this.log.warn({ err }, 'could not hand back the reservations and leave in Redis (the other sidecars reap them once the lease lapses)');
    } finally {
      clearTimeout(timer);
    }
    await stoppedListening;
    for (const close of this.companions) await close();
    await this.backend.close();
    this.log.info('redstalk stopped');
  }
}

