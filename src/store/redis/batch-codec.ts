// lua/jobs/batch.lua's calling convention: ops in, one flat argument list
// out (tubes interned as 1-based indexes), and its reply decoded into one
// typed result per op. Pure functions, so the hot path has a micro-benchmark.
import { OpCode, type AnyJobOp, type OpResult, type ReservedJob } from '../ops.js';
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
  tubes: readonly string[];
}

/** The 9 global keys, then 5 keys per tube: what every job script receives. */
export function scriptKeys(keys: ShardKeys, tubes: readonly string[]): string[] {
  const out = keys.globals.slice();
  for (const t of tubes) for (const k of keys.tube(t)) out.push(k);
  return out;
}

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
      case OpCode.Reserve:
        fields.push(OpCode.Reserve, op.owner, op.count, op.tubes.length);
        for (const t of op.tubes) fields.push(tubes.of(t));
        break;
    }
  }
  const names = tubes.names;
  const args: Array<string | number | Buffer> = [keys.events, keys.shards, keys.shard, names.length, ...names];
  for (const f of fields) args.push(f);
  return { keys: scriptKeys(keys, names), args, tubes: names };
}

export function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('latin1') : String(v);
}

/** A reserve's jobs, four values each: id, ttr, body, tube index. */
function reservedJobs(r: readonly unknown[], tubes: readonly string[]): ReservedJob[] {
  const jobs: ReservedJob[] = [];
  for (let k = 0; k < r.length; k += 4) {
    jobs.push({ id: text(r[k]), ttr: r[k + 1] as number, body: r[k + 2] as Buffer, tube: tubes[(r[k + 3] as number) - 1]! });
  }
  return jobs;
}

/** batch.lua's reply (Buffer mode): one result per op, typed by the op's kind. */
export function decodeBatch(ops: readonly AnyJobOp[], raw: readonly unknown[], tubes: readonly string[]): OpResult[] {
  const results: OpResult[] = new Array(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const r = raw[i];
    switch (ops[i]!.code) {
      case OpCode.Put: case OpCode.BurnId: results[i] = text(r); break;
      case OpCode.Delete: case OpCode.Release: case OpCode.Bury: results[i] = r === 1; break;
      case OpCode.Touch: results[i] = r as number; break;
      case OpCode.Reserve: results[i] = Array.isArray(r) ? reservedJobs(r, tubes) : (r as number); break;
    }
  }
  return results;
}
