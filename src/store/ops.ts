// The job-op model: what server/ hands to the cross-connection batch, built
// only here. Every op has one object shape (V8 keeps one hidden class), and
// each kind fixes the type of its result, so completions need no casts.

/** The op kinds (also lua/jobs/batch.lua's op codes). */
export const enum OpCode { Put = 'p', PutWith = 'q', BurnId = 'i', Delete = 'd', Release = 'r', Bury = 'b', Touch = 't', Reserve = 'v', Candidate = 'c', DropWatch = 'x' }

export interface ReservedJob {
  id: string; tube: string; ttr: number; body: Buffer;
  /** How long it was ready before this reserve took it (ms, the store's clock); -1: not known (reserve-job). */
  waitedMs: number;
}

/**
 * What a reserve took, and whether that drained its tubes: no job left that
 * a reserve could take now or once a delay ends (told by the last reserve of
 * a call only; false when not known).
 */
export interface Reservation { jobs: ReservedJob[]; drained: boolean }

/** A job a reserve would take in one shard: its priority and when it was put (ms on the store's clock). */
export interface Candidate { pri: number; createdMs: number }

/** put-with: the job's id; duplicate: nothing was stored, the id is of the job put with that key before. */
export interface Stored { id: string; duplicate: boolean }

/**
 * put / burn-id: the new id; put-with: Stored; delete, release, bury: whether it applied;
 * touch: the job's ttr in seconds, 0 when it did not apply; reserve: the jobs
 * (1 to `count`), or ms until something may become reservable (-1: nothing
 * will without another command: the tubes are drained); candidates: the jobs a reserve of `count` would take, in its
 * order (1 to `count`), or the same ms; drop-watch: true.
 */
export type OpResult = string | boolean | number | Reservation | Candidate[] | Stored;
export type ReserveResult = Reservation | number;
export type CandidateResult = Candidate[] | number;

/** Called once per op, in the order ops were added: with the result, or the error of the whole call. */
export type Completion<C, R> = (op: JobOp<C, R>, result: R, err: Error | null) => void;

export interface JobOp<C = unknown, R = OpResult> {
  readonly code: OpCode;
  /** Who reserves / holds the job (sidecar:connection). */
  readonly owner: string;
  readonly id: string;
  /** put, burn-id, delete, release, bury, touch: the job's tube (for burn-id, the tube used). */
  readonly tube: string;
  /** reserve, candidate: the watched tubes. */
  readonly tubes: readonly string[];
  /**
   * reserve, candidate: -1, or the version of `owner`'s watch list that
   * `tubes` are: the store may keep the list and
   * reserve over what it kept, without the tubes travelling with each call.
   */
  readonly watch: number;
  readonly pri: number;
  readonly delay: number;
  /** put, release: when the command arrived (Date.now()): its delay counts from then, not from when the store runs it. */
  readonly arrivedAt: number;
  readonly ttr: number;
  /** reserve: the most jobs to take (reserve-many); 1 otherwise. */
  readonly count: number;
  /** put-with: its key ('-': none), seconds until it expires unless reserved (0: never), and whether it is buried then (else deleted). */
  readonly key: string;
  readonly expire: number;
  readonly buryOnExpiry: boolean;
  readonly body: Buffer | null;
  /** The caller's context (a connection, a waiter), handed back to `done`. */
  readonly ctx: C;
  readonly done: Completion<C, R>;
}

const NO_TUBES: readonly string[] = [];
/** put-with's key when it has none. */
export const NO_KEY = '-';

function op<C, R>(code: OpCode, ctx: C, done: Completion<C, R>, owner: string, id: string, tube: string,
  tubes: readonly string[], pri: number, delay: number, ttr: number, body: Buffer | null, count = 1, watch = -1, arrivedAt = 0,
  key = NO_KEY, expire = 0, buryOnExpiry = false): JobOp<C, R> {
  return { code, owner, id, tube, tubes, watch, pri, delay, arrivedAt, ttr, count, key, expire, buryOnExpiry, body, ctx, done };
}

