// Reserve over many watched tubes: connections that each watch --tubes tubes
// (w0 ... w<n-1>) loop on `reserve-with-timeout 0` (deleting what they get),
// producers put into watched tubes at a fixed total --rate, and another client
// (its own tube, watched by nobody) loops put + delete, one command in flight.
// Measured: the watchers' reserve latency (send -> reply) and the other
// client's put and delete latency meanwhile; redstalk (this checkout) and,
// with --baseline DIR, an old checkout, interleaved in one run.
//   npx tsx bench/many-tubes.ts [--baseline /tmp/base] [--tubes 10000] [--watchers 4] [--rate 200]
//                               [--duration 10] [--rounds 2] [--shards N]
//   npx tsx bench/many-tubes.ts --connect PORT   (a sidecar already running: e.g. under node --cpu-prof)
import net from 'node:net';
import { parseArgs } from 'node:util';
import { Histogram } from './stats.js';
import { ROOT, startTarget, stopEverything, useBaseline, type RunningTarget, type Target } from './servers.js';

const { values } = parseArgs({
  options: {
    tubes: { type: 'string' }, watchers: { type: 'string' }, rate: { type: 'string' }, duration: { type: 'string' },
    rounds: { type: 'string' }, shards: { type: 'string' }, baseline: { type: 'string' }, connect: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write('npx tsx bench/many-tubes.ts [--baseline DIR] [--tubes 10000] [--watchers 4] [--rate 200] [--duration 10] [--rounds 2] [--shards N] [--connect PORT]\n');
  process.exit(0);
}
const TUBES = Number(values.tubes ?? 10_000);
const WATCHERS = Number(values.watchers ?? 4);
const RATE = Number(values.rate ?? 200);
const DURATION_S = Number(values.duration ?? 10);
const ROUNDS = Number(values.rounds ?? 2);
const SHARDS = values.shards ? Number(values.shards) : undefined;
/** Producers putting into watched tubes (each its own tube, spread over the range). */
const PRODUCERS = 8;
const WARMUP_MS = 1000;

/** One connection, one reply per command in order (RESERVED with its body). */
class Client {
  private buf: Buffer = Buffer.alloc(0);
  private readonly pending: Array<(reply: string) => void> = [];

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => { this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d; this.parse(); });
  }

  static connect(port: number): Promise<Client> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => resolve(new Client(s)));
      s.once('error', reject);
    });
  }

  private parse(): void {
    for (;;) {
      const lf = this.buf.indexOf('\r\n');
      if (lf < 0) return;
      const line = this.buf.toString('latin1', 0, lf);
      let end = lf + 2;
      if (line.startsWith('RESERVED ')) {
        end += Number(line.slice(line.lastIndexOf(' ') + 1)) + 2;
        if (this.buf.length < end) return;
      }
      this.buf = this.buf.subarray(end);
      this.pending.shift()!(line);
    }
  }

  cmd(line: string): Promise<string> {
    return new Promise((resolve) => {
      this.pending.push(resolve);
      this.socket.write(`${line}\r\n`);
    });
  }

  /** Many commands at once, their replies in order. */
  async many(lines: string[]): Promise<string[]> {
    const replies = lines.map(() => new Promise<string>((resolve) => this.pending.push(resolve)));
    this.socket.write(lines.map((l) => `${l}\r\n`).join(''));
    return Promise.all(replies);
  }

  close(): void { this.socket.destroy(); }
}

interface Result { reserve: Histogram; reserves: number; reservedJobs: number; put: Histogram; del: Histogram; other: Histogram; otherOps: number }

