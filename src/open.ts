// The composition root: a Sidecar over the Redis backend, started. The public
// API (index.ts) and the tests that look inside a sidecar both open one here.
import type { Logger } from 'pino';
import type { Config } from './config/settings.js';
import type { Listener } from './server/listener.js';
import { Sidecar } from './server/sidecar.js';
import { RedisBackend } from './store/redis/backend.js';

export interface OpenSidecar { sidecar: Sidecar; backend: RedisBackend }

/** `listener`: one the caller opened early (the command line listens first); else the sidecar opens its own. */
export async function openSidecar(config: Config, log: Logger, listener?: Listener): Promise<OpenSidecar> {
  const backend = new RedisBackend({
    url: config.redisUrl, prefix: config.prefix, timeoutMs: config.redisTimeoutMs, log,
    roomDefaults: {
      capacity: config.roomCapacity, checkinTimeout: config.roomCheckinTimeout,
      participantTimeout: config.roomParticipantTimeout, grace: config.roomGrace,
    },
  });
  const sidecar = new Sidecar(config, backend, log);
  try {
    await sidecar.start(listener);
  } catch (err) {
    await backend.close();
    throw err;
  }
  return { sidecar, backend };
}
