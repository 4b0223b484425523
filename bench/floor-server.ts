// The floor (bench target `floor`): a Node server that answers the benchmark's
// commands from memory, with no store, no batching and no persistence:
//   node --import tsx bench/floor-server.ts PORT
// It reads and writes its sockets as redstalk's sidecar does (a read per
// arrival, the replies of a turn in one write), so its CPU per job is the least
// any Node sidecar can spend on this machine for the same clients: what
// redstalk's sidecar could at best get down to. It knows use, watch, ignore,
// put, reserve, reserve-with-timeout (a timer each, as beanstalkd), delete and
// stats, one FIFO per tube; priorities, delays and TTRs are ignored.
import net from 'node:net';

interface Job { id: number; body: Buffer }

const CRLF = Buffer.from('\r\n');
const tubes = new Map<string, { jobs: Job[]; head: number; waiting: Client[] }>();
const reserved = new Map<number, Job>();
let nextId = 1;

function tube(name: string) {
  let t = tubes.get(name);
  if (!t) tubes.set(name, (t = { jobs: [], head: 0, waiting: [] }));
  return t;
}

function take(name: string): Job | undefined {
  const t = tube(name);
  if (t.head === t.jobs.length) return undefined;
  const job = t.jobs[t.head]!;
  t.jobs[t.head++] = undefined as unknown as Job;
  if (t.head === t.jobs.length) { t.jobs = []; t.head = 0; }
  return job;
}

class Client {
  private input: Buffer = Buffer.alloc(0);
  private output: Buffer[] = [];
  private used = 'default';
  private watched = new Set(['default']);
  /** Blocked in reserve: no command runs until a job comes. */
  private blocked = false;
  /** A blocked reserve-with-timeout's timer (TIMED_OUT when no job came). */
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.input = this.input.length ? Buffer.concat([this.input, d]) : d;
      this.run();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.unwait());
  }

  private unwait(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const name of this.watched) {
      const w = tube(name).waiting;
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

  deliver(job: Job): void {
    reserved.set(job.id, job);
    this.reply(`RESERVED ${job.id} ${job.body.length}\r\n`);
    this.reply(Buffer.concat([job.body, CRLF]));
  }

  private readonly timedOut = (): void => {
    this.timer = null;
    this.blocked = false;
    this.unwait();
    this.reply('TIMED_OUT\r\n');
    this.run();
  };

  wake(job: Job): void {
    this.blocked = false;
    this.unwait();
    this.deliver(job);
    this.run();
  }

  private run(): void {
    let at = 0;
    while (!this.blocked) {
      const end = this.input.indexOf(CRLF, at);
      if (end < 0) break;
      const line = this.input.toString('latin1', at, end);
      const [name, ...args] = line.split(' ');
      if (name === 'put') {
        const bytes = Number(args[3]);
        if (this.input.length < end + 2 + bytes + 2) break;
        const id = nextId++;
        const job = { id, body: Buffer.from(this.input.subarray(end + 2, end + 2 + bytes)) };
        at = end + 2 + bytes + 2;
        const waiter = tube(this.used).waiting.shift();
        if (waiter) waiter.wake(job);
        else tube(this.used).jobs.push(job);
        this.reply(`INSERTED ${id}\r\n`);
        continue;
      }
      at = end + 2;
      this.command(name!, args);
    }
    this.input = at === this.input.length ? Buffer.alloc(0) : this.input.subarray(at);
  }

  private command(name: string, args: string[]): void {
    if (name === 'use') { this.used = args[0]!; return this.reply(`USING ${this.used}\r\n`); }
    if (name === 'watch') { this.watched.add(args[0]!); return this.reply(`WATCHING ${this.watched.size}\r\n`); }
    if (name === 'ignore') { this.watched.delete(args[0]!); return this.reply(`WATCHING ${this.watched.size}\r\n`); }
    if (name === 'delete') return this.reply(reserved.delete(Number(args[0])) ? 'DELETED\r\n' : 'NOT_FOUND\r\n');
    if (name === 'reserve' || name === 'reserve-with-timeout') {
      for (const t of this.watched) {
        const job = take(t);
        if (job) return this.deliver(job);
      }
      if (name === 'reserve-with-timeout' && args[0] === '0') return this.reply('TIMED_OUT\r\n');
      this.blocked = true;
      for (const t of this.watched) tube(t).waiting.push(this);
      if (name === 'reserve-with-timeout') this.timer = setTimeout(this.timedOut, Number(args[0]) * 1000);
      return;
    }
    if (name === 'stats') {
      let ready = 0;
      for (const t of tubes.values()) ready += t.jobs.length - t.head;
      const yaml = `---\ncurrent-jobs-ready: ${ready}\ncurrent-jobs-reserved: ${reserved.size}\ncurrent-jobs-delayed: 0\ncurrent-jobs-buried: 0\n`;
      return this.reply(`OK ${Buffer.byteLength(yaml)}\r\n${yaml}\r\n`);
    }
    this.reply('UNKNOWN_COMMAND\r\n');
  }
}

const port = Number(process.argv[2]);
net.createServer((socket) => new Client(socket)).listen(port, '127.0.0.1');
