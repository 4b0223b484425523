// The promotion timer: moves due delayed jobs and expired reservations to
// ready. It sleeps until the soonest due time it knows of (from the store, or
// from a command of this sidecar), and at most MAX_SLEEP_MS, which bounds how
// late a dead sidecar's expired reservations are noticed.
import type { Logger } from 'pino';
import type { JobStore } from '../store/job-store.js';

const MAX_SLEEP_MS = 1000;
const CHUNK = 1000;

export class Promoter {
  private timer: NodeJS.Timeout | null = null;
  private at = Infinity;
  private running = false;
  private stopped = false;

  constructor(private readonly jobs: JobStore, private readonly log: Logger) {}

  /** Makes sure the timer runs within ms. */
  arm(ms: number): void {
    if (this.stopped) return;
    const delay = Math.min(ms, MAX_SLEEP_MS); // it never sleeps longer anyway
    const at = Date.now() + delay;
    if (this.running || at >= this.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(this.run, delay);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private readonly run = async (): Promise<void> => {
    this.timer = null;
    this.at = Infinity;
    this.running = true;
    let next = MAX_SLEEP_MS;
    try {
      const { moved, nextDueMs } = await this.jobs.promoteDue(CHUNK);
      // Due now but nothing moved: our estimate of Redis' clock was off; retry soon, not in a tight loop.
      if (nextDueMs >= 0) next = Math.min(nextDueMs === 0 && moved === 0 ? 10 : nextDueMs, MAX_SLEEP_MS);
    } catch (err) {
      this.log.warn({ err }, 'promotion failed');
    }
    this.running = false;
    this.arm(next);
  };
}
