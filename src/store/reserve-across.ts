// A reserve over tubes of several shards, as one op to its caller. First each
// of those shards names its candidates (the jobs a reserve there would take,
// taking nothing), then the shards of the most urgent (lowest priority, then
// the earliest put) reserve them. Between the two steps another client may
// take one of those jobs: a shard's reserve then takes its next one, and if
// no shard had any left, it looks again at once. A shard that fails to
// answer is left out of that look (it fails the reserve only when no other
// shard had a job).
import { isOutcomeUnknown, StoreError } from './errors.js';
import { jobOps, type AnyJobOp, type Candidate, type CandidateResult, type JobOp, type ReservedJob, type ReserveResult } from './ops.js';

/** Tubes grouped by shard: the shards, and each one's tubes in the order named. */
export interface TubeParts {
  readonly shards: readonly number[];
  readonly tubes: ReadonlyArray<readonly string[]>;
}

/** Hands an op to one shard's batch. */
export type SendToShard = (shard: number, op: AnyJobOp) => void;

export function reserveAcross(op: JobOp<unknown, ReserveResult>, parts: TubeParts, send: SendToShard): void {
  new Across(op, parts, send).survey();
}

class Across {
  private pending = 0;
  /** Each part's candidates, in its reserve order. */
  private candidates: Candidate[][] = [];
  /** The soonest ms until something may become reservable in any shard (-1: nothing will). */
  private wakeMs = -1;
  private failure: Error | null = null;
  /** Second step: the part of each job to take, most urgent first, and what each part's reserve took. */
  private order: number[] = [];
  private taken: ReservedJob[][] = [];

  constructor(private readonly op: JobOp<unknown, ReserveResult>, private readonly parts: TubeParts, private readonly send: SendToShard) {}

  survey(): void {
    const { op, parts } = this;
    this.pending = parts.shards.length;
    this.candidates = parts.shards.map(() => []);
    this.wakeMs = -1;
    this.failure = null;
    parts.shards.forEach((shard, i) => this.send(shard, jobOps.candidates(i, this.surveyed, parts.tubes[i]!, op.count, op.owner, op.watch)));
  }

  private readonly surveyed = (c: JobOp<number, CandidateResult>, r: CandidateResult, err: Error | null): void => {
    // Candidates take nothing: their failure is a failed attempt, never one of unknown outcome.
    if (err) this.failure = new StoreError('failed', err.message);
    else if (typeof r === 'number') {
      if (r >= 0 && (this.wakeMs < 0 || r < this.wakeMs)) this.wakeMs = r;
    } else this.candidates[c.ctx] = r;
    if (--this.pending > 0) return;
    // A shard that could not answer (its slot moving, say) keeps no other shard's jobs from the reserve.
    const all = this.candidates.flatMap((list, part) => list.map((candidate, k) => ({ ...candidate, part, k })));
    all.sort((a, b) => a.pri - b.pri || a.createdMs - b.createdMs || a.part - b.part || a.k - b.k);
    this.order = all.slice(0, this.op.count).map((candidate) => candidate.part);
    if (this.order.length === 0) return this.answer(this.wakeMs, this.failure);
    this.failure = null;
    const counts = new Map<number, number>();
    for (const part of this.order) counts.set(part, (counts.get(part) ?? 0) + 1);
    this.pending = counts.size;
    this.taken = this.parts.shards.map(() => []);
    for (const [part, count] of counts) {
      this.send(this.parts.shards[part]!, jobOps.reserve(part, this.reserved, this.op.owner, this.parts.tubes[part]!, count, this.op.watch));
    }
  };

  private readonly reserved = (r: JobOp<number, ReserveResult>, result: ReserveResult, err: Error | null): void => {
    // An unknown outcome wins: its owner must then hand back everything it holds, found in the store.
    if (err && (!this.failure || isOutcomeUnknown(err))) this.failure = err;
    else if (typeof result === 'object') this.taken[r.ctx] = result.jobs;
    if (--this.pending > 0) return;
    const next = this.taken.map(() => 0);
    const jobs: ReservedJob[] = [];
    for (const part of this.order) {
      const job = this.taken[part]![next[part]!++];
      if (job) jobs.push(job);
    }
    if (this.failure && isOutcomeUnknown(this.failure)) this.answer(-1, this.failure);
    // Whether the tubes are drained is not known: each shard saw its part at another moment.
    else if (jobs.length > 0) this.answer({ jobs, drained: false }, null);
    else if (this.failure) this.answer(-1, this.failure);
    else this.survey(); // all taken by others meanwhile: look again
  };

  private answer(result: ReserveResult, err: Error | null): void {
    this.op.done(this.op, result, err);
  }
}
