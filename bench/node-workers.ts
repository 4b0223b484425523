// redstalk-client Workers as a scenario's consumers (drain-worker, mixed-worker):
// each reserves with reserve-many (a prefetch of 16), hands jobs to its handler
// from that buffer and pipelines the deletes, as the client's users run it.
import { Worker, type Job } from '../clients/node/src/index.js';

export const PREFETCH = 16;

export interface Workers {
  /** Graceful: the prefetched and unstarted jobs go back to the server, every delete is answered. */
  stop(): Promise<void>;
}

/**
 * `count` Workers over `ports` (round robin). `took` is told of each job a
 * handler gets (which the Worker then deletes); failed commands go to `error`.
 */
export async function startWorkers(ports: readonly number[], count: number, took: (body: Buffer) => void, error: (what: string) => void): Promise<Workers> {
  const onError = (err: unknown) => error(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
  const handler = (job: Job) => took(job.body);
  const workers = await Promise.all(Array.from({ length: count }, (_, i) =>
    Worker.start(handler, { port: ports[i % ports.length]!, prefetch: PREFETCH, reserveTimeoutSec: 1, onError })));
  return { stop: async () => { await Promise.all(workers.map((w) => w.stop())); } };
}
