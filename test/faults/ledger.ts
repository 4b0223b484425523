// What the load did and what came out: every put attempt with its unique
// marker and how it was answered, every delivery with how its delete went,
// and the accounting of a run (acknowledged, delivered, lost, duplicated,
// error replies that took effect).

/** CRC-32 (IEEE), as zlib's. */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const PAD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.';

/**
 * A job body: `fault|p<producer>|<seq>|<marker>|<padding>|<crc32 hex of everything before>`.
 * The marker is unique per put attempt (failed attempts included), the sequence
 * number counts a producer's attempts.
 */
export function makeBody(fault: string, producer: number, seq: number, marker: string): Buffer {
  const len = 16 + ((seq * 7919 + producer * 104729) % 300);
  let pad = '';
  for (let i = 0; i < len; i++) pad += PAD[(seq + i * 31 + producer) % PAD.length];
  const payload = `${fault}|p${producer}|${seq}|${marker}|${pad}`;
  return Buffer.from(`${payload}|${crc32(Buffer.from(payload)).toString(16).padStart(8, '0')}`);
}

/** The marker of a body whose CRC and fields check out, else why not. */
export function checkBody(body: Buffer): { marker: string } | { error: string } {
  const text = body.toString('latin1');
  const cut = text.lastIndexOf('|');
  if (cut < 0) return { error: 'no crc field' };
  const payload = text.slice(0, cut);
  const crc = crc32(Buffer.from(payload, 'latin1')).toString(16).padStart(8, '0');
  if (crc !== text.slice(cut + 1)) return { error: `crc ${text.slice(cut + 1)} != ${crc}` };
  const fields = payload.split('|');
  if (fields.length !== 5 || !/^p\d+$/.test(fields[1]!) || !/^\d+$/.test(fields[2]!)) return { error: 'bad fields' };
  return { marker: fields[3]! };
}

export type PutOutcome =
  | { kind: 'pending' }
  | { kind: 'acked'; id: number }
  | { kind: 'error'; word: string } // an error reply (INTERNAL_ERROR, OUT_OF_MEMORY, DRAINING, ...)
  | { kind: 'noreply'; why: string }; // the connection failed before the reply: outcome unknown

export interface Attempt {
  marker: string;
  producer: number;
  seq: number;
  via: string; // the sidecar it was sent to
  sentAt: number;
  doneAt?: number;
  outcome: PutOutcome;
}

export type DeleteOutcome = 'pending' | 'deleted' | 'not-found' | 'error' | 'conn-lost' | 'given-up';

export interface Delivery {
  marker: string;
  id: number;
  at: number;
  worker: number;
  via: string;
  deleteOutcome: DeleteOutcome;
  /** Each reply to this delivery's delete attempts, in order. */
  deleteReplies: string[];
  /** When its worker stopped holding it: its delete answered, or its connection closed (or was dropped). */
  endedAt?: number;
}

export interface Bad { id: number; via: string; error: string }

/** A command's reply as one word: the success word, the error word, or `conn:<message>`. */
export interface OpSample { op: 'put' | 'reserve' | 'delete' | 'setup'; client: string; via: string; sentAt: number; doneAt: number; result: string }

export class Ledger {
  readonly attempts = new Map<string, Attempt>();
  readonly deliveries = new Map<string, Delivery[]>();
  readonly corrupt: Bad[] = [];
  readonly idMismatch: Array<{ marker: string; acked: number; delivered: number }> = [];
  readonly ops: OpSample[] = [];
  /** A client's (re)connection that failed: the connect, or its setup (use / watch / ignore). Kept apart from ops. */
  readonly setupFailures: OpSample[] = [];
  /** Client-side watchdog: commands that got no reply within the limit (the connection was dropped). */
  stuck = 0;

  attempt(a: Attempt): void { this.attempts.set(a.marker, a); }

  deliver(d: Delivery): void {
    const list = this.deliveries.get(d.marker);
    if (list) list.push(d);
    else this.deliveries.set(d.marker, [d]);
    const a = this.attempts.get(d.marker);
    if (a?.outcome.kind === 'acked' && a.outcome.id !== d.id) this.idMismatch.push({ marker: d.marker, acked: a.outcome.id, delivered: d.id });
  }

  op(s: OpSample): void { this.ops.push(s); }

  acked(): Attempt[] { return [...this.attempts.values()].filter((a) => a.outcome.kind === 'acked'); }

  missing(): Attempt[] { return this.acked().filter((a) => !this.deliveries.has(a.marker)); }
}

export interface Dup { marker: string; id: number; count: number; gapsMs: number[]; causes: string[] }

export interface Report {
  fault: string;
  attempts: number;
  acked: number;
  delivered: number;
  deliveries: number;
  lost: number;
  lostList: Array<{ marker: string; id: number; via: string; state?: string }>;
  dup: number;
  dupTtrLapsed: number;
  dupHandedBack: number;
  /** Delivered again after a delete that answered DELETED: an acknowledged delete undone. */
  dupAfterDeleted: number;
  dups: Dup[];
  errorReplies: Record<string, number>;
  tookEffect: Record<string, number>;
  tookEffectList: Array<{ marker: string; word: string; id: number; via: string }>;
  noReply: number;
  noReplyTookEffect: number;
  corrupt: number;
  idMismatch: number;
  recoverMs: number | null;
  leftInQueue: number | null;
  notes: string[];
}