/** How long a put's or release's delay has already run (ms): since its command arrived. */
export const delayRun = (op: AnyJobOp, now = Date.now()): number => (op.delay > 0 ? Math.max(0, now - op.arrivedAt) : 0);

/** A put or release whose job is ready as soon as the store runs it: no delay, or one that ran out before. */
export const readyAtOnce = (op: AnyJobOp): boolean => op.delay * 1000 <= delayRun(op);

/** The op builders: the only place a JobOp literal is written. */
export const jobOps = {
  put: <C>(ctx: C, done: Completion<C, string>, tube: string, pri: number, delay: number, ttr: number, body: Buffer, arrivedAt = Date.now()) =>
    op(OpCode.Put, ctx, done, '', '', tube, NO_TUBES, pri, delay, ttr, body, 1, -1, arrivedAt),
  /** put-with: `key` may name a job put before (then nothing is stored); `expire` s, 0: never. */
  putWith: <C>(ctx: C, done: Completion<C, Stored>, tube: string, key: string, expire: number, buryOnExpiry: boolean,
    pri: number, delay: number, ttr: number, body: Buffer, arrivedAt = Date.now()) =>
    op(OpCode.PutWith, ctx, done, '', '', tube, NO_TUBES, pri, delay, ttr, body, 1, -1, arrivedAt, key, expire, buryOnExpiry),
  /** A put that ends in EXPECTED_CRLF or DRAINING still uses up a job id (of the used tube's shard), as in beanstalkd. */
  burnId: <C>(ctx: C, done: Completion<C, string>, tube: string) =>
    op(OpCode.BurnId, ctx, done, '', '', tube, NO_TUBES, 0, 0, 0, null),
  delete: <C>(ctx: C, done: Completion<C, boolean>, owner: string, id: string, tube: string) =>
    op(OpCode.Delete, ctx, done, owner, id, tube, NO_TUBES, 0, 0, 0, null),
  release: <C>(ctx: C, done: Completion<C, boolean>, owner: string, id: string, tube: string, pri: number, delay: number, arrivedAt = Date.now()) =>
    op(OpCode.Release, ctx, done, owner, id, tube, NO_TUBES, pri, delay, 0, null, 1, -1, arrivedAt),
  bury: <C>(ctx: C, done: Completion<C, boolean>, owner: string, id: string, tube: string, pri: number) =>
    op(OpCode.Bury, ctx, done, owner, id, tube, NO_TUBES, pri, 0, 0, null),
  touch: <C>(ctx: C, done: Completion<C, number>, owner: string, id: string, tube: string) =>
    op(OpCode.Touch, ctx, done, owner, id, tube, NO_TUBES, 0, 0, 0, null),
  /** `watch`: the version of the owner's watch list that `tubes` are, or -1 (see JobOp.watch). */
  reserve: <C>(ctx: C, done: Completion<C, ReserveResult>, owner: string, tubes: readonly string[], count: number, watch = -1) =>
    op(OpCode.Reserve, ctx, done, owner, '', '', tubes, 0, 0, 0, null, count, watch),
  /** What a reserve of `count` over these tubes would take, taking nothing (the store's own, to reserve across shards). */
  candidates: <C>(ctx: C, done: Completion<C, CandidateResult>, tubes: readonly string[], count: number, owner = '', watch = -1) =>
    op(OpCode.Candidate, ctx, done, owner, '', '', tubes, 0, 0, 0, null, count, watch),
  /** The owner's watch list kept by reserves with `watch` (JobOp.watch) goes: its connection closed. */
  dropWatch: <C>(ctx: C, done: Completion<C, boolean>, owner: string) =>
    op(OpCode.DropWatch, ctx, done, owner, '', '', NO_TUBES, 0, 0, 0, null),
};

/**
 * An op of any context and result, as the batcher and the store see it: they
 * only carry the context and hand the result of the op's own kind back.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobOp = JobOp<any, any>;
