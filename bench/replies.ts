// An incremental parser for the beanstalkd replies the load generator expects,
// working on Buffers as they arrive (no strings, no regex on the hot path).

const CR = 13;
const LF = 10;
const SPACE = 32;
const ZERO = 48;

export const enum Reply { Inserted, Reserved, Deleted, TimedOut, /** USING or WATCHING */ Tube, Other }

export interface ReplyHandler {
  /** One reply line (without its CRLF) at data[start, end). */
  onLine(kind: Reply, data: Buffer, start: number, end: number): void;
  /** RESERVED: the id's digits are data[idStart, idEnd), the body data[bodyStart, bodyStart + bytes). */
  onReserved(data: Buffer, idStart: number, idEnd: number, bodyStart: number, bytes: number): void;
}

function kindOf(data: Buffer, at: number): Reply {
  switch (data[at]) {
    case 0x49: return Reply.Inserted; // INSERTED <id>
    case 0x54: return data[at + 1] === 0x49 ? Reply.TimedOut : Reply.Other; // TIMED_OUT
    case 0x44: return data[at + 2] === 0x4c ? Reply.Deleted : Reply.Other; // DELETED (not DEADLINE_SOON / DRAINING)
    case 0x55: return data[at + 1] === 0x53 ? Reply.Tube : Reply.Other; // USING (not UNKNOWN_COMMAND)
    case 0x57: return Reply.Tube; // WATCHING
    default: return Reply.Other;
  }
}

/** True for a line starting with "RESERVED " (not RELEASED). */
function isReserved(data: Buffer, at: number): boolean {
  return data[at] === 0x52 && data[at + 2] === 0x53 && data[at + 3] === 0x45 && data[at + 8] === SPACE;
}

export class ReplyParser {
  private rest: Buffer | null = null;

  constructor(private readonly handler: ReplyHandler) {}

  push(chunk: Buffer): void {
    const data = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const lf = data.indexOf(LF, at);
      if (lf < 0) break;
      const end = data[lf - 1] === CR ? lf - 1 : lf;
      if (isReserved(data, at)) {
        const idStart = at + 9;
        const idEnd = data.indexOf(SPACE, idStart);
        let bytes = 0;
        for (let i = idEnd + 1; i < end; i++) bytes = bytes * 10 + data[i]! - ZERO;
        const bodyStart = lf + 1;
        if (bodyStart + bytes + 2 > data.length) break; // the body is still on its way
        this.handler.onReserved(data, idStart, idEnd, bodyStart, bytes);
        at = bodyStart + bytes + 2;
      } else {
        this.handler.onLine(kindOf(data, at), data, at, end);
        at = lf + 1;
      }
    }
    this.rest = at < data.length ? data.subarray(at) : null;
  }
}
