// This sidecar's presence in the shared server: a heartbeat lease with a
// snapshot of its counters (so `stats` on any sidecar adds up every live
// one), its references to tubes (a tube nobody uses, watches or fills is
// collected), and the reaping of sidecars whose heartbeat stopped.
//
// Self-fencing: a lease renewed by a beat sent at t (this process' monotonic
// clock) lapses in Redis at t + lease at the earliest (Redis stamps it when
// the beat runs, later), and only then may another sidecar reap it. Unless a
// later beat has renewed it by t + lease - FENCE_MARGIN_BEATS beats, this
// sidecar stops first: it closes every connection that holds a reservation
// or may come to hold one, and serves no reserve until a beat renews it.
import type { Logger } from 'pino';
import type { TubeUse } from '../commands/session.js';
import type { JobStore, NodeSnapshot } from '../store/job-store.js';
import type { Background } from './background.js';
import type { Counters } from './counters.js';

/** Coalesces counter changes into at most one snapshot write per interval. */
const SNAPSHOT_INTERVAL_MS = 20;
/** A sidecar counts as dead after this many missed beats (its lease); the dead are looked for at every beat. */
const BEATS_PER_LEASE = 5;
/** How many beats before its lease can lapse a sidecar that has not renewed it stops serving reserves. */
const FENCE_MARGIN_BEATS = 2;

export class Presence {
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private snapshotTimer: NodeJS.Timeout | null = null;
  /** Other live sidecars were seen at the last look (every beat; assumed until the first). */
  private othersLive = true;
  /** A reaping pass is running (the next beat starts none; one that failed is tried again at the next). */
  private reaping = false;
  private stopped = false;
  /** The first beat took the lease; a later beat that has to take it again means it lapsed. */
  private registered = false;
  /** When the latest beat that renewed the lease was sent (performance.now()). */
  private renewedAt = -Infinity;
  private fenceTimer: NodeJS.Timeout | null = null;
  /** The lease is renewed with a margin to spare: reserves may be served. */
  serving = false;
  readonly leaseMs: number;
  /** Stop serving this long before the lease can lapse. */
  readonly marginMs: number;

  constructor(
    readonly nodeId: string,
    private readonly jobs: JobStore,
    private readonly counters: Counters,
    private readonly heartbeatMs: number,
    private readonly background: Background,
    private readonly log: Logger,
    /**
     * The lease lapsed (the store was out of reach for a while) and other
     * sidecars may have handed this one's reservations to someone else: its
     * connections must not go on as if they still held them.
     */
    private readonly onLeaseLost: () => void,
    /**
     * The lease was not renewed in time and may lapse soon: the connections
     * that hold or may take a reservation must close before it does.
     */
    private readonly onFenced: () => void,
  ) {
    this.leaseMs = heartbeatMs * BEATS_PER_LEASE;
    this.marginMs = heartbeatMs * FENCE_MARGIN_BEATS;
  }

  /** The first beat; `default` is held for the sidecar's whole life. */
  async start(): Promise<void> {
    await this.beat();
    this.scheduleHeartbeat();
  }

  /**
   * A connection starts/stops using or watching a tube. When this sidecar
   * starts referencing the tube, the tube is created in the store first (the
   * returned promise); when it stops, the tube may disappear.
   */
  reference(tube: string, use: TubeUse, delta: 1 | -1): Promise<void> | undefined {
    const change = this.counters.reference(tube, use, delta);
    this.statsChanged();
    if (change === 0 || tube === 'default') return undefined;
    const p = this.jobs.refTube(tube, this.nodeId, change);
    if (change === 1) {
      return p.catch((err: unknown) => {
        this.counters.reference(tube, use, -1);
        throw err;
      });
    }
    this.background.track(p, 'unref tube');
    return undefined;
  }

  /**
   * Counters changed: publish a fresh snapshot soon, for the other sidecars'
   * `stats`. Alone (no other live sidecar at the last look, every beat) the
   * beats carry it: a busy lone sidecar makes no call every 20 ms for nobody.
   */
  statsChanged(): void {
    if (this.snapshotTimer || this.stopped || !this.othersLive) return;
    this.snapshotTimer = setTimeout(() => {
      this.snapshotTimer = null;
      this.background.track(this.beat(), 'heartbeat');
    }, SNAPSHOT_INTERVAL_MS);
  }

  /** Counter snapshots of the other live sidecars. */
  async otherSnapshots(): Promise<NodeSnapshot[]> {
    const { live } = await this.jobs.nodes();
    return this.jobs.nodeSnapshots(live.filter((n) => n !== this.nodeId));
  }

  /** No more beats or snapshots (a graceful stop; leave() follows). */
  stop(): void {
    this.stopped = true;
    for (const t of [this.heartbeatTimer, this.snapshotTimer, this.fenceTimer]) if (t) clearTimeout(t);
  }

