// The overview: jobs by state, rates from the pushed counters, and the live sidecars.
import { useRef } from 'preact/hooks';
import { useLive, type Live } from './api.js';
import { Charts, useHistory } from './charts.js';
import { Figure, Section } from './ui.js';

const RATES = [['put', 'cmd-put'], ['reserved', 'cmd-reserve'], ['deleted', 'cmd-delete']] as const;

function summed(live: Live, field: string): number {
  return live.sidecars.reduce((n, s) => n + Number(s.counters[field] ?? 0), 0);
}

/** Per second between the last two pushes (a sidecar leaving does not count as negative). */
function useRates(live: Live | null): Record<string, number> {
  const last = useRef<{ at: number; values: Record<string, number> } | null>(null);
  const rates = useRef<Record<string, number>>({});
  if (!live) return {};
  const values: Record<string, number> = { timedOut: live.totals.jobTimeouts };
  for (const [name, field] of RATES) values[name] = summed(live, field);
  const prev = last.current;
  if (prev && live.at > prev.at) {
    const secs = (live.at - prev.at) / 1000;
    rates.current = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Math.max(0, (v - (prev.values[k] ?? 0)) / secs)]));
  }
  if (!prev || live.at > prev.at) last.current = { at: live.at, values };
  return rates.current;
}

export function Overview() {
  const live = useLive();
  const rates = useRates(live);
  const history = useHistory(live);
  if (!live) return <p>connecting…</p>;
  const t = live.totals;
  const rate = (k: string) => `${(rates[k] ?? 0).toFixed(1)}/s`;
  return (
    <div>
      <Section title="Jobs">
        <div class="figures">
          <Figure label="ready" value={t.ready} /><Figure label="urgent" value={t.urgent} /><Figure label="reserved" value={t.reserved} />
          <Figure label="delayed" value={t.delayed} /><Figure label="buried" value={t.buried} /><Figure label="tubes" value={t.tubes} />
          <Figure label="jobs ever put" value={t.totalJobs} />
        </div>
      </Section>
      <Section title="Throughput">
        <div class="figures">
          <Figure label="put" value={rate('put')} /><Figure label="reserved" value={rate('reserved')} />
          <Figure label="deleted" value={rate('deleted')} /><Figure label="timed out" value={rate('timedOut')} />
          <Figure label="connections" value={summed(live, 'current-connections')} /><Figure label="workers" value={summed(live, 'current-workers')} />
        </div>
      </Section>
      <Section title="The last hour">
        <Charts samples={history} />
      </Section>
      <Section title={`Sidecars alive: ${live.sidecars.length}`}>
        <table>
          <thead><tr><th>id</th><th>version</th><th>connections</th><th>workers</th><th>waiting</th><th>puts</th><th>reserves</th><th>batch calls</th><th>ops a batch (mean)</th></tr></thead>
          <tbody>{live.sidecars.map((s) => (
            <tr key={s.id}>
              <td class="mono">{s.id}</td><td>{s.info.version ?? '-'}</td><td>{s.counters['current-connections'] ?? 0}</td>
              <td>{s.counters['current-workers'] ?? 0}</td><td>{s.counters['current-waiting'] ?? 0}</td>
              <td>{s.counters['cmd-put'] ?? 0}</td><td>{s.counters['cmd-reserve'] ?? 0}</td><td>{s.info['batch-calls'] ?? '-'}</td><td>{s.info['batch-ops-mean'] ?? '-'}</td>
            </tr>
          ))}</tbody>
        </table>
      </Section>
    </div>
  );
}
