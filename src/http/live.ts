// The live feed of the dashboard (GET /api/events): server-sent events, one
// `live` event whenever what a client looks at changed. One reading of the
// store every interval serves every client, whatever their number (20 open
// dashboards cost what one does), and none is made while nobody listens;
// none is made per job either.
import type http from 'node:http';
import type { AdminApi } from '../admin/api.js';

/** The feed's route, as ADMIN_ROUTES names routes (protocol/admin-api.yaml documents it). */
export const LIVE_ROUTE = 'GET /api/events';

/** How often the store is read while clients listen (a put shows within this and a render). */
export const LIVE_INTERVAL_MS = 250;

interface Client { res: http.ServerResponse; tube: string | null; last: string }

export class LiveFeed {
  private readonly clients = new Set<Client>();
  private timer: NodeJS.Timeout | null = null;
  private reading = false;

  constructor(private readonly api: AdminApi, private readonly onError: (err: unknown) => void, private readonly intervalMs = LIVE_INTERVAL_MS) {}

  /** Answers GET /api/events[?tube=name] (false for any other path). */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/events' || req.method !== 'GET') return false;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    res.write('retry: 1000\n\n');
    const client: Client = { res, tube: url.searchParams.get('tube'), last: '' };
    this.clients.add(client);
    res.on('close', () => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.stop();
    });
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.intervalMs);
      this.timer.unref();
    }
    void this.tick();
    return true;
  }

  get listening(): number { return this.clients.size; }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One reading for every client; each gets it only when its part changed. */
  private async tick(): Promise<void> {
    if (this.reading || this.clients.size === 0) return;
    this.reading = true;
    try {
      const tubes = [...new Set([...this.clients].flatMap((c) => (c.tube === null ? [] : [c.tube])))];
      // The sidecars the overview found are those whose wait and run counts add up (no second look).
      const [overview, counted] = await Promise.all([this.api.overview(), this.api.counts(tubes)]);
      const latencies = await this.api.latencies(tubes, overview.sidecars.map((s) => s.id));
      const at = Date.now();
      for (const c of this.clients) {
        const view: Record<string, unknown> = { ...overview };
        if (c.tube !== null) {
          const t = counted.get(c.tube);
          view.tube = t ? { ...t, latency: latencies.get(c.tube) } : null;
        }
        const text = JSON.stringify(view);
        if (text === c.last) continue;
        c.last = text;
        c.res.write(`event: live\ndata: ${JSON.stringify({ at, ...view })}\n\n`);
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.reading = false;
    }
  }
}

