// Latency histograms and the result table.
//
// Histogram: fixed log-linear buckets over whole microseconds (HdrHistogram's
// layout with 32 sub-buckets per power of two, so every value is kept within
// ~3%): recording is one array increment, and rounds merge by addition.

const SUB_BITS = 5;
const SUB = 1 << SUB_BITS;
/** Values below this are their own bucket (exact). */
const LINEAR = SUB * 2;
const MAX_EXPONENT = 36; // 2^36 µs ≈ 19 hours: nothing we measure is longer
const BUCKETS = LINEAR + (MAX_EXPONENT - SUB_BITS) * SUB;

function bucketOf(us: number): number {
  if (us < LINEAR) return us;
  const exponent = Math.floor(Math.log2(us));
  if (exponent > MAX_EXPONENT) return BUCKETS - 1;
  const sub = Math.floor(us / 2 ** (exponent - SUB_BITS)) - SUB;
  return LINEAR + (exponent - SUB_BITS - 1) * SUB + sub;
}

/** The smallest value that falls in a bucket. */
function lowestIn(bucket: number): number {
  if (bucket < LINEAR) return bucket;
  const i = bucket - LINEAR;
  const exponent = Math.floor(i / SUB) + SUB_BITS + 1;
  return (SUB + (i % SUB)) * 2 ** (exponent - SUB_BITS);
}

export class Histogram {
  private readonly counts = new Float64Array(BUCKETS);
  count = 0;
  /** Microseconds. */
  max = 0;

  /** Records a duration given in milliseconds (negative clock skew counts as 0). */
  recordMs(ms: number): void {
    const us = ms > 0 ? Math.floor(ms * 1000) : 0;
    this.counts[bucketOf(us)]!++;
    this.count++;
    if (us > this.max) this.max = us;
  }

  add(other: Histogram): void {
    for (let b = 0; b < BUCKETS; b++) this.counts[b]! += other.counts[b]!;
    this.count += other.count;
    if (other.max > this.max) this.max = other.max;
  }

  /** The value at quantile q (0..1), in milliseconds; NaN when empty. */
  quantileMs(q: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let b = 0; b < BUCKETS; b++) {
      seen += this.counts[b]!;
      if (seen >= rank) return Math.min(this.max, midpoint(b)) / 1000;
    }
    return this.max / 1000;
  }

  summary(): LatencySummary {
    return {
      count: this.count,
      p50: this.quantileMs(0.5),
      p90: this.quantileMs(0.9),
      p99: this.quantileMs(0.99),
      p999: this.quantileMs(0.999),
      max: this.count ? this.max / 1000 : NaN,
    };
  }
}

function midpoint(bucket: number): number {
  return bucket < LINEAR ? bucket : (lowestIn(bucket) + lowestIn(bucket + 1)) / 2;
}

/** Latency quantiles in milliseconds. */
export interface LatencySummary { count: number; p50: number; p90: number; p99: number; p999: number; max: number }

/** Fixed-width text table; numbers right-aligned, text left-aligned. */
export function formatTable(header: string[], rows: Array<Array<string | number>>): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const right = header.map((_, i) => rows.some((r) => typeof r[i] === 'number'));
  const line = (r: string[]) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

/** 3 significant digits for small numbers, whole numbers with thousands separators for big ones. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  if (n === 0) return '0';
  return Number(n.toPrecision(3)).toString();
}

/** The middle value (the upper one of an even count): what the interleaved-round benchmarks print. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}
