// A connection to redstalk (or beanstalkd): one promise-returning method per
// command. Commands are written as soon as they are called, so any number can
// be in flight; the server answers in order, and a FIFO of pending replies
// hands each reply to the command that asked for it.
//
// A put-with with a key is the one command whose lost reply is repaired: the
// client connects again and sends it again, which the server answers with the
// same id whether or not the lost attempt stored the job.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { backoffMs } from './backoff.js';
import { DECODERS, type Check, type CommandName, type Entry, type Job, type PutResult, type Result } from './commands.js';
import { ConnectionError } from './errors.js';
import { MalformedReplyError, ReplyReader, type Reply } from './reader.js';
import type { JobStats, RoomStats, ServerStats, TubeStats } from './yaml.js';

export interface ConnectOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 11300. */
  port?: number;
  /** How long connecting may take, in ms (default 10000). */
  timeoutMs?: number;
  /** Every put carries a random key (a put-with): every put is safe to retry. redstalk only. Default false. */
  idempotent?: boolean;
  /** How a put-with with a key whose reply was lost is sent again. */
  retry?: RetryOptions;
}

export interface RetryOptions {
  /** Connections a put-with with a key is tried on at most, the first included (default 10). */
  attempts?: number;
  /** Wait before each new connection: baseMs × 2^n, at most maxMs, jittered (default 100, 5000). */
  baseMs?: number;
  maxMs?: number;
  /** A put-with with a key whose reply has not come this long after the replies before it counts as lost (default 10000). */
  replyTimeoutMs?: number;
}

export interface PutOptions {
  /** 0 is the most urgent; below 1024 counts as urgent. Default 1024. */
  priority?: number;
  /** Seconds before the job becomes ready. Default 0. */
  delay?: number;
  /** Seconds a worker may hold the job before it is handed out again. Default 60. */
  ttr?: number;
}

/** What happens to a job that no reserve has taken by its `expire`. */
export type OnExpiry = 'delete' | 'bury';

export interface PutWithOptions extends PutOptions {
  /**
   * The job's identity in its tube (1..128 bytes of \x21-\x7e, not `-`): a later put-with of
   * the key stores nothing and answers the first job's id. With a key the put is sent again
   * when its reply is lost. Default: none (a random one with `idempotent`).
   */
  key?: string;
  /** Seconds after the put at which the job, if no reserve has taken it, expires. Default 0: never. */
  expire?: number;
  /** Default 'delete'. */
  onExpiry?: OnExpiry;
}

/** A tube's settings (`tube-set`). */
export type TubeSetting = 'max-reserved' | 'reserve-rate' | 'dedup-window';

export interface ReleaseOptions {
  /** Default 1024. */
  priority?: number;
  /** Default 0. */
  delay?: number;
}

/** A waiting room's settings (`room-config`), in seconds. */
export interface RoomConfig {
  capacity: number;
  checkinTimeout: number;
  participantTimeout: number;
  grace: number;
}

export const DEFAULT_PRIORITY = 1024;
export const DEFAULT_TTR = 60;

type Settings = Required<Omit<ConnectOptions, 'retry'>> & { retry: Required<RetryOptions> };

/** A command: its bytes, and the promise waiting for its reply. */
interface Request {
  line: string;
  data?: Buffer;
  decode: (reply: Reply) => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** Runs when the command is written: records the session state it sets (use, auth). */
  onWrite?: () => void;
  /** A put-with with a key: the tube it went into, and the connections it was tried on. */
  retry?: { tube?: string; attempts: number };
}

/** A queue with O(1) shift: thousands of replies may be pending on one connection. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number { return this.items.length - this.head; }

  push(item: T): void { this.items.push(item); }

  peek(): T | undefined { return this.items[this.head]; }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/** A whole number the protocol accepts (u32 / seconds / ids). */
function whole(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a whole number >= 0, not ${n}`);
  return n;
}

/** A tube, room or user name: CR or LF would end the command line early and inject another. */
function name(what: string, s: string): string {
  if (typeof s !== 'string' || /[\r\n]/.test(s)) throw new TypeError(`${what} must be a string without CR or LF`);
  return s;
}

// A put-with the server refuses (BAD_FORMAT) leaves its body to be read as a command
// line, so its key and on-expiry are checked here, as the server checks them.

/** A put-with key: 1..128 printable bytes without spaces; `-` means no key. */
function putKey(key: string): string {
  if (typeof key !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(key) || key === '-') throw new TypeError('key must be 1..128 printable bytes without spaces, and not -');
  return key;
}

function onExpiryWord(onExpiry: OnExpiry): OnExpiry {
  if (onExpiry !== 'delete' && onExpiry !== 'bury') throw new TypeError(`onExpiry must be 'delete' or 'bury', not ${String(onExpiry)}`);
  return onExpiry;
}

const noop = () => {};

/** Opens a socket to the server. */
function dial({ host, port, timeoutMs }: Settings): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new ConnectionError(`could not connect to ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(new ConnectionError(`could not connect to ${host}:${port}: ${err.message}`, { cause: err }));
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
  });
}