async function measure(port: number): Promise<Result> {
  const watchers = await Promise.all(Array.from({ length: WATCHERS }, () => Client.connect(port)));
  const tubes = Array.from({ length: TUBES }, (_, i) => `w${i}`);
  for (const w of watchers) {
    for (let i = 0; i < TUBES; i += 1000) await w.many(tubes.slice(i, i + 1000).map((t) => `watch ${t}`));
    if ((await w.cmd('ignore default')) !== `WATCHING ${TUBES}`) throw new Error('the watchers do not watch the tubes');
  }
  const producers = await Promise.all(Array.from({ length: PRODUCERS }, () => Client.connect(port)));
  await Promise.all(producers.map((p, i) => p.cmd(`use w${Math.floor(((i + 0.5) * TUBES) / PRODUCERS)}`)));
  const other = await Client.connect(port);
  await other.cmd('use other');

  const result: Result = { reserve: new Histogram(), reserves: 0, reservedJobs: 0, put: new Histogram(), del: new Histogram(), other: new Histogram(), otherOps: 0 };
  const start = performance.now();
  const measuredFrom = start + WARMUP_MS;
  const end = measuredFrom + DURATION_S * 1000;
  const counting = (t: number) => t >= measuredFrom && t < end;

  const watch = async (w: Client) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const r = await w.cmd('reserve-with-timeout 0');
      if (counting(t0)) { result.reserve.recordMs(performance.now() - t0); result.reserves++; }
      const m = /^RESERVED (\d+) /.exec(r);
      if (m) {
        if (counting(t0)) result.reservedJobs++;
        await w.cmd(`delete ${m[1]}`);
      } else if (r !== 'TIMED_OUT') throw new Error(`reserve: ${r}`);
    }
  };
  const bystander = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const r = await other.cmd('put 0 0 60 5\r\nhello');
      const t1 = performance.now();
      const m = /^INSERTED (\d+)$/.exec(r);
      if (!m) throw new Error(`put: ${r}`);
      const d = await other.cmd(`delete ${m[1]}`);
      const t2 = performance.now();
      if (d !== 'DELETED') throw new Error(`delete: ${d}`);
      if (counting(t0)) {
        result.put.recordMs(t1 - t0); result.del.recordMs(t2 - t1);
        result.other.recordMs(t1 - t0); result.other.recordMs(t2 - t1);
        result.otherOps += 2;
      }
    }
  };
  // Open loop: put k is due at start + k / rate, spread over the producers.
  const produce = async () => {
    let k = 0;
    const inFlight: Array<Promise<string>> = [];
    while (performance.now() < end) {
      const due = start + (k * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inFlight.push(producers[k % PRODUCERS]!.cmd('put 0 0 60 3\r\njob'));
      k++;
    }
    for (const r of await Promise.all(inFlight)) if (!r.startsWith('INSERTED')) throw new Error(`put: ${r}`);
  };
  await Promise.all([...watchers.map(watch), bystander(), ...(RATE > 0 ? [produce()] : [])]);
  for (const c of [...watchers, ...producers, other]) c.close();
  return result;
}

const ms = (h: Histogram, q: number) => h.quantileMs(q).toFixed(2);

function line(target: string, round: number, r: Result): string {
  return `${target.padEnd(9)} round ${round}: reserve-with-timeout 0 over ${TUBES} tubes: ${(r.reserves / DURATION_S).toFixed(0)}/s `
    + `(${r.reservedJobs} jobs), p50 ${ms(r.reserve, 0.5)} ms, p99 ${ms(r.reserve, 0.99)} ms; `
    + `other client: ${(r.otherOps / DURATION_S).toFixed(0)} cmds/s, put p50 ${ms(r.put, 0.5)} p99 ${ms(r.put, 0.99)} ms, `
    + `delete p50 ${ms(r.del, 0.5)} p99 ${ms(r.del, 0.99)} ms, both p99 ${ms(r.other, 0.99)} ms`;
}

async function main(): Promise<void> {
  if (values.connect) {
    process.stdout.write(`${line(`:${values.connect}`, 1, await measure(Number(values.connect)))}\n`);
    return;
  }
  const targets: Target[] = ['redstalk'];
  if (values.baseline) {
    useBaseline(values.baseline);
    targets.push('baseline');
  }
  process.stdout.write(`# ${WATCHERS} watchers of ${TUBES} tubes, producers at ${RATE} puts/s into watched tubes, `
    + `${DURATION_S} s a round${SHARDS ? `, --shards ${SHARDS}` : ''}; redstalk = ${ROOT}${values.baseline ? `, baseline = ${values.baseline}` : ''}\n`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of round % 2 ? targets : [...targets].reverse()) {
      const running: RunningTarget = await startTarget(target, { persistence: 'everysec', shards: SHARDS });
      try {
        process.stdout.write(`${line(target, round, await measure(running.ports[0]!))}\n`);
      } finally {
        await running.stop();
      }
    }
  }
}

main().then(
  async () => { await stopEverything(); process.exit(0); },
  async (err: unknown) => {
    process.stderr.write(`many-tubes: ${err instanceof Error ? err.stack : String(err)}\n`);
    await stopEverything();
    process.exit(2);
  },
);