/** Why a job was delivered again after `prev`: see account(). */
function redeliveryCause(prev: Delivery, next: Delivery, ttrSec: number): 'after-DELETED' | 'ttr-lapsed' | 'handed-back' {
  if (prev.deleteOutcome === 'deleted') return 'after-DELETED';
  return next.at - prev.at >= ttrSec * 1000 - 500 ? 'ttr-lapsed' : 'handed-back';
}

/** A job delivered again because its TTR ran out: the delivery before and the one after. */
export interface TtrLapse { prev: Delivery; next: Delivery }

/** Each delivery of a job after its first, with the one before it. */
function* redeliveries(ledger: Ledger): Generator<{ prev: Delivery; next: Delivery }> {
  for (const list of ledger.deliveries.values()) {
    const sorted = [...list].sort((x, y) => x.at - y.at);
    for (let i = 1; i < sorted.length; i++) yield { prev: sorted[i - 1]!, next: sorted[i]! };
  }
}

export function ttrLapses(ledger: Ledger, ttrSec: number): TtrLapse[] {
  return [...redeliveries(ledger)].filter(({ prev, next }) => redeliveryCause(prev, next, ttrSec) === 'ttr-lapsed');
}

/** The longest stretch of [from, to] that none of the intervals (which may overlap) covers. */
export function longestOutside(intervals: ReadonlyArray<{ from: number; to: number }>, from: number, to: number): number {
  let longest = 0;
  let start = from;
  for (const i of [...intervals].sort((x, y) => x.from - y.from)) {
    if (i.to <= start) continue;
    if (i.from >= to) break;
    longest = Math.max(longest, i.from - start);
    start = i.to;
  }
  return Math.max(longest, to - start);
}

/**
 * The accounting of a run. A duplicate is a job delivered more than once; each
 * redelivery is explained by the delivery before it: its delete answered DELETED
 * (an acknowledged delete undone: a bug), or the TTR ran out (the gap between the
 * two reserves is at least the TTR, less a margin for the clocks), or else the job
 * was handed back early (its worker's connection closed, or the sidecar stopped).
 */
export function account(fault: string, ledger: Ledger, ttrSec: number): Omit<Report, 'recoverMs' | 'leftInQueue' | 'notes' | 'lostList'> & { lostMarkers: Attempt[] } {
  const acked = ledger.acked();
  const lostMarkers = ledger.missing();
  const errorReplies: Record<string, number> = {};
  const tookEffect: Record<string, number> = {};
  const tookEffectList: Report['tookEffectList'] = [];
  let noReply = 0;
  let noReplyTookEffect = 0;
  for (const a of ledger.attempts.values()) {
    const delivered = ledger.deliveries.get(a.marker);
    if (a.outcome.kind === 'error') {
      errorReplies[a.outcome.word] = (errorReplies[a.outcome.word] ?? 0) + 1;
      if (delivered) {
        tookEffect[a.outcome.word] = (tookEffect[a.outcome.word] ?? 0) + 1;
        tookEffectList.push({ marker: a.marker, word: a.outcome.word, id: delivered[0]!.id, via: a.via });
      }
    } else if (a.outcome.kind === 'noreply' || a.outcome.kind === 'pending') {
      noReply++;
      if (delivered) noReplyTookEffect++;
    }
  }
  const dups: Dup[] = [];
  let dupTtrLapsed = 0;
  let dupHandedBack = 0;
  let dupAfterDeleted = 0;
  let deliveries = 0;
  for (const [marker, list] of ledger.deliveries) {
    deliveries += list.length;
    if (list.length < 2) continue;
    const sorted = [...list].sort((x, y) => x.at - y.at);
    const gapsMs: number[] = [];
    const causes: string[] = [];
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      gapsMs.push(sorted[i]!.at - prev.at);
      const cause = redeliveryCause(prev, sorted[i]!, ttrSec);
      if (cause === 'after-DELETED') { causes.push(cause); dupAfterDeleted++; }
      else if (cause === 'ttr-lapsed') { causes.push(`ttr-lapsed(${prev.deleteOutcome})`); dupTtrLapsed++; }
      else { causes.push(`handed-back(${prev.deleteOutcome})`); dupHandedBack++; }
    }
    dups.push({ marker, id: sorted[0]!.id, count: list.length, gapsMs, causes });
  }
  return {
    fault,
    attempts: ledger.attempts.size,
    acked: acked.length,
    delivered: acked.length - lostMarkers.length,
    deliveries,
    lost: lostMarkers.length,
    lostMarkers,
    dup: dups.length,
    dupTtrLapsed,
    dupHandedBack,
    dupAfterDeleted,
    dups,
    errorReplies,
    tookEffect,
    tookEffectList,
    noReply,
    noReplyTookEffect,
    corrupt: ledger.corrupt.length,
    idMismatch: ledger.idMismatch.length,
  };
}

// ---------------------------------------------------------------- tables