export class Client {
  /** Resolves when the client is closed for good (quit, close, or a lost connection not repaired). */
  readonly closed: Promise<void>;
  private settleClosed: () => void = noop;
  private socket!: net.Socket;
  /** Whether `socket` is up: false from its loss until the next one is attached. */
  private connected = false;
  private readonly pending = new Fifo<Request>();
  /** Put-withs with a key whose reply was lost, oldest first: sent again on the next connection. */
  private owed: Request[] = [];
  /** Commands called while reconnecting, written once the new connection has the session back. */
  private readonly waiting: Request[] = [];
  private recovering = false;
  private recovered: Promise<void> = Promise.resolve();
  /** Ends the backoff wait before a reconnect at once (close). */
  private endBackoff = noop;
  private replyTimer: NodeJS.Timeout | undefined;
  private failure: ConnectionError | null = null;
  private quitting = false;
  private corked = false;
  /** The session a new connection is given back: the tube of the last `use` written, the watch list
   * the `watch` and `ignore` written leave (an ignore of the last tube is refused), the last token. */
  private tube = 'default';
  private readonly watched = new Set(['default']);
  private token: string | undefined;

  private constructor(private readonly settings: Settings, socket: net.Socket) {
    this.closed = new Promise((resolve) => { this.settleClosed = resolve; });
    this.attach(socket);
  }

  /** Connects to a redstalk (or beanstalkd) server. */
  static async connect(options: ConnectOptions = {}): Promise<Client> {
    const settings: Settings = {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 11300,
      timeoutMs: options.timeoutMs ?? 10_000,
      idempotent: options.idempotent ?? false,
      retry: {
        attempts: options.retry?.attempts ?? 10,
        baseMs: options.retry?.baseMs ?? 100,
        maxMs: options.retry?.maxMs ?? 5000,
        replyTimeoutMs: options.retry?.replyTimeoutMs ?? 10_000,
      },
    };
    return new Client(settings, await dial(settings));
  }

  /** Replies still owed to this client's commands (also those waiting for a new connection). */
  get inFlight(): number { return this.pending.length + this.owed.length + this.waiting.length; }

  // ---- jobs (beanstalkd)

  /** Puts a job into the used tube; resolves to its id. With `idempotent`, a put-with with a random key. */
  async put(body: string | Buffer, options: PutOptions = {}): Promise<number> {
    if (this.settings.idempotent) return (await this.putWith(body, options)).id;
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    const { priority = DEFAULT_PRIORITY, delay = 0, ttr = DEFAULT_TTR } = options;
    return this.call('put', `put ${whole('priority', priority)} ${whole('delay', delay)} ${whole('ttr', ttr)} ${data.length}`, data);
  }

  /**
   * Puts a job with a key and/or an expiry (redstalk only). With a key (or `idempotent`), a
   * lost reply is repaired: the same put is sent again on a new connection, and the promise
   * gets the job's id either way (`duplicate` when an earlier put of the key had stored it).
   */
  async putWith(body: string | Buffer, options: PutWithOptions = {}): Promise<PutResult> {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    const { priority = DEFAULT_PRIORITY, delay = 0, ttr = DEFAULT_TTR, expire = 0, onExpiry = 'delete' } = options;
    const key = options.key === undefined ? (this.settings.idempotent ? randomBytes(16).toString('hex') : undefined) : putKey(options.key);
    const line = `put-with ${key ?? '-'} ${whole('expire', expire)} ${onExpiryWord(onExpiry)} ${whole('priority', priority)} ${whole('delay', delay)} ${whole('ttr', ttr)} ${data.length}`;
    return this.call('put-with', line, data, key === undefined ? {} : { retry: { attempts: 1 } });
  }

  /** Puts later jobs into `tube`; resolves to the tube's name. */
  async use(tube: string): Promise<string> {
    return this.call('use', `use ${name('tube', tube)}`, undefined, { onWrite: () => { this.tube = tube; } });
  }

  /** Waits for a job from the watched tubes, however long it takes. */
  async reserve(): Promise<Job> { return this.call('reserve', 'reserve'); }