  /**
   * Leaves the shared server cleanly (its connections all closed): hands back
   * every reservation still held by one of them (what a reserve of unknown
   * outcome took included), drops every reference and the lease.
   */
  async leave(): Promise<void> {
    // The lease lapses now: should this not get to the end, the others reap what is left at their next beat.
    await this.jobs.heartbeat(this.nodeId, 0, []);
    const released = await this.jobs.releaseHeldBy(`${this.nodeId}:`);
    if (released > 0) this.log.info({ jobs: released }, 'handed back the reservations of the closed connections');
    for (const t of this.counters.tubes.keys()) await this.jobs.refTube(t, this.nodeId, 'drop');
    await this.jobs.refTube('default', this.nodeId, 'drop');
    await this.jobs.forgetNode(this.nodeId);
  }

  private async beat(): Promise<void> {
    const sent = performance.now();
    let fresh: boolean;
    try {
      fresh = await this.jobs.heartbeat(this.nodeId, this.leaseMs, this.counters.snapshot());
    } catch (err) {
      this.counters.republish(); // the snapshot holds only changes: the next one is whole
      throw err;
    }
    this.renewed(sent);
    if (!fresh) return;
    // Reaped meanwhile, the store may hold only the changes: all of it again.
    this.counters.republish();
    this.statsChanged();
    if (this.registered) {
      this.log.warn('this sidecar\'s lease lapsed: closing its connections (their reservations may have been handed back)');
      this.onLeaseLost();
    }
    this.registered = true;
    await this.registerReferences();
  }

  /** A beat sent at `sent` renewed the lease: serve until the margin before its lapse. */
  private renewed(sent: number): void {
    if (this.stopped || sent <= this.renewedAt) return;
    this.renewedAt = sent;
    const fenceIn = sent + this.leaseMs - this.marginMs - performance.now();
    if (fenceIn <= 0) return; // renewed too late to serve on
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceTimer = setTimeout(() => this.fence(), fenceIn);
    if (!this.serving && this.registered) this.log.info('lease renewed: serving reserves again');
    this.serving = true;
  }

  private fence(): void {
    this.fenceTimer = null;
    this.serving = false;
    this.log.warn({ renewedMsAgo: Math.round(performance.now() - this.renewedAt), leaseMs: this.leaseMs },
      'lease not renewed in time: closing the connections that hold or may take reservations; no reserve until it is');
    this.onFenced();
  }

  /**
   * (Re)claims every tube this sidecar references: at start (`default`), and
   * after its lease lapsed (the store unreachable for a while) and another
   * sidecar may have reaped it.
   */
  private async registerReferences(): Promise<void> {
    const tubes = new Set(['default']);
    for (const [tube, use] of this.counters.tubes) if (use.using + use.watching > 0) tubes.add(tube);
    for (const tube of tubes) {
      await this.jobs.refTube(tube, this.nodeId, 'drop');
      await this.jobs.refTube(tube, this.nodeId, 1);
    }
  }

  private scheduleHeartbeat(): void {
    if (this.stopped) return;
    this.heartbeatTimer = setTimeout(() => {
      this.background.track(this.beat(), 'heartbeat');
      if (!this.reaping) {
        this.reaping = true;
        this.background.track(this.reapDeadSidecars().finally(() => { this.reaping = false; }), 'reaping');
      }
      this.scheduleHeartbeat();
    }, this.heartbeatMs);
  }

  /**
   * Sidecars whose heartbeat stopped: their connections are gone, so their
   * reservations go back to ready at once (as a closed connection's do), and
   * their tube references are dropped.
   */
  private async reapDeadSidecars(): Promise<void> {
    const { live, dead } = await this.jobs.nodes();
    this.othersLive = live.some((node) => node !== this.nodeId);
    for (const node of dead) {
      const released = await this.jobs.releaseHeldBy(`${node}:`);
      if (released > 0) this.log.info({ node, jobs: released }, 'handed back the reservations of a dead sidecar');
      const [snapshot] = await this.jobs.nodeSnapshots([node]);
      const tubes = new Set<string>(['default']);
      for (const field of Object.keys(snapshot ?? {})) {
        const m = /^(?:using|watching):(.+)$/.exec(field);
        if (m) tubes.add(m[1]!);
      }
      for (const t of tubes) await this.jobs.refTube(t, node, 'drop');
      // Not yet where its lease is still live (beats reach shards at different times): it stays
      // listed as dead, and the next beat's reaping comes back for what it holds there.
      if (await this.jobs.forgetNode(node)) this.log.info({ node }, 'reaped a dead sidecar');
    }
  }
}
