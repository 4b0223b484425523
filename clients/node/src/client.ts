// A connection to redstalk (or beanstalkd): one promise-returning method per
// command. Commands are written as soon as they are called, so any number can
// be in flight; the server answers in order, and a FIFO of pending replies
// hands each reply to the command that asked for it.
import net from 'node:net';
import { DECODERS, type Check, type CommandName, type Entry, type Job, type Result } from './commands.js';
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
}

export interface PutOptions {
  /** 0 is the most urgent; below 1024 counts as urgent. Default 1024. */
  priority?: number;
  /** Seconds before the job becomes ready. Default 0. */
  delay?: number;
  /** Seconds a worker may hold the job before it is handed out again. Default 60. */
  ttr?: number;
}

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

interface Pending {
  decode: (reply: Reply) => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** A queue with O(1) shift: thousands of replies may be pending on one connection. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number { return this.items.length - this.head; }

  push(item: T): void { this.items.push(item); }

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

export class Client {
  /** Resolves when the connection has closed (quit, close, the server, or an error). */
  readonly closed: Promise<void>;
  private readonly pending = new Fifo<Pending>();
  private readonly reader: ReplyReader;
  private failure: ConnectionError | null = null;
  private corked = false;

  private constructor(private readonly socket: net.Socket) {
    this.reader = new ReplyReader((reply) => this.answer(reply));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.reader.push(chunk);
      } catch (err) {
        this.fail(new ConnectionError(`closing the connection: ${(err as Error).message}`, { cause: err }));
      }
    });
    socket.on('error', (err) => this.fail(new ConnectionError(err.message, { cause: err })));
    this.closed = new Promise((resolve) => socket.once('close', () => {
      this.fail(new ConnectionError('connection closed'));
      resolve();
    }));
  }

  /** Connects to a redstalk (or beanstalkd) server. */
  static connect(options: ConnectOptions = {}): Promise<Client> {
    const { host = '127.0.0.1', port = 11300, timeoutMs = 10_000 } = options;
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
        resolve(new Client(socket));
      });
    });
  }

  /** Replies still owed to this connection's commands. */
  get inFlight(): number { return this.pending.length; }

  // ---- jobs (beanstalkd)

  /** Puts a job into the used tube; resolves to its id. */
  async put(body: string | Buffer, options: PutOptions = {}): Promise<number> {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    const { priority = DEFAULT_PRIORITY, delay = 0, ttr = DEFAULT_TTR } = options;
    return this.call('put', `put ${whole('priority', priority)} ${whole('delay', delay)} ${whole('ttr', ttr)} ${data.length}`, data);
  }

  /** Puts later jobs into `tube`; resolves to the tube's name. */
  async use(tube: string): Promise<string> { return this.call('use', `use ${name('tube', tube)}`); }

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
  async watch(tube: string): Promise<number> { return this.call('watch', `watch ${name('tube', tube)}`); }

  /** Removes a tube from the watch list (NotIgnoredError for the last one). */
  async ignore(tube: string): Promise<number> { return this.call('ignore', `ignore ${name('tube', tube)}`); }

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
    return this.call('auth', `auth ${token}`);
  }

  // ---- the connection

  /** Asks the server to close the connection, after answering what was sent before. */
  async quit(): Promise<void> {
    if (!this.failure) this.write('quit\r\n');
    await this.closed;
  }

  /** Closes the connection now; replies still owed fail with ConnectionError. */
  async close(): Promise<void> {
    this.socket.destroy();
    await this.closed;
  }

  private call<C extends CommandName>(command: C, line: string, data?: Buffer): Promise<Result<C>> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ decode: DECODERS[command], resolve: resolve as (v: unknown) => void, reject });
      this.write(`${line}\r\n`);
      if (data) {
        this.write(data);
        this.write('\r\n');
      }
    });
  }

  /** Writes made in one tick leave in one system call. */
  private write(data: string | Buffer): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(data);
  }

  private answer(reply: Reply): void {
    const pending = this.pending.shift();
    if (!pending) throw new MalformedReplyError(`a reply nobody asked for: ${reply.line}`);
    try {
      pending.resolve(pending.decode(reply));
    } catch (err) {
      pending.reject(err);
    }
  }

  /** The connection is unusable: every reply still owed fails, and so does every later command. */
  private fail(err: ConnectionError): void {
    if (!this.failure) this.failure = err;
    this.socket.destroy();
    for (let p = this.pending.shift(); p; p = this.pending.shift()) p.reject(this.failure);
  }
}

/** Connects to a redstalk (or beanstalkd) server: `await connect({ port: 11300 })`. */
export const connect = Client.connect;
