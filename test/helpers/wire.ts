import net from 'node:net';
import { idRanksFor, type JobIdRanks } from './topology.js';

/** Commands whose first argument is a job id. */
const ID_COMMAND = /(^|\r\n)(delete|release|bury|touch|peek|kick-job|stats-job|reserve-job)( +)(\d+)/gi;

/**
 * A raw protocol connection for tests: write bytes, read exact lines and chunks.
 * Mirrors beanstalkd's testserv.c helpers (send / expect).
 */
export class Wire {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(readonly socket: net.Socket, private readonly ranks: JobIdRanks | null) {
    socket.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.wake(); });
    socket.on('close', () => { this.closed = true; this.wake(); });
    socket.on('error', () => { /* surfaced as close */ });
  }

  /** A TCP port on host, or the path of a UNIX socket; `realIds`: never show ids by put order (sharded runs). */
  static connect(port: number | string, host = '127.0.0.1', realIds = false): Promise<Wire> {
    return new Promise((resolve, reject) => {
      const s = typeof port === 'string' ? net.connect(port) : net.connect(port, host);
      s.setNoDelay(true);
      s.once('connect', () => resolve(new Wire(s, realIds ? null : idRanksFor(port))));
      s.once('error', reject);
    });
  }

  private wake(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }

  private async until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (this.closed) throw new Error(`connection closed while waiting for ${what}; have ${JSON.stringify(this.buf.toString('latin1'))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; have ${JSON.stringify(this.buf.toString('latin1'))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  send(data: string | Buffer): void {
    const ranks = this.ranks;
    if (ranks) {
      const text = Buffer.isBuffer(data) ? data.toString('latin1') : data;
      const sent = text.replace(ID_COMMAND, (_all, start: string, command: string, space: string, rank: string) => `${start}${command}${space}${ranks.idOf(rank)}`);
      data = Buffer.isBuffer(data) ? Buffer.from(sent, 'latin1') : sent;
    }
    this.socket.write(data);
  }

  /** One reply line without its CRLF. */
  async line(timeoutMs = 5000): Promise<string> {
    await this.until(() => this.buf.indexOf('\r\n') >= 0, timeoutMs, 'a line');
    const i = this.buf.indexOf('\r\n');
    const s = this.buf.subarray(0, i).toString('latin1');
    this.buf = this.buf.subarray(i + 2);
    if (!this.ranks) return s;
    const ok = /^OK (\d+)$/.exec(s);
    return ok ? this.rankedYaml(Number(ok[1]), timeoutMs) : this.ranked(s);
  }

  /** stats-job's id as a rank: the YAML (still buffered) and so its byte count change. */
  private async rankedYaml(bytes: number, timeoutMs: number): Promise<string> {
    await this.until(() => this.buf.length >= bytes + 2, timeoutMs, `${bytes} bytes`);
    const yaml = this.buf.subarray(0, bytes).toString('latin1');
    const ranked = Buffer.from(yaml.replace(/\nid: (\d+)\n/, (_all, id: string) => `\nid: ${this.ranks!.rankOf(id)}\n`), 'latin1');
    this.buf = Buffer.concat([ranked, this.buf.subarray(bytes)]);
    return `OK ${ranked.length}`;
  }

  /** A reply line with its job id as a rank (sharded test runs). */
  private ranked(line: string): string {
    const ranks = this.ranks!;
    if (line === 'EXPECTED_CRLF' || line === 'DRAINING') ranks.burn();
    const m = /^(INSERTED|BURIED|RESERVED|FOUND|DUPLICATE) (\d+)(.*)$/.exec(line);
    if (!m) return line;
    // A job reserved before its put's reply was read (another connection's put) gets its rank now.
    return `${m[1]} ${ranks.learn(m[2]!)}${m[3]}`;
  }

  /** Exactly n bytes (used for bodies: call with bytes + 2 to take the CRLF too). */
  async bytes(n: number, timeoutMs = 5000): Promise<Buffer> {
    await this.until(() => this.buf.length >= n, timeoutMs, `${n} bytes`);
    const b = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return Buffer.from(b);
  }

  /** A reply line, plus its data chunk when the line announces one (RESERVED/FOUND/OK). */
  async reply(timeoutMs = 5000): Promise<{ line: string; body?: Buffer }> {
    const line = await this.line(timeoutMs);
    const m = /^(?:RESERVED \d+|FOUND \d+|OK) (\d+)$/.exec(line);
    if (!m) return { line };
    const chunk = await this.bytes(Number(m[1]) + 2, timeoutMs);
    const body = chunk.subarray(0, chunk.length - 2);
    return { line, body };
  }

  /** Sends a command and returns the reply line (and body text, joined by \n). */
  async cmd(command: string, timeoutMs = 5000): Promise<string> {
    this.send(command + '\r\n');
    const r = await this.reply(timeoutMs);
    return r.body === undefined ? r.line : `${r.line}\n${r.body.toString('latin1')}`;
  }

  /** True when nothing arrives within ms (e.g. a blocked reserve). */
  async silent(ms: number): Promise<boolean> {
    await new Promise((r) => setTimeout(r, ms));
    return this.buf.length === 0;
  }

  /** Resolves when the server closes the connection. */
  async waitClosed(timeoutMs = 5000): Promise<void> { await this.until(() => this.closed, timeoutMs, 'close'); }

  close(): void { this.socket.destroy(); }
}

/** The `key: value` lines of a `cmd()` result for stats / stats-job / stats-tube. */
export function yamlMap(reply: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of reply.split('\n').slice(2)) {
    const m = /^([a-z-]+): (.*)$/.exec(l);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Connections a test opened, closed together in afterEach. */
export class WirePool {
  private readonly wires: Wire[] = [];

  async dial(port: number | string, realIds = false): Promise<Wire> {
    const w = await Wire.connect(port, '127.0.0.1', realIds);
    this.wires.push(w);
    return w;
  }

  closeAll(): void {
    for (const w of this.wires.splice(0)) w.close();
  }
}
