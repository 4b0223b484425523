// This sidecar's connection-level counters (beanstalkd keeps them per
// process). They are published to Redis as a snapshot with each heartbeat so
// that `stats` / `stats-tube` on any sidecar add up every live sidecar.
import { COMMAND_COUNTERS } from '../protocol/stats.js';
import { Latencies } from './latencies.js';

export interface TubeUse { using: number; watching: number; waiting: number }

/** The first value of a snapshot that changes only what it names (lua/jobs/heartbeat.lua). */
export const SNAPSHOT_CHANGES = '+';
/** Snapshot fields of a waiting connection watching many tubes (WIDE_WATCH): owner, not one field per tube. */
export const WAITING_WATCH = 'waiting-watch:';

export class Counters {
  readonly commands = new Map<string, number>(COMMAND_COUNTERS.map((c) => [c, 0]));
  connections = 0;
  producers = 0;
  workers = 0;
  waiting = 0;
  totalConnections = 0;
  readonly tubes = new Map<string, TubeUse>();
  /** Jobs' wait and run times by tube (latencies.ts). */
  readonly latencies = new Latencies();
  /**
   * Waiting connections that watch many tubes, by owner, with what they
   * watch: counted per tube when asked (waitingOn), not per wait, and
   * published as one field each, which other sidecars look up in the
   * watch lists kept in the store.
   */
  private readonly wide = new Map<string, ReadonlySet<string>>();
  /** What changed since the last snapshot: tubes, and owners of wide waits. */
  private changedTubes = new Set<string>();
  private changedWide = new Set<string>();
  /** The next snapshot is whole (the first, or after one that may not have been stored). */
  private whole = true;

  count(counter: string): void {
    this.commands.set(counter, (this.commands.get(counter) ?? 0) + 1);
  }

  tube(name: string): TubeUse {
    let t = this.tubes.get(name);
    if (!t) { t = { using: 0, watching: 0, waiting: 0 }; this.tubes.set(name, t); }
    return t;
  }

  /**
   * Adjusts using/watching of a tube. Returns +1 when this sidecar starts
   * referencing the tube, -1 when it stops, 0 otherwise.
   */
  reference(name: string, field: 'using' | 'watching', delta: 1 | -1): 1 | -1 | 0 {
    const t = this.tube(name);
    const before = t.using + t.watching;
    t[field] += delta;
    this.changedTubes.add(name);
    const after = t.using + t.watching;
    if (after === 0 && t.waiting === 0) this.tubes.delete(name);
    if (before === 0 && after > 0) return 1;
    if (before > 0 && after === 0) return -1;
    return 0;
  }

  waitingDelta(names: readonly string[], delta: 1 | -1): void {
    this.waiting += delta;
    for (const n of names) {
      const t = this.tube(n);
      t.waiting += delta;
      this.changedTubes.add(n);
      if (t.using + t.watching + t.waiting === 0) this.tubes.delete(n);
    }
  }

  /** A connection watching many tubes starts (+1) or stops (-1) waiting. */
  wideWaitingDelta(owner: string, watched: ReadonlySet<string>, delta: 1 | -1): void {
    this.waiting += delta;
    if (delta > 0) this.wide.set(owner, watched);
    else this.wide.delete(owner);
    this.changedWide.add(owner);
  }

  /** This sidecar's connections waiting on a tube. */
  waitingOn(name: string): number {
    let n = this.tubes.get(name)?.waiting ?? 0;
    for (const watched of this.wide.values()) if (watched.has(name)) n++;
    return n;
  }

  /** Owners of this sidecar's waiting connections that watch many tubes. */
  get wideWaiters(): number {
    return this.wide.size;
  }

  /**
   * Field/value pairs for lua/heartbeat.lua: all of them, or after
   * SNAPSHOT_CHANGES only what changed since the last (a field whose value
   * is '' goes): a sidecar whose connections watch 10,000 tubes does not
   * send 10,000 fields each time a counter moves.
   */
  snapshot(): Array<string | number> {
    const whole = this.whole;
    const out: Array<string | number> = whole ? [] : [SNAPSHOT_CHANGES];
    out.push(
      'current-connections', this.connections, 'current-producers', this.producers,
      'current-workers', this.workers, 'current-waiting', this.waiting, 'total-connections', this.totalConnections,
    );
    for (const [k, v] of this.commands) if (v) out.push(k, v);
    const none = whole ? null : '';
    const field = (name: string, value: number) => {
      if (value) out.push(name, value);
      else if (none !== null) out.push(name, none);
    };
    const tubes = whole ? this.tubes.keys() : this.changedTubes;
    for (const name of tubes) {
      const t = this.tubes.get(name);
      field(`using:${name}`, t?.using ?? 0);
      field(`watching:${name}`, t?.watching ?? 0);
      field(`waiting:${name}`, t?.waiting ?? 0);
    }
    for (const owner of whole ? this.wide.keys() : this.changedWide) field(`${WAITING_WATCH}${owner}`, this.wide.has(owner) ? 1 : 0);
    out.push(...this.latencies.fields(whole));
    this.whole = false;
    this.changedTubes = new Set();
    this.changedWide = new Set();
    return out;
  }

  /** The last snapshot may not have been stored (or the store lost it): the next one is whole. */
  republish(): void {
    this.whole = true;
  }
}

/** Adds snapshots (from Redis: strings) of other sidecars to a total. */
export function sumSnapshots(snapshots: Array<Record<string, string>>, field: string): number {
  let n = 0;
  for (const s of snapshots) n += Number(s[field] ?? 0);
  return n;
}
