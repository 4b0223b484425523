// What the server may ask of a job store: the contract between server/ and
// any backend (today: Redis, src/store/redis/). Values in, values out; no
// backend type crosses it. Errors are StoreError (src/store/errors.ts).
import type { AnyJobOp, ReservedJob } from './ops.js';

export type JobState = 'ready' | 'delayed' | 'reserved' | 'buried';

/** One job as stored, with its age in ms and time left in µs (the server turns them into stats-job's seconds). */
export interface JobInfo {
  id: string; tube: string; state: JobState;
  pri: number; ageMs: number; delay: number; ttr: number; timeLeftUs: number;
  reserves: number; timeouts: number; releases: number; buries: number; kicks: number;
}

export interface TubeCounts {
  urgent: number; ready: number; reserved: number; delayed: number; buried: number;
  totalJobs: number; cmdDelete: number; cmdPauseTube: number; pause: number; pauseLeftUs: number;
  /** The tube's settings (tube-set) and its put-with counts. */
  maxReserved: number; reserveRate: number; dedupWindow: number; jobsExpired: number; duplicatePuts: number;
}

/** What tube-set sets (lua/includes/settings.lua). */
export type TubeSetting = 'max-reserved' | 'reserve-rate' | 'dedup-window';

export interface TotalCounts { tubes: Map<string, TubeCounts>; totalJobs: number; jobTimeouts: number }

/** The jobs of all tubes by state, and the tubes: kept as jobs move, so reading them costs the same for any number of tubes. */
export interface JobTotals {
  urgent: number; ready: number; reserved: number; delayed: number; buried: number;
  tubes: number; totalJobs: number; jobTimeouts: number;
}

export interface PeekedJob { id: string; body: Buffer }

/** A page of a tube's jobs in one state (the admin API's listings and searches; lua/jobs/listJobs.lua). */
export interface JobQuery {
  state: JobState;
  /** '' from the start, else a page's `next`. */
  cursor: string;
  /** Most jobs in the page. */
  limit: number;
  /** Most jobs looked at (a search's bound): a page may stop short of `limit` and still have a `next`. */
  scan: number;
  /** Only jobs whose id is this or whose body holds it; empty: every job. */
  needle: Buffer;
  /** Body bytes returned per job. */
  preview: number;
}

/** A job of a page: its stats, who holds it ('' unless reserved), and its body's first bytes. */
export interface ListedJob extends JobInfo { holder: string; body: Buffer }

export interface JobPage {
  jobs: ListedJob[];
  /** Where the next page starts; '' when the state's jobs were read to their end. */
  next: string;
  /** Jobs looked at for this page. */
  scanned: number;
}

export type PeekState = 'ready' | 'delayed' | 'buried';

/** A counters snapshot of a sidecar, as published with its heartbeat. */
export type NodeSnapshot = Record<string, string>;

/** What the store answers call by call, each on its own. */
export interface JobCalls {
  /** The tube of a job, or null when it does not exist (a job never changes tube). */
  jobTube(id: string): Promise<string | null>;
  reserveJob(owner: string, id: string, tube: string): Promise<ReservedJob | null>;
  /** Up to `bound` buried jobs of the tube, or if none, delayed ones, to ready; how many moved. */
  kick(tube: string, bound: number): Promise<number>;
  kickJob(id: string, tube: string): Promise<boolean>;
  /** A closed connection's reservations go back to ready; how many did. */
  releaseOwned(owner: string, jobs: Iterable<readonly [id: string, tube: string]>): Promise<number>;
  /**
   * Every reservation held by `owner` (a connection), or by any connection of
   * a sidecar when `owner` is "<node>:", goes back to ready, found in the
   * store itself (for a holder whose jobs the caller cannot list); how many did.
   */
  releaseHeldBy(owner: string): Promise<number>;
  pauseTube(tube: string, delaySeconds: number): Promise<boolean>;
  /** One setting of a tube, kept whether or not the tube exists (tube-set). */
  tubeSet(tube: string, setting: TubeSetting, value: number): Promise<void>;

