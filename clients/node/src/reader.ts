// The reply reader: turns the bytes a server sends into whole replies, in
// order, parsing straight from the socket's Buffers. It knows framing only
// (which replies carry a body, how many bytes it has, RESERVED-MANY's
// blocks), not what any reply means: that is commands.ts' job.

const CR = 13;
const LF = 10;
/** No reply line is near this long; a longer one means the stream is not beanstalkd's. */
const MAX_LINE = 4096;

/** One reply: its line, and the data or blocks it announced. */
export interface Reply {
  /** The reply line without its CRLF (latin1: one char per byte). */
  line: string;
  /** The first word of the line: `INSERTED`, `NOT_FOUND`, ... */
  word: string;
  /** The words after it. */
  args: string[];
  /** The data of `RESERVED <id> <bytes>`, `FOUND <id> <bytes>` and `OK <bytes>`. */
  body?: Buffer;
  /** The `RESERVED` blocks of `RESERVED-MANY <n>`. */
  jobs?: Reply[];
}

/** The server sent something that cannot be framed: the connection cannot be trusted any more. */
export class MalformedReplyError extends Error {
  override name = 'MalformedReplyError';
}

const DIGITS = /^\d+$/;

/** The byte count a reply line announces for its data, or -1 when it has none. */
function announcedBytes(word: string, args: string[]): number {
  const count = word === 'OK' && args.length === 1 ? args[0]
    : (word === 'RESERVED' || word === 'FOUND') && args.length === 2 ? args[1] : undefined;
  if (count === undefined) return -1;
  if (!DIGITS.test(count)) throw new MalformedReplyError(`bad byte count in ${word} ${args.join(' ')}`);
  return Number(count);
}

export class ReplyReader {
  /** Bytes received and not yet parsed: a reply that is not complete yet. */
  private rest: Buffer | null = null;
  /** Pieces of a large body arrive in many chunks: they are joined once, when it is complete. */
  private waiting: Buffer[] = [];
  private waitingBytes = 0;
  /** Bytes the reply at the start of `rest` needs in all (0: unknown until a line end arrives). */
  private need = 0;
  /** A RESERVED-MANY whose blocks are still being read. */
  private many: { header: Reply; remaining: number } | null = null;

  constructor(private readonly onReply: (reply: Reply) => void) {}

  /** Feeds bytes from the server; calls onReply for each complete reply, in order. */
  push(chunk: Buffer): void {
    if (this.need > 0) {
      this.waiting.push(chunk);
      this.waitingBytes += chunk.length;
      if (this.waitingBytes < this.need) return;
      chunk = Buffer.concat(this.waiting, this.waitingBytes);
      this.waiting = [];
      this.waitingBytes = 0;
      this.need = 0;
    } else if (this.rest) {
      chunk = Buffer.concat([this.rest, chunk]);
    }
    this.rest = null;
    this.parse(chunk);
  }

  private parse(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      const lf = data.indexOf(LF, at);
      if (lf < 0) {
        if (data.length - at > MAX_LINE) throw new MalformedReplyError('reply line too long');
        break;
      }
      if (lf === at || data[lf - 1] !== CR) throw new MalformedReplyError(`reply line not ended by CRLF: ${JSON.stringify(data.toString('latin1', at, lf + 1))}`);
      const line = data.toString('latin1', at, lf - 1);
      const [word = '', ...args] = line.split(' ');
      const reply: Reply = { line, word, args };
      const bytes = announcedBytes(word, args);
      let next = lf + 1;
      if (bytes >= 0) {
        const end = next + bytes;
        if (end + 2 > data.length) {
          this.wait(data.subarray(at), end + 2 - at);
          return;
        }
        if (data[end] !== CR || data[end + 1] !== LF) throw new MalformedReplyError(`data of ${line} not followed by CRLF`);
        // A copy: a slice would keep the whole socket chunk alive as long as the job is.
        reply.body = Buffer.from(data.subarray(next, end));
        next = end + 2;
      }
      at = next;
      this.deliver(reply);
    }
    if (at < data.length) this.rest = data.subarray(at);
  }

  /** Keeps an incomplete reply until `need` bytes of it are here. */
  private wait(partial: Buffer, need: number): void {
    this.waiting = [partial];
    this.waitingBytes = partial.length;
    this.need = need;
  }

  private deliver(reply: Reply): void {
    if (this.many) {
      if (reply.word !== 'RESERVED' || !reply.body) throw new MalformedReplyError(`expected a RESERVED block, got ${reply.line}`);
      this.many.header.jobs!.push(reply);
      if (--this.many.remaining > 0) return;
      reply = this.many.header;
      this.many = null;
    } else if (reply.word === 'RESERVED-MANY') {
      const n = reply.args[0];
      if (reply.args.length !== 1 || !DIGITS.test(n!)) throw new MalformedReplyError(`bad count in ${reply.line}`);
      reply.jobs = [];
      if (Number(n) > 0) {
        this.many = { header: reply, remaining: Number(n) };
        return;
      }
    }
    this.onReply(reply);
  }
}
