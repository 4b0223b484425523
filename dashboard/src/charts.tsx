// The last hour's charts (uPlot), from /api/history: the same samples on
// every sidecar. Fetched again when a push arrives, at most once a slot.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { get, type Live } from './api.js';

export interface Sample {
  t: number; ready: number; reserved: number; delayed: number; buried: number; timeouts: number; jobs: number;
  put: number; reserve: number; delete: number; connections: number; sidecars: number; oldest: Record<string, number>;
  /** ms, [p50, p99] of the sample's window, by tube (older samples have none). */
  latency?: Record<string, Record<'wait' | 'run', [number | null, number | null]>>;
}

const SLOT_MS = 10_000;
const COLORS = ['#c0392b', '#2e86de', '#27ae60', '#8e44ad', '#d68910', '#16a085'];

/** The history, fetched again on pushes at most once a slot. */
export function useHistory(live: Live | null): Sample[] {
  const [samples, setSamples] = useState<Sample[]>([]);
  const fetched = useRef(0);
  useEffect(() => {
    if (Date.now() - fetched.current < SLOT_MS) return;
    fetched.current = Date.now();
    get<Sample[]>('api/history').then(setSamples, () => { fetched.current = 0; });
  }, [live?.at]);
  return samples;
}

/** Per second between samples, of a counter that only grows (a sidecar leaving shows as 0, not less). */
function rate(samples: Sample[], pick: (s: Sample) => number): Array<number | null> {
  return samples.map((s, i) => {
    const prev = samples[i - 1];
    return prev ? Math.max(0, (pick(s) - pick(prev)) / ((s.t - prev.t) / 1000)) : null;
  });
}

function Chart({ title, samples, series }: { title: string; samples: Sample[]; series: Array<[string, Array<number | null>]> }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || samples.length === 0) return;
    const stroke = getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#888';
    const axis = { stroke, grid: { stroke: `${stroke}33` }, ticks: { stroke: `${stroke}33` } };
    const plot = new uPlot({
      width: Math.max(300, el.clientWidth), height: 180, legend: { show: true },
      axes: [axis, axis],
      series: [{}, ...series.map(([label], i) => ({ label, stroke: COLORS[i % COLORS.length], width: 1.5 }))],
    }, [samples.map((s) => s.t / 1000), ...series.map(([, values]) => values)] as uPlot.AlignedData, el);
    return () => plot.destroy();
  }, [samples, document.documentElement.dataset.theme]);
  return <div class="chart"><h3>{title}</h3><div ref={box} /></div>;
}

export function Charts({ samples }: { samples: Sample[] }) {
  if (samples.length < 2) return <p class="muted">The charts fill in as samples come (one every 10 s, kept for an hour in Redis).</p>;
  const tubes = [...new Set(samples.flatMap((s) => Object.keys(s.oldest)))].slice(0, 5);
  const timed = [...new Set(samples.flatMap((s) => Object.keys(s.latency ?? {})))].slice(0, 5);
  const percentile = (kind: 'wait' | 'run', at: 0 | 1): Array<[string, Array<number | null>]> =>
    timed.map((t) => [`${t} p${at === 0 ? 50 : 99}`, samples.map((s) => s.latency?.[t]?.[kind][at] ?? null)]);
  return (
    <div class="charts">
      <Chart title="throughput (jobs/s)" samples={samples} series={[
        ['put', rate(samples, (s) => s.put)], ['reserved', rate(samples, (s) => s.reserve)],
        ['deleted', rate(samples, (s) => s.delete)], ['timed out', rate(samples, (s) => s.timeouts)],
      ]} />
      <Chart title="jobs by state" samples={samples} series={(['ready', 'reserved', 'delayed', 'buried'] as const).map((k) => [k, samples.map((s) => s[k])])} />
      <Chart title="oldest ready job (s)" samples={samples} series={tubes.map((t) => [t, samples.map((s) => s.oldest[t] ?? null)])} />
      <Chart title="wait: ready to reserved (ms)" samples={samples} series={[...percentile('wait', 0), ...percentile('wait', 1)]} />
      <Chart title="run: reserved to deleted (ms)" samples={samples} series={[...percentile('run', 0), ...percentile('run', 1)]} />
    </div>
  );
}
