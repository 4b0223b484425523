// Talking to a sidecar's admin API (/api/ of --http) in tests, and filling tubes over the protocol.
import type { Wire } from './wire.js';

export interface Reply<T = any> { status: number; body: T } // eslint-disable-line @typescript-eslint/no-explicit-any

export class AdminClient {
  constructor(readonly address: string, private readonly token: string | null = null) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const res = await fetch(`http://${this.address}${path}`, {
      method,
      headers: { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  }

  get(path: string): Promise<Reply> { return this.call('GET', path); }
  post(path: string, body: unknown = {}): Promise<Reply> { return this.call('POST', path, body); }
}

/** Puts the bodies into the tube in one write; their ids, in order. */
export async function putMany(w: Wire, tube: string, bodies: ReadonlyArray<string | Buffer>, opts: { pri?: number; delay?: number; ttr?: number } = {}): Promise<string[]> {
  const parts: Buffer[] = [Buffer.from(`use ${tube}\r\n`)];
  for (const b of bodies) {
    const body = Buffer.isBuffer(b) ? b : Buffer.from(b);
    parts.push(Buffer.from(`put ${opts.pri ?? 1024} ${opts.delay ?? 0} ${opts.ttr ?? 60} ${body.length}\r\n`), body, Buffer.from('\r\n'));
  }
  w.send(Buffer.concat(parts));
  await w.line();
  const ids: string[] = [];
  for (let i = 0; i < bodies.length; i++) {
    const line = await w.line(30_000);
    const m = /^INSERTED (\d+)$/.exec(line);
    if (!m) throw new Error(`put answered ${line}`);
    ids.push(m[1]!);
  }
  return ids;
}

/** Puts the bodies into the tube, then reserves and buries each; their ids. The connection watches what it did before. */
export async function putBuried(w: Wire, tube: string, bodies: readonly string[]): Promise<string[]> {
  const ids = await putMany(w, tube, bodies);
  const watching = Number(/^WATCHING (\d+)$/.exec(await w.cmd(`watch ${tube}`))![1]);
  for (const id of ids) {
    const reserved = await w.cmd(`reserve-job ${id}`);
    if (!reserved.startsWith(`RESERVED ${id} `)) throw new Error(`reserve-job ${id} answered ${reserved}`);
    const buried = await w.cmd(`bury ${id} 1`);
    if (buried !== 'BURIED') throw new Error(`bury ${id} answered ${buried}`);
  }
  if (watching > 1) await w.cmd(`ignore ${tube}`);
  return ids;
}

/** A reader of /api/events: the `live` events' data, as they come. */
export class LiveEvents {
  private buffer = '';
  readonly events: Array<Record<string, any>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
  private readonly controller = new AbortController();

  private constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  static async open(address: string, tube?: string): Promise<LiveEvents> {
    const controller = new AbortController();
    const res = await fetch(`http://${address}/api/events${tube === undefined ? '' : `?tube=${encodeURIComponent(tube)}`}`, { signal: controller.signal });
    if (res.headers.get('content-type') !== 'text/event-stream; charset=utf-8') throw new Error(`not an event stream: ${res.status}`);
    const feed = new LiveEvents(res.body!.getReader());
    feed.controller.signal.addEventListener('abort', () => controller.abort());
    void feed.pump();
    return feed;
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await this.reader.read();
        if (done) return;
        this.buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = this.buffer.indexOf('\n\n')) >= 0) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          const data = /^event: live\ndata: (.*)$/m.exec(block);
          if (data) this.events.push(JSON.parse(data[1]!));
        }
      }
    } catch { /* closed */ }
  }

  /** The first event from `from` on that satisfies `test`, within timeoutMs. */
  async until(test: (e: Record<string, any>) => boolean, from = 0, timeoutMs = 5000): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(test);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such live event within ${timeoutMs} ms; got ${JSON.stringify(this.events.slice(from))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  close(): void { this.controller.abort(); }
}

/** Writes `n` history samples a slot apart, ending now, into a one-shard data set's history (lua/jobs/history.lua's format). */
export async function seedHistory(redisUrl: string, prefix: string, n: number, slotMs = 10_000): Promise<void> {
  const { Redis } = await import('ioredis');
  const { Layout } = await import('../../src/store/layout.js');
  const redis = new Redis(redisUrl);
  try {
    const end = Math.floor(Date.now() / slotMs) * slotMs - slotMs;
    const args: Array<string | number> = [];
    for (let i = 0; i < n; i++) {
      const t = end - (n - 1 - i) * slotMs;
      const wave = Math.round(50 + 40 * Math.sin(i / 5));
      args.push(t, JSON.stringify({
        t, ready: wave * 3, reserved: wave, delayed: 10 + (i % 7), buried: Math.floor(i / 20), timeouts: Math.floor(i / 10), jobs: i * 400,
        put: i * 400, reserve: i * 390, delete: i * 385, connections: 12, sidecars: 2, oldest: { emails: wave / 10, sms: wave / 25 },
        latency: { emails: { wait: [wave, wave * 4], run: [120 + wave, 900 + wave] }, sms: { wait: [wave / 2, wave * 2], run: [40, 300] } },
      }));
    }
    await redis.zadd(new Layout(prefix, 1).keys(0).history, ...args);
  } finally {
    redis.disconnect();
  }
}