  /** Waits at most `seconds` for a job (TimedOutError after that). */
  async reserveWithTimeout(seconds: number): Promise<Job> {
    return this.call('reserve-with-timeout', `reserve-with-timeout ${whole('seconds', seconds)}`);
  }

  /** Reserves one particular job, if it is not reserved already. */
  async reserveJob(id: number): Promise<Job> { return this.call('reserve-job', `reserve-job ${whole('id', id)}`); }

  /**
   * Reserves up to `count` (1..1000) jobs in one round trip, waiting at most
   * `seconds` for the first one. Each job's TTR starts now. redstalk only.
   */
  async reserveMany(count: number, seconds: number): Promise<Job[]> {
    return this.call('reserve-many', `reserve-many ${whole('count', count)} ${whole('seconds', seconds)}`);
  }

  async delete(id: number): Promise<void> { return this.call('delete', `delete ${whole('id', id)}`); }

  /** Hands a reserved job back (ready, or delayed by `delay` seconds). */
  async release(id: number, options: ReleaseOptions = {}): Promise<void> {
    const { priority = DEFAULT_PRIORITY, delay = 0 } = options;
    return this.call('release', `release ${whole('id', id)} ${whole('priority', priority)} ${whole('delay', delay)}`);
  }

  async bury(id: number, priority = DEFAULT_PRIORITY): Promise<void> {
    return this.call('bury', `bury ${whole('id', id)} ${whole('priority', priority)}`);
  }

  /** Restarts a reserved job's TTR. */
  async touch(id: number): Promise<void> { return this.call('touch', `touch ${whole('id', id)}`); }

  /** Adds a tube to the watch list; resolves to how many are watched. */
  async watch(tube: string): Promise<number> {
    return this.call('watch', `watch ${name('tube', tube)}`, undefined, { onWrite: () => { this.watched.add(tube); } });
  }

  /** Removes a tube from the watch list (NotIgnoredError for the last one). */
  async ignore(tube: string): Promise<number> {
    const onWrite = () => { if (this.watched.size > 1) this.watched.delete(tube); };
    return this.call('ignore', `ignore ${name('tube', tube)}`, undefined, { onWrite });
  }

  async peek(id: number): Promise<Job> { return this.call('peek', `peek ${whole('id', id)}`); }
  async peekReady(): Promise<Job> { return this.call('peek-ready', 'peek-ready'); }
  async peekDelayed(): Promise<Job> { return this.call('peek-delayed', 'peek-delayed'); }
  async peekBuried(): Promise<Job> { return this.call('peek-buried', 'peek-buried'); }

  /** Kicks up to `bound` buried (else delayed) jobs of the used tube; resolves to how many. */
  async kick(bound: number): Promise<number> { return this.call('kick', `kick ${whole('bound', bound)}`); }

  async kickJob(id: number): Promise<void> { return this.call('kick-job', `kick-job ${whole('id', id)}`); }

  async statsJob(id: number): Promise<JobStats> { return this.call('stats-job', `stats-job ${whole('id', id)}`); }
  async statsTube(tube: string): Promise<TubeStats> { return this.call('stats-tube', `stats-tube ${name('tube', tube)}`); }
  async stats(): Promise<ServerStats> { return this.call('stats', 'stats'); }
  async listTubes(): Promise<string[]> { return this.call('list-tubes', 'list-tubes'); }
  async listTubeUsed(): Promise<string> { return this.call('list-tube-used', 'list-tube-used'); }
  async listTubesWatched(): Promise<string[]> { return this.call('list-tubes-watched', 'list-tubes-watched'); }

  /** Stops reserves from `tube` for `seconds` (0 resumes it now). */
  async pauseTube(tube: string, seconds: number): Promise<void> {
    return this.call('pause-tube', `pause-tube ${name('tube', tube)} ${whole('seconds', seconds)}`);
  }

  /** Changes a tube's setting (redstalk only): its cap on jobs reserved at once or reserves a second, or its dedup window. */
  async tubeSet(tube: string, setting: TubeSetting, value: number): Promise<void> {
    return this.call('tube-set', `tube-set ${name('tube', tube)} ${name('setting', setting)} ${whole('value', value)}`);
  }

  // ---- waiting rooms (redstalk)

  /** Lets `user` into `room`, or gives their place in line. */
  async enter(room: string, user: string): Promise<Entry> {
    return this.call('enter', `enter ${name('room', room)} ${name('user', user)}`);
  }

