// This sidecar's connection-level counters (beanstalkd keeps them per
// process). They are published to Redis as a snapshot with each heartbeat so
// that `stats` / `stats-tube` on any sidecar add up every live sidecar.
import { COMMAND_COUNTERS } from '../protocol/stats.js';

export interface TubeUse { using: number; watching: number; waiting: number }

export class Counters {
  readonly commands = new Map<string, number>(COMMAND_COUNTERS.map((c) => [c, 0]));
  connections = 0;
  producers = 0;
  workers = 0;
  waiting = 0;
  totalConnections = 0;
  readonly tubes = new Map<string, TubeUse>();

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
      if (t.using + t.watching + t.waiting === 0) this.tubes.delete(n);
    }
  }

  /** Field/value pairs for lua/heartbeat.lua. */
  snapshot(): Array<string | number> {
    const out: Array<string | number> = [
      'current-connections', this.connections, 'current-producers', this.producers,
      'current-workers', this.workers, 'current-waiting', this.waiting, 'total-connections', this.totalConnections,
    ];
    for (const [k, v] of this.commands) if (v) out.push(k, v);
    for (const [name, t] of this.tubes) {
      if (t.using) out.push(`using:${name}`, t.using);
      if (t.watching) out.push(`watching:${name}`, t.watching);
      if (t.waiting) out.push(`waiting:${name}`, t.waiting);
    }
    return out;
  }
}

/** Adds snapshots (from Redis: strings) of other sidecars to a total. */
export function sumSnapshots(snapshots: Array<Record<string, string>>, field: string): number {
  let n = 0;
  for (const s of snapshots) n += Number(s[field] ?? 0);
  return n;
}
