// Public API: start a redstalk server in-process.
import type { Logger } from 'pino';
import { checkConfig, ConfigError, type Sources } from './config/check.js';
import type { Config } from './config/settings.js';
import { createLogger } from './log.js';
import { openSidecar } from './open.js';
import type { ServerStats } from './protocol/generated.js';

export type { Config, ServerStats };
export { ConfigError };
export { DEFAULTS } from './config/settings.js';

/** Any settings (the rest take their defaults; the same checks as the command line), a Redis URL, and optionally a pino logger. */
export type ServerOptions = Partial<Config> & {
  redisUrl: string;
  /** A pino logger to log to (else one is made at logLevel, on stdout). */
  logger?: Logger;
};

export interface RedstalkServer {
  /** Where it listens: `host:port`, or `unix:PATH`. */
  readonly address: string;
  /** The TCP port (0 for a UNIX socket). */
  readonly port: number;
  /** Where /healthz, /readyz and /metrics are served (`http` setting), or null. */
  readonly httpAddress: string | null;
  /** The same values `stats` answers, typed (plus redstalk's own counters). */
  stats(): Promise<ServerStats>;
  /** beanstalkd's drain mode (SIGUSR1): new puts answer DRAINING. */
  drain(): void;
  /** Stops accepting, answers what is in flight, hands reservations back, disconnects. */
  close(): Promise<void>;
}

export async function createServer(options: ServerOptions): Promise<RedstalkServer> {
  const { logger, ...values } = options;
  const sources = Object.fromEntries(Object.keys(values).map((k) => [k, 'api'])) as Sources;
  const { config, warnings } = checkConfig(values, sources);
  if (!config.redisUrl) throw new ConfigError('redisUrl is required (the embedded redis-server is the command line\'s)');
  const log = logger ?? createLogger(config.logLevel);
  for (const w of warnings) log.warn(w);
  const { sidecar, http } = await openSidecar(config, log);
  return {
    get address() { return sidecar.address; },
    get port() { return sidecar.port; },
    httpAddress: http?.address ?? null,
    stats: () => sidecar.stats.server(),
    drain: () => sidecar.drain(),
    close: () => sidecar.close(),
  };
}
