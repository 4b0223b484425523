// The floors (bench targets `floor` and `floor-redis`): a Node server that
// answers the benchmark's commands with no more than they need:
//   node --import tsx bench/floor-server.ts PORT              jobs in memory
//   node --import tsx bench/floor-server.ts PORT REDIS_URL    jobs in Redis (floor-redis.ts)
// It reads and writes its sockets as redstalk's sidecar does (a read per
// arrival, the replies of a turn in one write), so its CPU per job is the least
// any Node sidecar can spend on this machine for the same clients: what
// redstalk's sidecar could at best get down to. With a Redis, every job is
// kept there by the least a durable job needs (floor-redis.ts), so the server
// and its Redis together are the least any Node sidecar on Redis can spend.
// It knows use, watch, ignore, put, reserve, reserve-with-timeout (a timer
// each, as beanstalkd), delete and stats, one FIFO per tube; priorities,
// delays and TTRs are ignored. A client has one command in flight: its next
// one runs once the last is answered (the benchmark's plain clients).
import net from 'node:net';

export interface Job { id: number; body: Buffer }

/** Where the jobs are kept: each op answers its client (put: client.inserted, ...), at once or when its store has. */
export interface Store {
  /** Keeps a job put on `tube`; hands it to `waiter` (already off the waiting lists) when there is one. */
  put(client: Client, tube: string, body: Buffer, waiter: Client | undefined): void;
  /** The first ready job of the tubes; `mayWait`: the client blocks when there is none (it may still get one). */
  reserve(client: Client, tubes: ReadonlySet<string>, mayWait: boolean): void;
  delete(client: Client, id: number): void;
  /** Jobs ready and reserved. */
  stats(client: Client): void;
}

const CRLF = Buffer.from('\r\n');
const EMPTY = Buffer.alloc(0);

/** Per tube, the clients blocked in a reserve that watch it, first come first served. */
const waiting = new Map<string, Client[]>();

function waitersOf(tube: string): Client[] {
  let w = waiting.get(tube);
  if (!w) waiting.set(tube, (w = []));
  return w;
}

/** The client a job put on `tube` goes to, off every waiting list; undefined when none waits. */
function takeWaiter(tube: string): Client | undefined {
  const waiter = waiting.get(tube)?.shift();
  waiter?.unwait();
  return waiter;
}