  peekJob(id: string): Promise<PeekedJob | null>;
  peekTube(tube: string, state: PeekState): Promise<PeekedJob | null>;
  jobInfo(id: string): Promise<JobInfo | null>;
  /** The age (ms since put) of each named tube's oldest ready job; tubes with none ready are left out. */
  oldestReady(names: readonly string[]): Promise<Map<string, number>>;
  /** A page of the tube's jobs in one state, in that state's order. */
  listJobs(tube: string, query: JobQuery): Promise<JobPage>;
  /** Counts of the named tubes (only those that exist) plus the global totals. */
  tubeCounts(names: readonly string[]): Promise<TotalCounts>;
  totals(): Promise<JobTotals>;
  listTubes(): Promise<string[]>;

  /** A sidecar starts (+1) or stops (-1) referencing a tube, or drops all its references ('drop'). */
  refTube(tube: string, node: string, delta: 1 | -1 | 'drop'): Promise<void>;
  /** Renews a sidecar's lease with its counters; true when it had none (first beat, or it lapsed). */
  heartbeat(node: string, ttlMs: number, snapshot: ReadonlyArray<string | number>): Promise<boolean>;
  /**
   * Forgets a sidecar whose lease lapsed (or that left); false while its lease
   * is live in some part of the store (it beat again, or its last beats
   * reached some shards only), so that it is asked again.
   */
  forgetNode(node: string): Promise<boolean>;
  /** Sidecars by whether their lease is current (judged on the store's clock). */
  nodes(): Promise<{ live: string[]; dead: string[] }>;
  /** Their counters snapshots: whole, or only these fields (a snapshot holds fields per tube too). */
  nodeSnapshots(nodes: readonly string[], fields?: readonly string[]): Promise<NodeSnapshot[]>;

  /** How many of these connections' watch lists, as reserves kept them (JobOp.watch), hold the tube. */
  watchListsWith(tube: string, owners: readonly string[]): Promise<number>;

  /**
   * Keeps a sample (a JSON object) of the dashboard's history, unless the
   * slot of `slotMs` it falls in (on the store's clock) has one; at most
   * `keep` samples stay. Whether it was kept.
   */
  recordHistory(sample: string, slotMs: number, keep: number): Promise<boolean>;
  /** The samples kept, oldest first, each with its slot's start as "t" (ms). */
  history(): Promise<string[]>;
  /** What a sidecar says of itself (for the dashboard), kept for ttlMs. */
  publishNodeInfo(node: string, info: Readonly<Record<string, string | number>>, ttlMs: number): Promise<void>;
  /** What these sidecars said of themselves ({} for one that said nothing lately). */
  nodeInfo(nodes: readonly string[]): Promise<NodeSnapshot[]>;

  /** Moves due delayed jobs and expired reservations to ready; ms until the next is due, or -1. */
  promoteDue(limit: number): Promise<{ moved: number; nextDueMs: number }>;
}

/** A batch call's size, its time in ms, and whether it failed (for metrics and tracing). */
export type BatchObserver = (ops: number, ms: number, failed: boolean) => void;

export interface JobStore extends JobCalls {
  /**
   * Takes an op from any connection into the store's batch: ops go to the
   * store together, each answered through its `done` with its result, or
   * with the error it met (a StoreError: a put while the store is full, or
   * the failure of the call it went in). Ops on the same jobs and tubes are
   * applied in the order submitted; others may be answered out of it.
   */
  submit(op: AnyJobOp): void;
  /** Ops submitted and not yet answered (a graceful stop waits for none). */
  readonly pending: number;
  /**
   * Whether one atomic step reserves over all these tubes: only then does a
   * reserve of several jobs see them all at once (a pipelined run of
   * reserves takes its jobs together only then).
   */
  reservesAtOnce(tubes: readonly string[]): boolean;
  /** Reports every batch call from now on. */
  observe(observer: BatchObserver): void;
}

/**
 * How a store splits its data set into shards (a store's own business):
 * the shard of a tube (all its jobs live there) and of a job id. One batch
 * call, and every state change, goes to one shard.
 */
export interface ShardMap {
  readonly count: number;
  ofTube(name: string): number;
  ofId(id: string): number;
}

/** Wake-ups from the store: jobs became ready somewhere (any sidecar may have caused it). */
export interface ReadyListener {
  onReady(tube: string, count: number): void;
  /** The event link was lost and is back: wake-ups may have been missed. */
  onResync(): void;
}
