import { describe, expect, it } from 'vitest';
import { addCounts, countsSince, Latencies, LATENCY_BUCKETS_MS, LATENCY_TUBES, quantile, summedCounts } from '../../src/server/latencies.js';
import { LatencyWindow } from '../../src/admin/history.js';

const fieldsOf = (l: Latencies, whole: boolean) => {
  const f = l.fields(whole);
  const out: Record<string, number[]> = {};
  for (let i = 0; i < f.length; i += 2) out[f[i] as string] = String(f[i + 1]).split(',').map(Number);
  return out;
};

describe('latencies', () => {
  it('counts each time in the first bucket whose bound holds it, the rest in the last', () => {
    const l = new Latencies();
    for (const ms of [0, 1, 1.5, 2, 999, 1000, 1001, 3_600_000, 3_600_001]) l.observe('wait', 't', ms);
    const counts = fieldsOf(l, true)['wait:t']!;
    expect(counts).toHaveLength(LATENCY_BUCKETS_MS.length + 1);
    const at = (bound: number) => counts[LATENCY_BUCKETS_MS.indexOf(bound as (typeof LATENCY_BUCKETS_MS)[number])];
    expect([at(1), at(2), at(1000), at(2500), at(3_600_000), counts[LATENCY_BUCKETS_MS.length]]).toEqual([2, 2, 2, 1, 1, 1]);
  });

  it('publishes what changed since the last snapshot, or all of it', () => {
    const l = new Latencies();
    l.observe('wait', 'a', 5);
    l.observe('run', 'b', 5);
    expect(Object.keys(fieldsOf(l, false)).sort()).toEqual(['run:b', 'wait:a']);
    expect(fieldsOf(l, false)).toEqual({});
    l.observe('run', 'b', 7);
    expect(Object.keys(fieldsOf(l, false))).toEqual(['run:b']);
    expect(Object.keys(fieldsOf(l, true)).sort()).toEqual(['run:b', 'wait:a']);
  });

  it('counts at most LATENCY_TUBES tubes of each kind (what clients name cannot grow it without bound)', () => {
    const l = new Latencies();
    for (let i = 0; i < LATENCY_TUBES + 50; i++) { l.observe('wait', `t${i}`, 1); l.observe('run', `t${i}`, 1); }
    expect(Object.keys(fieldsOf(l, true))).toHaveLength(2 * LATENCY_TUBES);
  });

  it('estimates quantiles within their bucket, and sums the counts of several sidecars', () => {
    const counts = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
    counts[LATENCY_BUCKETS_MS.indexOf(100)] = 100; // 100 jobs in (50, 100] ms
    expect(quantile(counts, 0.5)).toBe(75);
    expect(quantile(counts, 0.99)).toBeCloseTo(99.5);
    expect(quantile(counts.map(() => 0), 0.5)).toBeNull();
    const snapshots: Array<Record<string, string>> = [{ 'wait:t': counts.join(',') }, { 'wait:t': counts.join(','), 'run:t': '1' }, {}];
    expect(summedCounts(snapshots, 'wait', 't')![LATENCY_BUCKETS_MS.indexOf(100)]).toBe(200);
    expect(summedCounts(snapshots, 'wait', 'other')).toBeNull();
    expect(addCounts([1, 2], '3,4')).toEqual([4, 6]);
    expect(countsSince([5, 5], [2, 7])).toEqual([3, 0]);
  });

  it('a history window holds the times of the jobs since the last sample, the busiest tubes first', () => {
    const w = new LatencyWindow();
    const c = (bucketBound: number, n: number) => {
      const counts = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
      counts[LATENCY_BUCKETS_MS.indexOf(bucketBound as (typeof LATENCY_BUCKETS_MS)[number])] = n;
      return counts;
    };
    expect(w.percentiles(new Map([['wait:a', c(10, 4)], ['run:a', c(1000, 4)]]))).toEqual({ a: { wait: [7.5, expect.any(Number)], run: [750, expect.any(Number)] } });
    // Nothing new for a: it leaves the window's tubes.
    expect(w.percentiles(new Map([['wait:a', c(10, 4)], ['run:a', c(1000, 4)], ['wait:b', c(1, 2)]]))).toEqual({ b: { wait: [0.5, expect.any(Number)], run: [null, null] } });
  });
});