export class Client {
  private input: Buffer = EMPTY;
  private output: Buffer[] = [];
  private used = 'default';
  private readonly watched = new Set(['default']);
  /** No command runs: one waits for its answer, or blocks in reserve until a job comes. */
  private blocked = false;
  /** Inside run(): an answer given meanwhile lets its loop go on instead of entering it again. */
  private running = false;
  /** The reserve waiting for its answer: reserve-with-timeout's seconds, or null (reserve). */
  private timeout: string | null = null;
  /** A blocked reserve-with-timeout's timer (TIMED_OUT when no job came). */
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly socket: net.Socket, private readonly store: Store) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.input = this.input.length ? Buffer.concat([this.input, d]) : d;
      if (!this.running) this.run();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.unwait());
  }

  /** Off every waiting list, its timer stopped. */
  unwait(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const name of this.watched) {
      const w = waitersOf(name);
      const i = w.indexOf(this);
      if (i >= 0) w.splice(i, 1);
    }
  }

  private reply(b: Buffer | string): void {
    if (this.output.length === 0) process.nextTick(this.flush);
    this.output.push(typeof b === 'string' ? Buffer.from(b) : b);
  }

  private readonly flush = (): void => {
    const parts = this.output;
    this.output = [];
    if (!this.socket.destroyed) this.socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  };

  /** The command waiting for its answer has it: the next one may run. */
  private answered(): void {
    this.blocked = false;
    if (!this.running) this.run();
  }

  inserted(id: number): void {
    this.reply(`INSERTED ${id}\r\n`);
    this.answered();
  }

  deleted(found: boolean): void {
    this.reply(found ? 'DELETED\r\n' : 'NOT_FOUND\r\n');
    this.answered();
  }

  counted(ready: number, reserved: number): void {
    const yaml = `---\ncurrent-jobs-ready: ${ready}\ncurrent-jobs-reserved: ${reserved}\ncurrent-jobs-delayed: 0\ncurrent-jobs-buried: 0\n`;
    this.reply(`OK ${Buffer.byteLength(yaml)}\r\n${yaml}\r\n`);
    this.answered();
  }

  /** The reserve's answer: a job, or none (TIMED_OUT for reserve-with-timeout 0, else it waits for a put). */
  reserved(job: Job | undefined): void {
    if (job) return this.wake(job);
    if (this.timeout === '0') {
      this.reply('TIMED_OUT\r\n');
      return this.answered();
    }
    for (const t of this.watched) waitersOf(t).push(this);
    if (this.timeout !== null) this.timer = setTimeout(this.timedOut, Number(this.timeout) * 1000);
  }

  /** A job for its reserve. */
  wake(job: Job): void {
    this.reply(`RESERVED ${job.id} ${job.body.length}\r\n`);
    this.reply(Buffer.concat([job.body, CRLF]));
    this.answered();
  }

  private readonly timedOut = (): void => {
    this.timer = null;
    this.unwait();
    this.reply('TIMED_OUT\r\n');
    this.answered();
  };

  private run(): void {
    this.running = true;
    let at = 0;
    while (!this.blocked) {
      const end = this.input.indexOf(CRLF, at);
      if (end < 0) break;
      const line = this.input.toString('latin1', at, end);
      const [name, ...args] = line.split(' ');
      if (name === 'put') {
        const bytes = Number(args[3]);
        if (this.input.length < end + 2 + bytes + 2) break;
        const body = Buffer.from(this.input.subarray(end + 2, end + 2 + bytes));
        at = end + 2 + bytes + 2;
        this.blocked = true;
        this.store.put(this, this.used, body, takeWaiter(this.used));
        continue;
      }
      at = end + 2;
      this.command(name!, args);
    }
    this.input = at === this.input.length ? EMPTY : this.input.subarray(at);
    this.running = false;
  }

  private command(name: string, args: string[]): void {
    if (name === 'use') { this.used = args[0]!; return this.reply(`USING ${this.used}\r\n`); }
    if (name === 'watch') { this.watched.add(args[0]!); return this.reply(`WATCHING ${this.watched.size}\r\n`); }
    if (name === 'ignore') { this.watched.delete(args[0]!); return this.reply(`WATCHING ${this.watched.size}\r\n`); }
    this.blocked = true;
    if (name === 'delete') return this.store.delete(this, Number(args[0]));
    if (name === 'reserve' || name === 'reserve-with-timeout') {
      this.timeout = name === 'reserve' ? null : args[0]!;
      return this.store.reserve(this, this.watched, this.timeout !== '0');
    }
    if (name === 'stats') return this.store.stats(this);
    this.blocked = false;
    this.reply('UNKNOWN_COMMAND\r\n');
  }
}

/** Jobs in memory: one FIFO per tube, every answer given at once. */
class MemoryStore implements Store {
  private readonly tubes = new Map<string, { jobs: Job[]; head: number }>();
  private readonly reservedJobs = new Map<number, Job>();
  private nextId = 1;

  private tube(name: string) {
    let t = this.tubes.get(name);
    if (!t) this.tubes.set(name, (t = { jobs: [], head: 0 }));
    return t;
  }

  private take(name: string): Job | undefined {
    const t = this.tube(name);
    if (t.head === t.jobs.length) return undefined;
    const job = t.jobs[t.head]!;
    t.jobs[t.head++] = undefined as unknown as Job;
    if (t.head === t.jobs.length) { t.jobs = []; t.head = 0; }
    return job;
  }

  put(client: Client, tube: string, body: Buffer, waiter: Client | undefined): void {
    const job = { id: this.nextId++, body };
    if (waiter) {
      this.reservedJobs.set(job.id, job);
      waiter.wake(job);
    } else {
      this.tube(tube).jobs.push(job);
    }
    client.inserted(job.id);
  }

  reserve(client: Client, tubes: ReadonlySet<string>): void {
    for (const t of tubes) {
      const job = this.take(t);
      if (job) {
        this.reservedJobs.set(job.id, job);
        return client.reserved(job);
      }
    }
    client.reserved(undefined);
  }

  delete(client: Client, id: number): void {
    client.deleted(this.reservedJobs.delete(id));
  }

  stats(client: Client): void {
    let ready = 0;
    for (const t of this.tubes.values()) ready += t.jobs.length - t.head;
    client.counted(ready, this.reservedJobs.size);
  }
}

const [port, redisUrl] = process.argv.slice(2);
const store: Store = redisUrl ? await (await import('./floor-redis.js')).RedisStore.open(redisUrl) : new MemoryStore();
net.createServer((socket) => new Client(socket, store)).listen(Number(port), '127.0.0.1');
