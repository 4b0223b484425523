// lua/jobs/batch.lua's calling convention: ops in, one flat argument list
// out (tubes interned as 1-based indexes), and its reply decoded into one
// typed result per op. Pure functions, so the hot path has a micro-benchmark.
import { OpCode, type AnyJobOp, type Candidate, type OpResult, type ReservedJob } from '../ops.js';
import type { ShardKeys } from '../layout.js';

/** Tube names in first-use order, with their 1-based index (the order of their KEYS). */
export class TubeIndex {
  readonly names: string[] = [];
  private readonly index = new Map<string, number>();

  of(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      this.names.push(name);
      i = this.names.length;
      this.index.set(name, i);
    }
    return i;
  }
}

export interface EncodedBatch {
  keys: string[];
  args: Array<string | number | Buffer>;
}

/** The 9 global keys, then 5 keys per tube: what every job script receives. */
export function scriptKeys(keys: ShardKeys, tubes: readonly string[]): string[] {
  const out = keys.globals.slice();
  for (const t of tubes) for (const k of keys.tube(t)) out.push(k);
  return out;
}

/**
 * A reserve over more watched tubes than this names them in ARGV (batch.lua's
 * 'w'), instead of sending each tube's 5 keys: its cost then follows the
 * tubes that have ready jobs, not the tubes watched.
 */
const RESERVE_BY_NAME_ABOVE = 64;
const RESERVE_BY_NAME = 'w';

export function encodeBatch(ops: readonly AnyJobOp[], keys: ShardKeys): EncodedBatch {
  const tubes = new TubeIndex();
  const fields: Array<string | number | Buffer> = [];
  for (const op of ops) {
    switch (op.code) {
      case OpCode.Put: fields.push(OpCode.Put, tubes.of(op.tube), op.pri, op.delay, op.ttr, op.body!); break;
      case OpCode.BurnId: fields.push(OpCode.BurnId); break;
      case OpCode.Delete: case OpCode.Touch: fields.push(op.code, op.owner, op.id, tubes.of(op.tube)); break;
      case OpCode.Release: fields.push(OpCode.Release, op.owner, op.id, tubes.of(op.tube), op.pri, op.delay); break;
      case OpCode.Bury: fields.push(OpCode.Bury, op.owner, op.id, tubes.of(op.tube), op.pri); break;
      case OpCode.Reserve: case OpCode.Candidate: { // candidates: a reserve of -count jobs
        const n = op.code === OpCode.Candidate ? -op.count : op.count;
        // Many watched tubes travel as names (not 5 KEYS each): the script looks only at those with ready jobs.
        // (Tube names hold no space: one argument carries them all.)
        if (op.tubes.length > RESERVE_BY_NAME_ABOVE) {
          fields.push(RESERVE_BY_NAME, op.owner, n, op.tubes.join(' '));
        } else {
          fields.push(OpCode.Reserve, op.owner, n, op.tubes.length);
          for (const t of op.tubes) fields.push(tubes.of(t));
        }
        break;
      }
    }
  }
  const names = tubes.names;
  const args: Array<string | number | Buffer> = [keys.events, keys.shards, keys.shard, names.length, ...names];
  for (const f of fields) args.push(f);
  return { keys: scriptKeys(keys, names), args };
}

export function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('latin1') : String(v);
}

/** A reserve's jobs, four values each: id, ttr, body, tube name. */
function reservedJobs(r: readonly unknown[]): ReservedJob[] {
  const jobs: ReservedJob[] = [];
  for (let k = 0; k < r.length; k += 4) jobs.push({ id: text(r[k]), ttr: r[k + 1] as number, body: r[k + 2] as Buffer, tube: text(r[k + 3]) });
  return jobs;
}

/** A reserve's candidates, two values each: priority, created ms. */
function candidates(r: readonly unknown[]): Candidate[] {
  const out: Candidate[] = [];
  for (let k = 0; k < r.length; k += 2) out.push({ pri: Number(text(r[k])), createdMs: Number(text(r[k + 1])) });
  return out;
}

/** batch.lua's reply (Buffer mode): one result per op, typed by the op's kind. */
export function decodeBatch(ops: readonly AnyJobOp[], raw: readonly unknown[]): OpResult[] {
  const results: OpResult[] = new Array(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const r = raw[i];
    switch (ops[i]!.code) {
      case OpCode.Put: case OpCode.BurnId: results[i] = text(r); break;
      case OpCode.Delete: case OpCode.Release: case OpCode.Bury: results[i] = r === 1; break;
      case OpCode.Touch: results[i] = r as number; break;
      case OpCode.Reserve: results[i] = Array.isArray(r) ? reservedJobs(r) : (r as number); break;
      case OpCode.Candidate: results[i] = Array.isArray(r) ? candidates(r) : (r as number); break;
    }
  }
  return results;
}
