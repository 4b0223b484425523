// The contract between the command handlers and the rest of the sidecar: a
// handler sees one Session (what its connection may touch) and the Services
// (what the sidecar offers every connection), nothing else.
import type { CommandArgs, CommandName, JobStats, RoomStats, ServerStats, TubeStats } from '../protocol/generated.js';
import type { JobStore } from '../store/job-store.js';
import type { AnyJobOp, ReservedJob } from '../store/ops.js';
import type { RoomStore } from '../store/room-store.js';

export interface Reservation {
  readonly tube: string;
  /** local ms */
  deadline: number;
  /** When this connection took it (local ms): its run time ends with its delete. */
  readonly since: number;
}

/** One connection, as its commands see it. */
export interface Session {
  /** Who holds this connection's reservations in the store (sidecar:connection). */
  readonly owner: string;
  readonly used: string;
  readonly watched: readonly string[];
  /** Changes whenever the watch list does (never repeats for a connection). */
  readonly watchVersion: number;
  /** Whether the tube is in the watch list. */
  watches(tube: string): boolean;
  /** This connection's reservations, by job id. */
  readonly reserved: ReadonlyMap<string, Reservation>;

  /** The only way a reply leaves: in command order, one per command. */
  answer(reply: Buffer | readonly Buffer[]): void;
  /** A command's store call failed: the protocol's error reply (and a log line). */
  fail(err: unknown): void;
  /** Hands a job op to the cross-connection batch; its completion calls settled. */
  submit(op: AnyJobOp): void;
  /** A batched op's reply, or the error it met; answered in command order (the store may answer out of it). */
  settled(op: AnyJobOp, outcome: Buffer | Error): void;

  setUsed(tube: string): void;
  /** Adds a tube to the watch list (the caller checked it is not there). */
  addWatched(tube: string): void;
  removeWatched(tube: string): void;

  /** Remembers a job reserved for this connection and sends it (RESERVED). */
  deliver(job: ReservedJob): void;
  /** The same for the jobs of one reserve-many (RESERVED-MANY, then a RESERVED each). */
  deliverMany(jobs: readonly ReservedJob[]): void;
  renew(id: string, ttrSeconds: number): void;
  forget(id: string): void;
  /** The job was deleted: its run time counts, and it is forgotten. */
  completed(id: string): void;
  /** A delay of this connection's job ends within ms: make sure it is noticed in time. */
  dueIn(ms: number): void;
  /** Soonest deadline of this connection's reservations (local ms), Infinity if none. */
  soonestDeadline(now: number): number;
  /** When the command being run arrived (Date.now()): a time limit it sets counts from then. */
  readonly arrivedAt: number;

  becomeProducer(): void;
  becomeWorker(): void;
  /** quit: send what is pending, then close. */
  quit(): void;
  /**
   * Takes from the input the complete copies of the command line just read
   * that follow it (a pipelined run of one command), at most `max`: how many.
   */
  takeRepeats(max: number): number;

  /** The client shut its writing side: a reserve can wait for nothing (TIMED_OUT, as beanstalkd). */
  readonly halfClosed: boolean;
  /** Whether this connection may run commands (always, unless a token is configured and not yet given). */
  readonly authorized: boolean;
  authorize(): void;
  /** Counts a wrong token; how many this connection has sent. */
  authFailed(): number;
}

export type TubeUse = 'using' | 'watching';

/**
 * reserve-many of up to `many` jobs (one RESERVED-MANY), or `run` reserves
 * sent together and answered in one store call, each with its own RESERVED,
 * DEADLINE_SOON or TIMED_OUT as if they had come one after another.
 */
export type ReserveShape = { many: number } | { run: number };

export interface Services {
  readonly jobs: JobStore;
  readonly rooms: RoomStore;
  /**
   * Blocks the session in a reserve (timeout in seconds, null = forever) until
   * it is answered: with one job, for reserve-many (`many` = the most to take)
   * with all the jobs that were ready together, or for a pipelined run of
   * `run` reserves (timeout 0) with a reply each.
   */
  wait(s: Session, timeoutSeconds: number | null, shape?: ReserveShape): Promise<void>;
  /**
   * A session starts (+1) or stops (-1) using or watching a tube. Starting may
   * first create the tube in the store: then a promise, settled when it exists.
   */
  reference(tube: string, use: TubeUse, delta: 1 | -1): Promise<void> | undefined;
  readonly stats: StatsSource;
  readonly maxJobSize: number;
  /** Whether `token` is the configured one (any token when none is configured). */
  authenticates(token: string): boolean;
  /** beanstalkd's drain mode: puts answer DRAINING. */
  draining(): boolean;
  countCommand(counter: string): void;
  /** Whether the store reserves over all the session's watched tubes at once (JobStore.reservesAtOnce). */
  reservesAtOnce(s: Session): boolean;
}

/** The typed stats model; the YAML replies and the public API render it. */
export interface StatsSource {
  server(): Promise<ServerStats>;
  tube(name: string): Promise<TubeStats | null>;
  job(id: string): Promise<JobStats | null>;
  room(name: string): Promise<RoomStats | null>;
}

/**
 * A command's handler: its parsed arguments as typed in protocol/commands.json.
 * `body` is a body command's data without its terminator, or null when the
 * terminator was wrong (EXPECTED_CRLF); other commands get null.
 */
export type Handler<K extends CommandName> = (s: Session, args: CommandArgs[K], svc: Services, body: Buffer | null) => Promise<void> | void;

export type Handlers<K extends CommandName = CommandName> = { [P in K]: Handler<P> };

/**
 * Whether a command may run while its connection's batched commands are in
 * flight: only one that goes into the batch itself (its reply then follows
 * theirs). Others wait, to see their effects and to answer after them.
 */
export type BatchRule<K extends CommandName> = (s: Session, args: CommandArgs[K]) => boolean;
export type BatchRules = { [P in CommandName]?: BatchRule<P> };
