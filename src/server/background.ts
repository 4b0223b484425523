// Work that no client waits for (unreferencing a tube, heartbeats, giving
// jobs back): a failure is logged, never thrown, and a graceful stop can
// wait for all of it.
import type { Logger } from 'pino';

export class Background {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly log: Logger) {}

  track(p: Promise<unknown>, what: string): void {
    const tracked = p.catch((err: unknown) => this.log.warn({ err }, `${what} failed`));
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  /** Settles once nothing tracked is pending (including what finishing work starts). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
