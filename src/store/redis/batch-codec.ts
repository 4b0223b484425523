// lua/jobs/batch.lua's calling convention: ops in, the call's RESP bytes
// out (tubes interned as 1-based indexes), and its reply decoded into one
// typed result per op. No Redis involved, so the hot path has a micro-benchmark.
import { delayRun, OpCode, type AnyJobOp, type Candidate, type OpResult, type Reservation, type ReservedJob, type Stored } from '../ops.js';
import type { ShardKeys } from '../layout.js';
import { encoded, RespWriter } from './resp.js';

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

/** The 10 global keys, then 5 keys per tube: what every job script receives. */
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
/** A reserve over its owner's watch list, sent and kept ('s'), or kept before ('k'). */
const RESERVE_STORING = 's';
const RESERVE_STORED = 'k';
/** A reserve over a watch list whose version is not what the shard holds (lost, reaped) says so: send it. */
export const WATCH_LIST_STALE = -2;
/** A reserve of a sidecar that has no lease in the shard (lapsed, or reaped) takes nothing (includes/jobs.lua lease_allows). */
export const LEASE_LAPSED = -3;
const storedList = (op: AnyJobOp) => op.watch >= 0;
const byName = (op: AnyJobOp) => op.tubes.length > RESERVE_BY_NAME_ABOVE;

/**
 * The watch lists (JobOp.watch) this sidecar has stored in one shard: owner
 * -> version, -1 when one may be there whose version is not known.
 */
export class StoredWatchLists {
  private readonly versions = new Map<string, number>();

  /** Whether a reserve over this list must send it; if so, it counts as stored from now. */
  mustSend(owner: string, version: number): boolean {
    if (this.versions.get(owner) === version) return false;
    this.versions.set(owner, version);
    return true;
  }

  /** A call that may have stored it failed, or the shard had another version: send it next time. */
  unsure(owner: string): void {
    this.versions.set(owner, -1);
  }

  /** Forgets the owner's list: whether one may be stored. */
  forget(owner: string): boolean {
    return this.versions.delete(owner);
  }

  get size(): number {
    return this.versions.size;
  }
}

/**
 * Writes batch calls of one shard as RESP bytes: the function's head
 * (FCALL and its name), the key count, the keys, then the arguments. The global keys
 * and each tube's 5 keys are encoded once and copied in.
 */
export class BatchEncoder {
  private readonly writer = new RespWriter();
  private readonly globals: Buffer;
  /** ARGV[1..3]: the events channel, the shard count, this shard. */
  private readonly shardArgs: Buffer;
  /** Each tube's 5 keys, encoded; keyed by ShardKeys.tube's (cached, bounded) arrays, so it lives as long as they do. */
  private readonly tubeKeys = new WeakMap<readonly string[], Buffer>();

  constructor(private readonly keys: ShardKeys, private readonly stored = new StoredWatchLists()) {
    this.globals = encoded(...keys.globals);
    this.shardArgs = encoded(keys.events, String(keys.shards), String(keys.shard));
  }

  private keysOf(tube: string): Buffer {
    const keys = this.keys.tube(tube);
    let b = this.tubeKeys.get(keys);
    if (!b) {
      b = encoded(...keys);
      this.tubeKeys.set(keys, b);
    }
    return b;
  }

  /** The whole call: `head` (2 bulk strings: FCALL and the function's name), then the batch. */
  encode(ops: readonly AnyJobOp[], head: Buffer): Buffer {
    this.write(this.writer, ops, null);
    return this.writer.command(head, 2);
  }

  /**
   * The batch as one section of a batchSections call, into that call's writer:
   * its probe key ('' for none), key count, argument count, keys, arguments.
   */
  section(w: RespWriter, ops: readonly AnyJobOp[], probe: boolean): void {
    w.string(probe ? this.keys.slotProbe : '');
    this.write(w, ops, w);
  }