  /** Checks in (keeps the place) without entering; `ready` means `enter` will let them in. */
  async check(room: string, user: string): Promise<Check> {
    return this.call('check', `check ${name('room', room)} ${name('user', user)}`);
  }

  async leave(room: string, user: string): Promise<void> {
    return this.call('leave', `leave ${name('room', room)} ${name('user', user)}`);
  }

  async roomConfig(room: string, config: RoomConfig): Promise<void> {
    const { capacity, checkinTimeout, participantTimeout, grace } = config;
    return this.call('room-config', `room-config ${name('room', room)} ${whole('capacity', capacity)} ${whole('checkinTimeout', checkinTimeout)} ${whole('participantTimeout', participantTimeout)} ${whole('grace', grace)}`);
  }

  /** Admits at most `perMinute` people a minute (0: no limit). */
  async roomRate(room: string, perMinute: number): Promise<void> {
    return this.call('room-rate', `room-rate ${name('room', room)} ${whole('perMinute', perMinute)}`);
  }

  async pauseRoom(room: string, paused: boolean): Promise<void> {
    return this.call('pause-room', `pause-room ${name('room', room)} ${paused ? 1 : 0}`);
  }

  /** Opens a lottery pre-queue for an event `seconds` from now (0: the event starts now). */
  async roomLottery(room: string, seconds: number): Promise<void> {
    return this.call('room-lottery', `room-lottery ${name('room', room)} ${whole('seconds', seconds)}`);
  }

  async statsRoom(room: string): Promise<RoomStats> { return this.call('stats-room', `stats-room ${name('room', room)}`); }
  async listRooms(): Promise<string[]> { return this.call('list-rooms', 'list-rooms'); }

  // ---- auth (redstalk)

