// npm run bench:dashboards [-- --duration S --rounds N --dashboards N]: jobs/s
// of one redstalk sidecar (mixed load: 10 producers, 10 consumers,
// request/response, put -> reserve -> delete) with no dashboard open and with
// 20 open (each one server-sent event stream, /api/events, as a dashboard
// page holds), rounds alternating on the same server so that drift in the
// machine's load falls on both alike. The live feed reads the store once per
// interval whatever the number of listeners, and nothing per job: the two
// figures should be within noise of each other.
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { buildDashboard } from '../scripts/build-dashboard.js';

const { values } = parseArgs({ options: { duration: { type: 'string' }, rounds: { type: 'string' }, dashboards: { type: 'string' } } });
const DURATION_MS = Number(values.duration ?? 5) * 1000;
const ROUNDS = Number(values.rounds ?? 3);
const DASHBOARDS = Number(values.dashboards ?? 20);
const PRODUCERS = 10;
const CONSUMERS = 10;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address() as { port: number }; s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

/** `n` open dashboards: event streams read and dropped; how many events they got. */
function openDashboards(http: string, n: number): { close(): void; events(): number } {
  const controller = new AbortController();
  let events = 0;
  for (let i = 0; i < n; i++) {
    void fetch(`http://${http}/api/events${i % 2 ? '?tube=default' : ''}`, { signal: controller.signal }).then(async (res) => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        events += decoder.decode(value).split('event: live').length - 1;
      }
    }).catch(() => {});
  }
  return { close: () => controller.abort(), events: () => events };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  await buildDashboard();
  const http = `127.0.0.1:${await freePort()}`;
  // Read by bench/servers.ts when it loads: the sidecar serves the dashboard and its feed.
  process.env.REDSTALK_BENCH_FLAGS = `${process.env.REDSTALK_BENCH_FLAGS ?? ''} --http ${http} --dashboard`;
  const [{ startTarget, stopEverything }, { runPhase }, { Ledger }] = await Promise.all([import('./servers.js'), import('./load.js'), import('./ledger.js')]);
  const server = await startTarget('redstalk', { persistence: 'memory' });
  const port = server.ports[0]!;
  const figures: Record<'0' | 'n', number[]> = { '0': [], n: [] };
  let events = 0;
  try {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const withDashboards = round % 2 === 1;
      const open = withDashboards ? openDashboards(http, DASHBOARDS) : null;
      const r = await runPhase({
        label: `${withDashboards ? DASHBOARDS : 0} dashboards`, payload: 100, ledger: new Ledger(), warmupMs: 1000, durationMs: DURATION_MS, depth: 1,
        producers: Array.from({ length: PRODUCERS }, (_, index) => ({ port, index, pri: 100, limit: Infinity })),
        consumers: Array.from({ length: CONSUMERS }, () => ({ port, untilEmpty: false })), maxWaiting: 2 * CONSUMERS,
      });
      open?.close();
      events += open?.events() ?? 0;
      const jobsPerSec = (r.windowDeletes / r.windowMs) * 1000;
      figures[withDashboards ? 'n' : '0'].push(jobsPerSec);
      process.stderr.write(`round ${round + 1}: ${withDashboards ? DASHBOARDS : 0} dashboards: ${jobsPerSec.toFixed(0)} jobs/s\n`);
    }
  } finally {
    await server.stop();
    await stopEverything();
  }
  const none = median(figures['0']);
  const some = median(figures.n);
  process.stdout.write(`dashboards: ${PRODUCERS} producers + ${CONSUMERS} consumers, request/response, ${DURATION_MS / 1000} s x ${ROUNDS} rounds each, medians\n`);
  process.stdout.write(`  0 dashboards:  ${none.toFixed(0)} jobs/s  (${figures['0'].map((x) => x.toFixed(0)).join(', ')})\n`);
  process.stdout.write(`  ${DASHBOARDS} dashboards: ${some.toFixed(0)} jobs/s  (${figures.n.map((x) => x.toFixed(0)).join(', ')}); ${events} live events received\n`);
  process.stdout.write(`  ratio: ${(some / none).toFixed(3)} (${(((some - none) / none) * 100).toFixed(1)}%)\n`);
}

await main();
