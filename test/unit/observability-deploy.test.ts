// deploy/grafana and deploy/prometheus use only metrics a sidecar exports
// (src/http/metrics.ts, read from its registry, with the series a histogram
// adds), and the alerts the issue asks for are there.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Metrics } from '../../src/http/metrics.js';
import { ROOT } from '../helpers/redstalk.js';

const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await new Metrics().registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
}

const metricNames = (expr: string) => [...expr.matchAll(/\bredstalk_[a-z0-9_]+/g)].map((m) => m[0]);

interface Rule { alert: string; expr: string }

describe('deploy/ dashboards and alerts', () => {
  it('the Prometheus rules use only exported metrics, and alert on queue age, no workers and Redis out of reach', async () => {
    const known = await exported();
    const rules = (parse(read('deploy/prometheus/redstalk-alerts.yaml')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
    for (const r of rules) {
      expect(metricNames(r.expr).length, r.alert).toBeGreaterThan(0);
      for (const name of metricNames(r.expr)) expect(known.has(name), `${r.alert}: ${name}`).toBe(true);
    }
    const alerts = new Map(rules.map((r) => [r.alert, r.expr]));
    expect(alerts.get('RedstalkQueueAge')).toContain('redstalk_tube_oldest_ready_age_seconds');
    expect(alerts.get('RedstalkNoWorkers')).toContain('redstalk_workers');
    expect(alerts.get('RedstalkRedisUnreachable')).toContain('redstalk_store_up');
  });

  it('the Grafana dashboard is JSON whose every query uses only exported metrics', async () => {
    const known = await exported();
    const dash = JSON.parse(read('deploy/grafana/redstalk-dashboard.json')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    expect(dash.panels.length).toBeGreaterThan(5);
    for (const p of dash.panels) {
      for (const t of p.targets) {
        expect(metricNames(t.expr).length, p.title).toBeGreaterThan(0);
        for (const name of metricNames(t.expr)) expect(known.has(name), `${p.title}: ${name}`).toBe(true);
      }
    }
  });
});