  /** Gives the server's token (UnauthorizedError when wrong; the server closes after three). */
  async auth(token: string): Promise<void> {
    if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) throw new TypeError('token must be printable bytes without spaces');
    return this.call('auth', `auth ${token}`, undefined, { onWrite: () => { this.token = token; } });
  }

  // ---- the connection

  /** Asks the server to close the connection, after answering what was sent before (a reconnect finishes first). */
  async quit(): Promise<void> {
    while (this.recovering) await this.recovered;
    if (!this.failure) {
      this.quitting = true;
      this.write('quit\r\n');
    }
    await this.closed;
  }

  /** Closes the connection now; replies still owed fail with ConnectionError, and no put is sent again. */
  async close(): Promise<void> {
    this.fail(new ConnectionError('connection closed'));
    await this.closed;
  }

  private call<C extends CommandName>(command: C, line: string, data?: Buffer, extra: Pick<Request, 'onWrite' | 'retry'> = {}): Promise<Result<C>> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const request: Request = { line, data, decode: DECODERS[command], resolve: resolve as (v: unknown) => void, reject, ...extra };
      if (this.recovering) this.waiting.push(request);
      else this.send(request);
    });
  }

  /** Writes a command on the connection; its reply is the next one owed after those pending. */
  private send(request: Request): void {
    request.onWrite?.();
    if (request.retry) request.retry.tube ??= this.tube;
    this.pending.push(request);
    this.write(`${request.line}\r\n`);
    if (request.data) {
      this.write(request.data);
      this.write('\r\n');
    }
    if (this.pending.length === 1) this.watchReply();
  }

  /** Writes made in one tick leave in one system call. */
  private write(data: string | Buffer): void {
    const socket = this.socket;
    if (!this.corked) {
      this.corked = true;
      socket.cork();
      process.nextTick(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    socket.write(data);
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    this.connected = true;
    const reader = new ReplyReader((reply) => this.answer(reply));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      if (socket !== this.socket || !this.connected) return; // a lost connection's last bytes
      try {
        reader.push(chunk);
      } catch (err) {
        this.lost(socket, new ConnectionError(`closing the connection: ${(err as Error).message}`, { cause: err }));
      }
    });
    socket.on('error', (err) => this.lost(socket, new ConnectionError(err.message, { cause: err })));
    socket.once('close', () => this.lost(socket, new ConnectionError('connection closed')));
  }

  private answer(reply: Reply): void {
    const request = this.pending.shift();
    if (!request) throw new MalformedReplyError(`a reply nobody asked for: ${reply.line}`);
    this.watchReply();
    try {
      request.resolve(request.decode(reply));
    } catch (err) {
      request.reject(err);
    }
  }

  /**
   * A put-with with a key next in line has replyTimeoutMs for its reply (a put behind a
   * blocked reserve waits for it first): a silent connection is then treated as lost.
   */
  private watchReply(): void {
    clearTimeout(this.replyTimer);
    if (!this.pending.peek()?.retry) return;
    const { socket } = this;
    const ms = this.settings.retry.replyTimeoutMs;
    this.replyTimer = setTimeout(() => this.lost(socket, new ConnectionError(`no reply to a put-with within ${ms} ms`)), ms);
  }

  /**
   * The connection is gone: the replies owed fail with ConnectionError, except those of
   * put-withs with a key, which are sent again on a new connection. With none of those
   * (or after quit) the client is closed for good, as a plain beanstalkd client would be.
   */
  private lost(socket: net.Socket, err: ConnectionError): void {
    if (socket !== this.socket || !this.connected) return;
    this.connected = false;
    clearTimeout(this.replyTimer);
    socket.destroy();
    const resend: Request[] = [];
    for (let r = this.pending.shift(); r; r = this.pending.shift()) {
      if (r.retry && !this.quitting) resend.push(r);
      else r.reject(err);
    }
    this.owed.unshift(...resend);
    if (this.recovering) return; // the reconnect under way takes them along
    if (this.owed.length === 0) return this.fail(err);
    this.recovering = true;
    this.recovered = this.recover(err);
  }

  /** Connects again (with backoff) until the owed puts are sent again, or each has used its attempts. */
  private async recover(cause: ConnectionError): Promise<void> {
    const { attempts, baseMs, maxMs } = this.settings.retry;
    const exhausted = (r: Request) => r.retry!.attempts >= attempts;
    for (let n = 0; ; n++) {
      for (const r of this.owed.filter(exhausted)) r.reject(new ConnectionError(`put-with: no reply after ${attempts} attempts: ${cause.message}`, { cause }));
      this.owed = this.owed.filter((r) => !exhausted(r));
      if (this.owed.length === 0 || this.failure) break;
      for (const r of this.owed) r.retry!.attempts++;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoffMs(n, baseMs, maxMs));
        this.endBackoff = () => { clearTimeout(timer); resolve(); };
      });
      if (this.failure) return; // closed meanwhile
      try {
        const socket = await dial(this.settings);
        if (this.failure) {
          socket.destroy();
          return;
        }
        this.attach(socket);
        await this.restore();
        this.recovering = false;
        for (const r of this.waiting.splice(0)) this.send(r);
        return;
      } catch (err) {
        if (this.failure) return;
        cause = err instanceof ConnectionError ? err : new ConnectionError(`could not restore the session: ${(err as Error).message}`, { cause: err });
        this.lost(this.socket, cause);
      }
    }
    this.recovering = false;
    this.fail(new ConnectionError(`gave up reconnecting: ${cause.message}`, { cause }));
  }

  /**
   * Gives the new connection the session back (the token, and at last the used tube and the
   * watch list) and sends the owed puts again, each into its tube: a put is written only once
   * its `use` has answered, so a `use` that fails (e.g. INTERNAL_ERROR) never sends it elsewhere.
   */
  private async restore(): Promise<void> {
    if (this.token !== undefined) await this.session('auth', `auth ${this.token}`);
    let tube = 'default';
    while (this.owed.length > 0) {
      const next = this.owed[0]!.retry!.tube!;
      if (next !== tube) await this.session('use', `use ${next}`);
      tube = next;
      this.send(this.owed.shift()!);
    }
    if (this.tube !== tube) await this.session('use', `use ${this.tube}`);
    for (const watched of this.watched) if (watched !== 'default') await this.session('watch', `watch ${watched}`);
    if (!this.watched.has('default')) await this.session('ignore', 'ignore default'); // last: one tube is always watched
  }

  /** A command of the reconnect itself, sent on the new connection. */
  private session(command: 'auth' | 'use' | 'watch' | 'ignore', line: string): Promise<unknown> {
    return new Promise((resolve, reject) => this.send({ line, decode: DECODERS[command], resolve, reject }));
  }

  /** The client is done: every reply owed fails, and so does every later command. */
  private fail(err: ConnectionError): void {
    if (this.failure) return;
    this.failure = err;
    this.connected = false;
    this.recovering = false;
    clearTimeout(this.replyTimer);
    this.endBackoff();
    for (let r = this.pending.shift(); r; r = this.pending.shift()) r.reject(err);
    for (const r of [...this.owed.splice(0), ...this.waiting.splice(0)]) r.reject(err);
    this.socket.destroy();
    if (this.socket.closed) this.settleClosed();
    else this.socket.once('close', () => this.settleClosed());
  }
}

/** Connects to a redstalk (or beanstalkd) server: `await connect({ port: 11300 })`. */
export const connect = Client.connect;
