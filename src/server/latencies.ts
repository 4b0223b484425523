// How long jobs wait and run, per tube: wait is ready -> reserved (the store
// says how long a job it hands out was ready, on its clock: batch.lua
// waited_ms), run is reserved -> deleted (this sidecar's clock, from its
// RESERVED to its DELETED). Counted in fixed buckets, so that the counts of
// every sidecar add up: they travel in the heartbeat snapshot (Counters), and
// the admin API and the dashboard sum those of all live sidecars. No Redis
// call per job: the wait comes with the reserve's reply.

/** Upper bounds of the buckets, ms; a last bucket takes the rest. Shared by /metrics (in seconds). */
export const LATENCY_BUCKETS_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000] as const;
/** Tubes counted per sidecar: what a client sends cannot grow it without bound. */
export const LATENCY_TUBES = 1000;

export type LatencyKind = 'wait' | 'run';
export const LATENCY_KINDS: readonly LatencyKind[] = ['wait', 'run'];

/** The snapshot field of a kind's counts for a tube: comma-separated counts per bucket. */
export const latencyField = (kind: LatencyKind, tube: string) => `${kind}:${tube}`;

function bucketOf(ms: number): number {
  let i = 0;
  while (i < LATENCY_BUCKETS_MS.length && ms > LATENCY_BUCKETS_MS[i]!) i++;
  return i;
}

export class Latencies {
  private readonly counts = new Map<string, number[]>();
  private changed = new Set<string>();

  observe(kind: LatencyKind, tube: string, ms: number): void {
    const key = latencyField(kind, tube);
    let c = this.counts.get(key);
    if (!c) {
      if (this.counts.size >= 2 * LATENCY_TUBES) return;
      c = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
      this.counts.set(key, c);
    }
    c[bucketOf(ms)]!++;
    this.changed.add(key);
  }

  /** Field/value pairs of the counts: all of them (`whole`), or those that changed since the last call. */
  fields(whole: boolean): Array<string | number> {
    const out: Array<string | number> = [];
    for (const key of whole ? this.counts.keys() : this.changed) out.push(key, this.counts.get(key)!.join(','));
    this.changed = new Set();
    return out;
  }
}

/** Counts as a snapshot field holds them ("3,0,1,..."), added to `into` (a new array when none). */
export function addCounts(into: number[] | undefined, field: string): number[] {
  const counts = field.split(',').map(Number);
  const sum = into ?? new Array<number>(counts.length).fill(0);
  counts.forEach((n, i) => { sum[i] = (sum[i] ?? 0) + n; });
  return sum;
}

/** The counts of a tube's kind summed over snapshots (null: none). */
export function summedCounts(snapshots: ReadonlyArray<Record<string, string>>, kind: LatencyKind, tube: string): number[] | null {
  const field = latencyField(kind, tube);
  let sum: number[] | undefined;
  for (const s of snapshots) if (s[field]) sum = addCounts(sum, s[field]);
  return sum ?? null;
}

/** The q-quantile (0..1) of bucket counts, ms: interpolated within its bucket; null when empty. */
export function quantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!;
    if (below + n >= rank && n > 0) {
      const lo = i === 0 ? 0 : LATENCY_BUCKETS_MS[i - 1]!;
      const hi = LATENCY_BUCKETS_MS[i] ?? lo; // the last bucket: its lower bound
      return lo + (hi - lo) * ((rank - below) / n);
    }
    below += n;
  }
  return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]!;
}

/** Counts now less counts before (a window's), bucket by bucket. */
export function countsSince(now: readonly number[], before: readonly number[] | undefined): number[] {
  return now.map((n, i) => Math.max(0, n - (before?.[i] ?? 0)));
}
