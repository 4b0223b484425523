// Public API: start a redstalk server in-process.
import type { Logger } from 'pino';
import { createLogger } from './log.js';
import { openSidecar, type OpenConfig } from './open.js';
import type { ServerStats } from './protocol/generated.js';
import { LIMITS } from './protocol/spec.js';

export type { ServerStats };

export interface ServerOptions extends Omit<OpenConfig, 'listen'> {
  host: string;
  logLevel: string;
  /** A pino logger to log to (else one is made at logLevel, on stdout). */
  logger?: Logger;
}

export interface RedstalkServer {
  /** Where it listens: `host:port`, or `unix:PATH`. */
  readonly address: string;
  /** The TCP port (0 for a UNIX socket). */
  readonly port: number;
  /** The same values `stats` answers, typed. */
  stats(): Promise<ServerStats>;
  /** beanstalkd's drain mode (SIGUSR1): new puts answer DRAINING. */
  drain(): void;
  /** Stops accepting, answers what is in flight, hands reservations back, disconnects. */
  close(): Promise<void>;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 11300,
  prefix: 'redstalk',
  maxJobSize: LIMITS.defaultMaxJobSize,
  heartbeatMs: 1000,
  redisTimeoutMs: 2000,
  shutdownGraceMs: 2000,
  logLevel: 'info',
  // Chosen from `npm run bench` (bench/README.md): see there for the measurements.
  batchOps: 512,
  batchBytes: 1 << 20,
  batchInFlight: 1,
  // Waiting rooms without room-config: a waiting page polls within 30 s, an app
  // checks its participants in within 2 minutes, a dropped socket has 30 s to return.
  roomDefaults: { capacity: 100, checkinTimeout: 30, participantTimeout: 120, grace: 30 },
};

export async function createServer(options: Partial<ServerOptions> & { redisUrl: string }): Promise<RedstalkServer> {
  const opts = { ...DEFAULTS, ...options };
  const log = opts.logger ?? createLogger(opts.logLevel);
  const { sidecar } = await openSidecar({ ...opts, listen: opts.host }, log);
  return {
    get address() { return sidecar.address; },
    get port() { return sidecar.port; },
    stats: () => sidecar.stats.server(),
    drain: () => sidecar.drain(),
    close: () => sidecar.close(),
  };
}
