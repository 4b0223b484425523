// A Redis command written straight into RESP bytes: one buffer, reused from
// call to call, instead of ioredis' per-argument encoding (an array of
// arguments, a string per header, a buffer per part, then a copy of them all).
// What the batch call sends is mostly the same keys again and again: those
// are written once (`encoded`) and copied in as bytes.

const CR = 13;
const LF = 10;
const DOLLAR = 36;
const MINUS = 45;
/** Strings up to this length are copied char by char. */
const SHORT = 64;
/** A placeholder's width: any count a command can carry. */
const PLACEHOLDER_DIGITS = 10;

function decimalLength(n: number): number {
  let len = 1;
  while (n >= 10) { n = Math.floor(n / 10); len++; }
  return len;
}

/** Bulk strings: `$<length>\r\n<bytes>\r\n`, each. */
export function encoded(...items: readonly string[]): Buffer {
  const w = new RespWriter(256);
  for (const item of items) w.string(item);
  return w.take();
}

export class RespWriter {
  private buf: Buffer;
  private at = 0;
  /** Bulk strings written since the last take(). */
  private items = 0;

  constructor(initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.at + bytes));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }

  private header(length: number): void {
    this.room(length + 16);
    this.buf[this.at++] = DOLLAR;
    this.digits(length);
    this.crlf();
  }

  private crlf(): void {
    this.buf[this.at++] = CR;
    this.buf[this.at++] = LF;
  }

  private end(): void {
    this.crlf();
    this.items++;
  }

  /** A non-negative integer's decimal digits (room must be made). */
  private digits(n: number): void {
    const b = this.buf;
    if (n < 10) { b[this.at++] = 48 + n; return; }
    const len = decimalLength(n);
    let at = this.at + len;
    this.at = at;
    while (n >= 10) {
      const q = Math.floor(n / 10);
      b[--at] = 48 + (n - q * 10);
      n = q;
    }
    b[--at] = 48 + n;
  }

  string(s: string): void {
    if (s.length <= SHORT && this.asciiCopy(s)) return;
    const length = Buffer.byteLength(s);
    this.header(length);
    this.at += this.buf.write(s, this.at, 'utf8');
    this.end();
  }

  /** A short string copied char by char (cheaper than a call into Buffer.write); false if it is not ASCII. */
  private asciiCopy(s: string): boolean {
    const start = this.at;
    this.header(s.length);
    const b = this.buf;
    let at = this.at;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 127) { this.at = start; return false; }
      b[at++] = c;
    }
    this.at = at;
    this.end();
    return true;
  }

  /** A string known to be ASCII (an op code, a job id): its length is its byte count. */
  ascii(s: string): void {
    if (s.length <= SHORT) { this.asciiCopy(s); return; }
    this.header(s.length);
    this.at += this.buf.write(s, this.at, 'latin1');
    this.end();
  }

  /** An integer, in decimal. */
  int(n: number): void {
    if (!Number.isSafeInteger(n)) { this.ascii(String(n)); return; }
    const negative = n < 0;
    const abs = negative ? -n : n;
    const len = decimalLength(abs) + (negative ? 1 : 0);
    this.header(len);
    if (negative) this.buf[this.at++] = MINUS;
    this.digits(abs);
    this.end();
  }

  bytes(b: Buffer): void {
    this.header(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
    this.end();
  }

  /** Bulk strings written so far (since the last take() or command()). */
  get count(): number {
    return this.items;
  }

  /**
   * A non-negative integer not known yet, as a bulk string of PLACEHOLDER_DIGITS
   * digits (leading zeros: Lua's tonumber reads it); its position, for patch().
   */
  placeholder(): number {
    this.header(PLACEHOLDER_DIGITS);
    const at = this.at;
    this.buf.fill(48, at, at + PLACEHOLDER_DIGITS);
    this.at += PLACEHOLDER_DIGITS;
    this.end();
    return at;
  }

  /** Writes n into a placeholder. */
  patch(at: number, n: number): void {
    const digits = String(n);
    if (digits.length > PLACEHOLDER_DIGITS) throw new RangeError(`${n} does not fit a placeholder`);
    this.buf.write(digits, at + PLACEHOLDER_DIGITS - digits.length, 'latin1');
  }

  /** `count` bulk strings already encoded (see `encoded`). */
  raw(bytes: Buffer, count: number): void {
    this.room(bytes.length);
    this.at += bytes.copy(this.buf, this.at);
    this.items += count;
  }

  /** What was written, copied out (the buffer is reused); the writer is empty again. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.at));
    this.at = 0;
    this.items = 0;
    return out;
  }

  /**
   * The whole command: `*<n>\r\n`, then `head` (`headItems` bulk strings:
   * the command's name and first arguments), then what was written, as one
   * buffer; the writer is empty again.
   */
  command(head: Buffer, headItems: number): Buffer {
    const count = `*${headItems + this.items}\r\n`;
    const out = Buffer.allocUnsafe(count.length + head.length + this.at);
    let at = out.write(count, 0, 'latin1');
    at += head.copy(out, at);
    this.buf.copy(out, at, 0, this.at);
    this.at = 0;
    this.items = 0;
    return out;
  }
}