  /** The key count, [the argument count,] the keys, the arguments. */
  private write(w: RespWriter, ops: readonly AnyJobOp[], counted: RespWriter | null): void {
    const tubes = tubesOf(ops);
    const names = tubes.names;
    const keyCount = this.keys.globals.length + 5 * names.length;
    w.int(keyCount);
    const argCountAt = counted ? w.placeholder() : 0;
    w.raw(this.globals, this.keys.globals.length);
    for (const t of names) w.raw(this.keysOf(t), 5);
    const argsFrom = w.count;
    w.raw(this.shardArgs, 3);
    w.int(names.length);
    for (const t of names) w.string(t);
    for (const op of ops) {
      switch (op.code) {
        case OpCode.Put: w.ascii(OpCode.Put); w.int(tubes.of(op.tube)); w.int(op.pri); w.int(op.delay); w.int(delayRun(op)); w.int(op.ttr); w.bytes(op.body!); break;
        case OpCode.PutWith:
          w.ascii(OpCode.PutWith); w.int(tubes.of(op.tube)); w.int(op.pri); w.int(op.delay); w.int(delayRun(op)); w.int(op.ttr);
          w.string(op.key); w.int(op.expire); w.int(op.buryOnExpiry ? 1 : 0); w.bytes(op.body!);
          break;
        case OpCode.BurnId: w.ascii(OpCode.BurnId); break;
        case OpCode.Delete: case OpCode.Touch: w.ascii(op.code); w.string(op.owner); w.ascii(op.id); w.int(tubes.of(op.tube)); break;
        case OpCode.Release: w.ascii(OpCode.Release); w.string(op.owner); w.ascii(op.id); w.int(tubes.of(op.tube)); w.int(op.pri); w.int(op.delay); w.int(delayRun(op)); break;
        case OpCode.Bury: w.ascii(OpCode.Bury); w.string(op.owner); w.ascii(op.id); w.int(tubes.of(op.tube)); w.int(op.pri); break;
        case OpCode.DropWatch: w.ascii(OpCode.DropWatch); w.string(op.owner); this.stored.forget(op.owner); break;
        case OpCode.Reserve: case OpCode.Candidate: { // candidates: a reserve of -count jobs
          const n = op.code === OpCode.Candidate ? -op.count : op.count;
          // A connection's watch list is kept in the shard: sent once, then named by its version.
          if (storedList(op)) {
            if (this.stored.mustSend(op.owner, op.watch)) {
              w.ascii(RESERVE_STORING); w.string(op.owner); w.int(n); w.int(op.watch); w.int(op.tubes.length);
              for (const t of op.tubes) w.string(t);
            } else {
              w.ascii(RESERVE_STORED); w.string(op.owner); w.int(n); w.int(op.watch);
            }
          } else if (byName(op)) {
            // Many watched tubes travel as names (not 5 KEYS each): the script looks only at those with ready jobs.
            // (Tube names hold no space: one argument carries them all.)
            w.ascii(RESERVE_BY_NAME); w.string(op.owner); w.int(n); w.string(op.tubes.join(' '));
          } else {
            w.ascii(OpCode.Reserve); w.string(op.owner); w.int(n); w.int(op.tubes.length);
            for (const t of op.tubes) w.int(tubes.of(t));
          }
          break;
        }
      }
    }
    if (counted) w.patch(argCountAt, w.count - argsFrom);
  }
}

/** The tubes a batch names (KEYS), in first-use order. */
function tubesOf(ops: readonly AnyJobOp[]): TubeIndex {
  const tubes = new TubeIndex();
  for (const op of ops) {
    if (op.code === OpCode.Reserve || op.code === OpCode.Candidate) {
      if (!storedList(op) && !byName(op)) for (const t of op.tubes) tubes.of(t);
    } else if (op.code !== OpCode.BurnId && op.code !== OpCode.DropWatch) {
      tubes.of(op.tube);
    }
  }
  return tubes;
}

export function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString('latin1') : String(v);
}

/** A reserve's jobs, five values each (id, ttr, body, tube name, ms it waited ready), then whether that drained its tubes. */
function reservation(r: readonly unknown[]): Reservation {
  const jobs: ReservedJob[] = [];
  const end = r.length - 1;
  for (let k = 0; k < end; k += 5) {
    jobs.push({ id: text(r[k]), ttr: r[k + 1] as number, body: r[k + 2] as Buffer, tube: text(r[k + 3]), waitedMs: r[k + 4] as number });
  }
  return { jobs, drained: r[end] === 1 };
}

/** put-with's result: the new job's id, or {id} of the job put with its key before. */
function stored(r: unknown): Stored {
  return Array.isArray(r) ? { id: text(r[0]), duplicate: true } : { id: text(r), duplicate: false };
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
      case OpCode.PutWith: results[i] = stored(r); break;
      case OpCode.Delete: case OpCode.Release: case OpCode.Bury: case OpCode.DropWatch: results[i] = r === 1; break;
      case OpCode.Touch: results[i] = r as number; break;
      case OpCode.Reserve: results[i] = Array.isArray(r) ? reservation(r) : (r as number); break;
      case OpCode.Candidate: results[i] = Array.isArray(r) ? candidates(r) : (r as number); break;
    }
  }
  return results;
}
