// Public API: start a redstalk server in-process.
import { createLogger } from './log.js';
import { LIMITS } from './protocol/spec.js';
import { Sidecar, type SidecarOptions } from './server/sidecar.js';

export interface ServerOptions extends SidecarOptions {
  logLevel: string;
}

export interface RedstalkServer {
  readonly port: number;
  readonly sidecar: Sidecar;
  /** beanstalkd's drain mode (SIGUSR1). */
  drain(): void;
  close(): Promise<void>;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 11300,
  prefix: 'redstalk',
  maxJobSize: LIMITS.defaultMaxJobSize,
  heartbeatMs: 1000,
  redisTimeoutMs: 2000,
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
  const opts: ServerOptions = { ...DEFAULTS, ...options };
  const log = createLogger(opts.logLevel);
  const sidecar = new Sidecar(opts, log);
  await sidecar.start();
  sidecar.startBackground();
  return {
    get port() { return sidecar.port; },
    sidecar,
    drain: () => sidecar.drain(),
    close: () => sidecar.close(),
  };
}
