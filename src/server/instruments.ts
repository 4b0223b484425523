// What a sidecar reports as it works, for whoever measures it (the trace
// log, the Prometheus metrics of src/http/): every command with its reply and
// time, every batch call to the store, and how long jobs waited and ran.
import type { LatencyKind } from './latencies.js';

export interface Instruments {
  /** A command was answered; `reply` is the first line of its reply, without CRLF ("INSERTED 5"). */
  answered(command: string, reply: string, elapsedMs: number): void;
  /** A batch call of `ops` job commands took elapsedMs; `failed` when the call failed. */
  batchApplied(ops: number, elapsedMs: number, failed: boolean): void;
  /** A job handed out had waited ms ready ('wait'), or ran ms from its reserve to its delete ('run'). */
  jobTimed(kind: LatencyKind, tube: string, ms: number): void;
}

/** The first line of a reply as it goes out (a Buffer, or parts of one), without CRLF. */
export function replyLine(reply: Buffer | readonly Buffer[]): string {
  const first = Buffer.isBuffer(reply) ? reply : reply[0]!;
  const end = first.indexOf(13);
  return first.toString('latin1', 0, end < 0 ? first.length : end);
}

/** The reply word of a reply line: "INSERTED 5" -> INSERTED. */
export function replyWord(line: string): string {
  const space = line.indexOf(' ');
  return space < 0 ? line : line.slice(0, space);
}

/** Several instruments as one. */
export function allOf(list: readonly Instruments[]): Instruments | null {
  if (list.length === 0) return null;
  if (list.length === 1) return list[0]!;
  return {
    answered: (c, r, ms) => { for (const i of list) i.answered(c, r, ms); },
    batchApplied: (n, ms, f) => { for (const i of list) i.batchApplied(n, ms, f); },
    jobTimed: (k, t, ms) => { for (const i of list) i.jobTimed(k, t, ms); },
  };
}