export const COLUMNS = ['fault', 'acked', 'delivered', 'lost', 'dup', 'errors-that-took-effect', 'recover ms'] as const;
const WIDTHS = [22, 6, 9, 4, 16, 40, 10];

const fmtCounts = (r: Record<string, number>) => {
  const parts = Object.entries(r).map(([k, v]) => `${k}×${v}`);
  return parts.length ? parts.join(' ') : '0';
};

/** `n/errors (WORD×k)`, then the puts whose connection closed before the reply: `, no reply m/all`. */
export function tookEffectCell(r: Report): string {
  const n = Object.values(r.tookEffect).reduce((s, v) => s + v, 0);
  const errors = Object.values(r.errorReplies).reduce((s, v) => s + v, 0);
  return `${n}/${errors}${n ? ` (${fmtCounts(r.tookEffect)})` : ''}${r.noReply ? `, no reply ${r.noReplyTookEffect}/${r.noReply}` : ''}`;
}

export function dupCell(r: Report): string {
  if (!r.dup) return '0';
  const parts = [];
  if (r.dupTtrLapsed) parts.push(`ttr ${r.dupTtrLapsed}`);
  if (r.dupHandedBack) parts.push(`back ${r.dupHandedBack}`);
  if (r.dupAfterDeleted) parts.push(`DEL ${r.dupAfterDeleted}`);
  return `${r.dup} (${parts.join(', ')})`;
}

export function row(r: Report): string {
  const cells = [r.fault, String(r.acked), String(r.delivered), String(r.lost), dupCell(r), tookEffectCell(r), r.recoverMs === null ? 'never' : String(r.recoverMs)];
  return `| ${cells.map((c, i) => c.padEnd(WIDTHS[i]!)).join(' | ')} |`;
}

export function header(): string {
  return [`| ${COLUMNS.map((c, i) => c.padEnd(WIDTHS[i]!)).join(' | ')} |`, `|${WIDTHS.map((w) => '-'.repeat(w + 2)).join('|')}|`].join('\n');
}

/** The lines under a row: what the columns leave out. */
export function details(r: Report): string[] {
  const lines = [
    `  attempts ${r.attempts}, error replies ${fmtCounts(r.errorReplies)}, no reply (connection lost) ${r.noReply} of which delivered ${r.noReplyTookEffect}; deliveries ${r.deliveries}; corrupt ${r.corrupt}, id mismatch ${r.idMismatch}; left in queue ${r.leftInQueue ?? '?'}`,
    ...r.notes.map((n) => `  ${n}`),
  ];
  if (r.dups.length) {
    lines.push(`  duplicates (gap ms, cause of each redelivery): ${r.dups.slice(0, 8).map((d) => `#${d.id} ×${d.count} [${d.gapsMs.join(',')}] ${d.causes.join(',')}`).join('; ')}${r.dups.length > 8 ? ` … ${r.dups.length - 8} more` : ''}`);
  }
  if (r.tookEffectList.length) {
    lines.push(`  error replies that took effect: ${r.tookEffectList.slice(0, 8).map((t) => `${t.word} → job #${t.id} via ${t.via}`).join('; ')}${r.tookEffectList.length > 8 ? ` … ${r.tookEffectList.length - 8} more` : ''}`);
  }
  if (r.lostList.length) {
    lines.push(`  LOST (acknowledged, never delivered): ${r.lostList.slice(0, 30).map((l) => `#${l.id} ${l.marker} via ${l.via}${l.state ? ` state=${l.state}` : ''}`).join('; ')}${r.lostList.length > 30 ? ` … ${r.lostList.length - 30} more` : ''}`);
  }
  return lines;
}

/** A markdown table of fixed-width columns: the header, its rule, then the rows. */
export function markdownTable(columns: ReadonlyArray<readonly [name: string, width: number]>, rows: ReadonlyArray<readonly string[]>): string[] {
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(columns[i]![1])).join(' | ')} |`;
  return [line(columns.map(([name]) => name)), `|${columns.map(([, w]) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)];
}

/** A job delivered to a second worker while the first still held it (its connection open, its TTR not run out). */
export interface DoubleHold { id: number; first: string; second: string; overlapMs: number }

/**
 * Every reservation held by two open connections at once, and how long each
 * job handed back early took to be delivered again (from the end of its hold).
 */
export function holds(ledger: Ledger, ttrSec: number): { doubles: DoubleHold[]; comebackMs: number[] } {
  const doubles: DoubleHold[] = [];
  const comebackMs: number[] = [];
  for (const { prev, next } of redeliveries(ledger)) {
    const heldUntil = Math.min(prev.endedAt ?? Infinity, prev.at + ttrSec * 1000);
    if (next.at < heldUntil) {
      doubles.push({ id: next.id, first: `worker ${prev.worker} via ${prev.via} at ${prev.at}`, second: `worker ${next.worker} via ${next.via} at ${next.at}`, overlapMs: heldUntil - next.at });
    } else if (prev.deleteOutcome !== 'deleted' && prev.endedAt !== undefined) comebackMs.push(next.at - prev.endedAt);
  }
  return { doubles, comebackMs };
}
