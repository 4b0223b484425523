// The dashboard driven in Debian's Chromium against a real sidecar and Redis:
// what the protocol puts shows up, a search finds one job among 10,000, a
// kick from the page frees a buried job for a worker, a read-only sidecar
// refuses an action at the server, a hostile body stays text, and a push
// arrives within a second of a put. Skipped only when Chromium is absent.
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { putBuried, putMany, seedHistory } from '../helpers/admin-http.js';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, uniquePrefix, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool, type Wire } from '../helpers/wire.js';

const TOKEN = 'e2e-admin-token';

describe.skipIf(!hasChromium)('the dashboard in Chromium', () => {
  let browser: Browser;
  let redis: TestRedis;
  const sidecars: TestSidecar[] = [];
  const wires = new WirePool();
  let page: Page;

  beforeAll(async () => {
    [browser, redis] = await Promise.all([launchChromium(), startRedis(), buildDashboard()]);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await redis?.stop();
  });
  afterEach(async () => {
    await page?.close();
    wires.closeAll();
    for (const s of sidecars.splice(0)) await s.stop();
  });

  /** A sidecar with the dashboard (and the admin token unless read-only), a protocol connection, and a page on it. */
  async function open(readOnly = false, prefix = uniquePrefix()): Promise<{ w: Wire; http: string }> {
    const sidecar = await startRedstalk({ redisUrl: redis.url, prefix, http: '127.0.0.1:0', dashboard: true, ...(readOnly ? {} : { httpAdminToken: TOKEN }) });
    sidecars.push(sidecar);
    page = await browser.newPage();
    page.on('pageerror', (err) => { throw err; });
    return { w: await wires.dial(sidecar.port, true), http: sidecar.server.httpAddress! };
  }

  const goto = (http: string, hash: string) => page.goto(`http://${http}/${hash}`);
  const figure = (label: string) => page.locator('.figure', { has: page.locator('.label', { hasText: new RegExp(`^${label}$`) }) }).locator('.value');

  it('shows jobs put over the protocol: in the overview, the tubes and the tube', async () => {
    const { w, http } = await open();
    await putMany(w, 'emails', ['hello', 'world']);
    await putMany(w, 'sms', ['hi'], { delay: 600 });
    await goto(http, '#/');
    await expect.poll(() => figure('ready').first().textContent()).toBe('2');
    expect(await figure('delayed').first().textContent()).toBe('1');
    await page.click('text=tubes');
    await page.waitForSelector('table.tubes a:text("emails")');
    await page.click('table.tubes a:text("emails")');
    await page.waitForSelector('table.jobs td.preview:text("world")');
    expect(await page.locator('table.jobs tbody tr').count()).toBe(2);
  });

  it('finds one job among 10,000 by text in its body', async () => {
    const { w, http } = await open();
    const bodies = Array.from({ length: 10_000 }, (_, i) => `invoice ${i} for customer ${i % 113}`);
    bodies[6789] = 'invoice 6789 for customer zebra-unique';
    const ids = await putMany(w, 'invoices', bodies);
    await goto(http, '#/tube/invoices');
    await page.waitForSelector('table.jobs tbody tr');
    await page.fill('input[aria-label="search jobs"]', 'zebra-unique');
    await page.click('button:text("search")');
    await page.waitForSelector(`tr[data-job="${ids[6789]}"]`);
    expect(await page.locator('table.jobs tbody tr').count()).toBe(1);
    await page.click(`tr[data-job="${ids[6789]}"] button.link`);
    expect(await page.locator('pre[data-body]').textContent()).toBe('invoice 6789 for customer zebra-unique');
  }, 60_000);

  it('kicks a buried job from the page, and a worker then reserves it over the protocol', async () => {
    const { w, http } = await open();
    const [id] = await putBuried(w, 'failed', ['retry me']);
    await goto(http, '#/tube/failed');
    await page.fill('input[aria-label="admin token"]', TOKEN);
    await page.click('button[role="tab"]:text("buried")');
    await page.click(`tr[data-job="${id}"] button:text("kick")`);
    await page.waitForSelector('button[role="tab"]:text("buried (0)")');
    expect(await w.cmd('watch failed')).toBe('WATCHING 2');
    expect((await w.cmd('reserve-with-timeout 0')).split('\n')[0]).toBe(`RESERVED ${id} 8`);
    // Its wait (since the kick) and run (until this delete) show on the tube's page.
    expect(await w.cmd(`delete ${id}`)).toBe('DELETED');
    // (The sidecar publishes its counts with its next heartbeat; the page gets them pushed.)
    await expect.poll(() => figure('run p50 / p99').textContent(), { timeout: 5000 }).toMatch(/^[\d.]+ ms \/ [\d.]+ ms$/);
    expect(await figure('wait p50 / p99').textContent()).toMatch(/^[\d.]+ ms \/ [\d.]+ ms$/);
  });

  it('refuses an action at the server when the sidecar is read-only, whatever the page sends', async () => {
    const { w, http } = await open(true);
    const [id] = await putBuried(w, 'locked', ['stay buried']);
    await goto(http, '#/tube/locked');
    await page.fill('input[aria-label="admin token"]', 'any token at all');
    await page.click('button[role="tab"]:text("buried")');
    await page.click(`tr[data-job="${id}"] button:text("kick")`);
    await page.waitForSelector('.refused:has-text("read-only")');
    expect(await w.cmd(`stats-job ${id}`)).toMatch(/state: buried/);
  });

  it('shows a hostile body as text: nothing in it runs or becomes markup', async () => {
    const { w, http } = await open();
    const hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b>';
    const [id] = await putMany(w, 'hostile', [hostile]);
    await goto(http, '#/tube/hostile');
    await page.waitForSelector(`tr[data-job="${id}"]`);
    expect(await page.locator(`tr[data-job="${id}"] td.preview`).textContent()).toBe(hostile);
    await page.click(`tr[data-job="${id}"] button.link`);
    expect(await page.locator('pre[data-body]').textContent()).toBe(hostile);
    expect(await page.locator('pre[data-body] b, pre[data-body] img, pre[data-body] script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('gets a pushed update within a second of a put', async () => {
    const { w, http } = await open();
    await putMany(w, 'live', ['one']);
    await goto(http, '#/tube/live');
    await page.waitForSelector('table.jobs tr[data-job]');
    await expect.poll(() => figure('ready').textContent()).toBe('1');
    const t0 = Date.now();
    await putMany(w, 'live', ['two']);
    await page.waitForFunction(() => document.querySelectorAll('table.jobs tr[data-job]').length === 2, undefined, { timeout: 1000 });
    expect(await figure('ready').textContent()).toBe('2');
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('charts the last hour from the history in Redis, in both themes', async () => {
    const prefix = uniquePrefix();
    await seedHistory(redis.url, prefix, 30);
    const { http } = await open(false, prefix);
    await goto(http, '#/');
    await page.waitForSelector('.chart canvas');
    expect(await page.locator('.chart canvas').count()).toBe(5);
    expect(await page.locator('.chart .u-legend').first().textContent()).toContain('put');
    expect(await page.locator('.chart', { hasText: 'wait: ready to reserved' }).locator('.u-legend').textContent()).toContain('emails p99');
    const before = await page.evaluate(() => document.documentElement.dataset.theme);
    await page.click('button[aria-label="theme"]');
    await page.waitForFunction((was) => document.documentElement.dataset.theme !== was, before);
    expect(await page.locator('.chart canvas').count()).toBe(5);
  });
});
