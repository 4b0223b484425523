// Cross-connection batching: job commands from every connection go into one
// queue; whenever fewer than `maxInFlight` batch calls are out, everything
// queued (up to the size caps) goes to Redis as ONE script call
// (lua/jobs/batch.lua). Under load, batches form by themselves from what arrives
// during a round trip; a lone command on an idle sidecar is sent at the end
// of the current event-loop turn, with no timer. Ops settle in the order
// they were added; a connection whose ops went to several shards' batchers
// puts their replies back in its order itself. Batchers whose calls share a
// link flush together (LinkFlush): what all of them send in one turn leaves
// in one write, or, where the store can, in one call (the sharded store's
// call groups: the shards of one Redis node).

import type { AnyJobOp, OpResult } from './ops.js';

export interface BatchLimits {
  /** Most ops per script call: bounds how long one call holds Redis. */
  maxOps: number;
  /** Most body bytes per call (a bigger single job still goes, alone). */
  maxBytes: number;
  /** Calls out at once: 1 alternates sidecar and Redis; 2 overlaps them. */
  maxInFlight: number;
}

/** One result per op, or an Error for an op that alone failed. */
export type ApplyBatch = (ops: readonly AnyJobOp[]) => Promise<Array<OpResult | Error>>;

export class Batcher {
  private queue: AnyJobOp[] = [];
  private inFlight = 0;
  private opsInFlight = 0;
  private scheduled = false;
  /** Calls made and ops sent (for metrics). */
  calls = 0;
  ops = 0;

  constructor(
    private readonly apply: ApplyBatch,
    readonly limits: BatchLimits,
    /** Where an op's completion that threw is reported (it must not keep the others from theirs). */
    private readonly report: (err: unknown) => void,
    /** The batchers it flushes with, if any. */
    private readonly link: LinkFlush | null = null,
  ) {}

  add(op: AnyJobOp): void {
    this.queue.push(op);
    if (!this.scheduled && this.inFlight < this.limits.maxInFlight) this.schedule();
  }

  private schedule(): void {
    this.scheduled = true;
    if (this.link) this.link.request(this);
    else setImmediate(this.flush);
  }

  /** Ops queued or in flight (a graceful stop waits for none). */
  get pending(): number {
    return this.queue.length + this.opsInFlight;
  }

  /** Sends what is queued, as far as calls in flight allow. */
  readonly flush = (): void => {
    for (const batch of this.takeBatches()) this.send(batch);
  };

  /**
   * The batches that may go now, counted as in flight: each goes in a call
   * of this batcher's (send) or in one its LinkFlush makes, and is settled
   * with complete().
   */
  takeBatches(): AnyJobOp[][] {
    this.scheduled = false;
    const batches: AnyJobOp[][] = [];
    while (this.queue.length > 0 && this.inFlight < this.limits.maxInFlight) {
      const batch = this.take();
      this.inFlight++;
      this.opsInFlight += batch.length;
      this.calls++;
      this.ops += batch.length;
      batches.push(batch);
    }
    return batches;
  }

  private take(): AnyJobOp[] {
    const { maxOps, maxBytes } = this.limits;
    let n = 0;
    let bytes = 0;
    for (const op of this.queue) {
      const size = op.body ? op.body.length : 0;
      if (n === maxOps || (n > 0 && bytes + size > maxBytes)) break;
      bytes += size;
      n++;
    }
    if (n === this.queue.length) {
      const all = this.queue;
      this.queue = [];
      return all;
    }
    return this.queue.splice(0, n);
  }

  /** A batch taken (takeBatches) in a call of its own. */
  send(batch: AnyJobOp[]): void {
    this.apply(batch).then(
      (results) => this.complete(batch, results, null),
      (err: unknown) => this.complete(batch, null, err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** A batch taken is answered: each op with its result, or all with the call's failure. */
  complete(batch: AnyJobOp[], results: Array<OpResult | Error> | null, err: Error | null): void {
    this.inFlight--;
    this.opsInFlight -= batch.length;
    for (let i = 0; i < batch.length; i++) {
      const op = batch[i]!;
      try {
        const r = results ? results[i] : undefined;
        if (r instanceof Error) op.done(op, undefined, r);
        else op.done(op, r, err);
      } catch (e) {
        this.report(e);
      }
    }
    // What arrived during the round trip (and what the completions just added) goes now,
    // or with the other batchers of its link at the end of this turn.
    if (!this.link) this.flush();
    else if (this.queue.length > 0 && !this.scheduled) this.schedule();
  }
}

/** Batches taken from their batchers in one turn, each with its batcher. */
export type Taken = ReadonlyArray<readonly [Batcher, AnyJobOp[]]>;

/**
 * Batchers whose calls go over one link (the shards on one Redis): those
 * with something to send in an event-loop turn flush together inside
 * `together` (the backend corks the link around it), so their calls leave
 * in one write, and Redis reads them in one read; `send` may put several
 * of those batches in one call.
 */
export class LinkFlush {
  private readonly due = new Set<Batcher>();
  private scheduled = false;

  constructor(
    private readonly together: (send: () => void) => void,
    private readonly send: (taken: Taken) => void = (taken) => { for (const [batcher, batch] of taken) batcher.send(batch); },
  ) {}

  request(batcher: Batcher): void {
    this.due.add(batcher);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.run);
    }
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const due = [...this.due];
    this.due.clear();
    this.together(() => {
      this.send(due.flatMap((batcher) => batcher.takeBatches().map((batch) => [batcher, batch] as const)));
    });
  };
}
