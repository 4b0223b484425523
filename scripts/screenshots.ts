// npm run screenshots: a picture of each dashboard page in both themes, into
// docs/screenshots/ (linked from the README). Starts its own redis-server and
// sidecar on free loopback ports, fills them with sample tubes, jobs, a room
// and an hour of history, and drives Debian's Chromium (playwright-core).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from '../src/index.js';
import { buildDashboard } from './build-dashboard.js';
import { putBuried, putMany, seedHistory } from '../test/helpers/admin-http.js';
import { launchChromium } from '../test/helpers/browser.js';
import { startRedis } from '../test/helpers/redis.js';
import { Wire } from '../test/helpers/wire.js';

const OUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../docs/screenshots');
const PAGES: Array<[string, string, string | null]> = [
  ['overview', '#/', '.chart canvas'],
  ['tubes', '#/tubes', 'table.tubes a'],
  ['tube', '#/tube/emails', 'table.jobs tr[data-job]'],
  ['job', '#/tube/emails', 'table.jobs tr[data-job]'],
  ['rooms', '#/rooms', 'table td'],
];

async function fill(w: Wire): Promise<void> {
  await putMany(w, 'emails', Array.from({ length: 120 }, (_, i) => JSON.stringify({ to: `user${i}@example.com`, template: i % 3 ? 'welcome' : 'reset' })));
  await putMany(w, 'emails', ['{"to":"later@example.com"}'], { delay: 3600 });
  await putBuried(w, 'emails', ['{"to":"bounced@example.com","error":"550 mailbox unavailable"}']);
  await putMany(w, 'sms', Array.from({ length: 40 }, (_, i) => `+1555000${i}: your code is ${1000 + i}`), { pri: 10 });
  await putMany(w, 'reports', ['<script>alert("a body is shown as text")</script>']);
  // A worker takes a few emails, each a little while: their wait and run times show.
  await w.cmd('watch emails');
  for (let i = 0; i < 8; i++) {
    const id = /^RESERVED (\d+)/.exec(await w.cmd('reserve-with-timeout 0'))![1];
    await new Promise((r) => setTimeout(r, 20 + 15 * i));
    await w.cmd(`delete ${id}`);
  }
  for (let i = 0; i < 30; i++) await putMany(w, `tenant-${String(i).padStart(3, '0')}`, Array.from({ length: i % 7 }, () => 'x'));
  await w.cmd('room-config checkout 2 30 120 30');
  for (const user of ['ann', 'bob', 'cid', 'dee', 'eve']) await w.cmd(`enter checkout ${user}`);
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const [redis, browser] = await Promise.all([startRedis(), launchChromium(), buildDashboard()]);
  const prefix = 'screenshots';
  await seedHistory(redis.url, prefix, 360);
  const server = await createServer({ redisUrl: redis.url, prefix, port: 0, http: '127.0.0.1:0', dashboard: true, httpAdminToken: 'x', logLevel: 'silent' });
  const w = await Wire.connect(server.port, '127.0.0.1', true);
  try {
    await fill(w);
    await new Promise((r) => setTimeout(r, 1200)); // the sidecar publishes its counts (wait and run times) with its next heartbeat
    for (const theme of ['light', 'dark']) {
      for (const [name, hash, ready] of PAGES) {
        const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
        await page.addInitScript((t) => localStorage.setItem('redstalk-theme', t), theme);
        await page.goto(`http://${server.httpAddress}/${hash}`);
        if (ready) await page.waitForSelector(ready);
        if (name === 'job') await page.click('table.jobs tr[data-job] button.link');
        await page.waitForTimeout(300);
        const file = path.join(OUT, `${name}-${theme}.png`);
        await page.screenshot({ path: file });
        process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
        await page.close();
      }
    }
  } finally {
    w.close();
    await browser.close();
    await server.close();
    await redis.stop();
  }
}

await main();
