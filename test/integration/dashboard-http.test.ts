// The dashboard's server side, without a browser: its static files only with
// --dashboard, under a strict content security policy; the live feed pushes
// a put within a second, only changes, and a tube's counts to who asks.
import { beforeAll, afterEach, describe, expect, it } from 'vitest';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { LiveEvents, putMany } from '../helpers/admin-http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool } from '../helpers/wire.js';

describe('the dashboard endpoint', () => {
  let redis: TestRedis | undefined;
  let sidecar: TestSidecar | undefined;
  const wires = new WirePool();
  const feeds: LiveEvents[] = [];
  beforeAll(() => buildDashboard(), 60_000);
  afterEach(async () => {
    for (const f of feeds.splice(0)) f.close();
    wires.closeAll();
    await sidecar?.stop();
    await redis?.stop();
    redis = sidecar = undefined;
  });

  async function start(dashboard: boolean) {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url, http: '127.0.0.1:0', dashboard });
    return { http: sidecar.server.httpAddress!, w: await wires.dial(sidecar.port, true) };
  }

  it('serves the page and its assets only with --dashboard, under a content security policy of its own origin', async () => {
    const { http } = await start(true);
    const page = await fetch(`http://${http}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="assets/app.js">');
    expect(html).not.toMatch(/https?:\/\//); // nothing from a CDN
    const js = await fetch(`http://${http}/assets/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await js.text()).length).toBeGreaterThan(1000);
    expect((await fetch(`http://${http}/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`http://${http}/`, { method: 'POST' })).status).toBe(405);
  });

  it('serves no page without --dashboard (the API and probes stay)', async () => {
    const { http } = await start(false);
    expect((await fetch(`http://${http}/`)).status).toBe(404);
    expect((await fetch(`http://${http}/api/overview`)).status).toBe(200);
  });

  it('pushes a put within a second, only what changed, and the counts of the tube asked for', async () => {
    const { http, w } = await start(false);
    const all = await LiveEvents.open(http);
    const tube = await LiveEvents.open(http, 'pushed');
    feeds.push(all, tube);
    // Settled once the sidecar's snapshot counts the test's connection.
    const settled = await all.until((e) => e.sidecars[0]?.counters['current-connections'] === '1');
    expect(settled.totals).toMatchObject({ ready: 0 });
    expect(settled.sidecars).toHaveLength(1);
    expect((await tube.until(() => true)).tube).toBeNull();
    const seen = all.events.length;
    await new Promise((r) => setTimeout(r, 600));
    expect(all.events, JSON.stringify(all.events)).toHaveLength(seen); // nothing changed: nothing sent
    const t0 = Date.now();
    await putMany(w, 'pushed', ['x']);
    const pushed = await all.until((e) => e.totals.ready === 1, seen, 1000);
    expect(pushed.at - t0).toBeLessThan(1000);
    expect((await tube.until((e) => e.tube !== null, 0, 1000)).tube).toMatchObject({ name: 'pushed', ready: 1 });
  });
});
