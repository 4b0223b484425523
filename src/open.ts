// The composition root: a Sidecar over the Redis backend, started. The public
// API (index.ts) and the tests that look inside a sidecar both open one here.
import type { Logger } from 'pino';
import { Sidecar, type SidecarConfig } from './server/sidecar.js';
import { RedisBackend } from './store/redis/backend.js';
import type { RoomSettings } from './store/room-store.js';

export interface OpenConfig extends SidecarConfig {
  redisUrl: string;
  prefix: string;
  /** Upper bound for any Redis command, so a dead Redis answers INTERNAL_ERROR quickly. */
  redisTimeoutMs: number;
  roomDefaults: RoomSettings;
}

export interface OpenSidecar { sidecar: Sidecar; backend: RedisBackend }

export async function openSidecar(config: OpenConfig, log: Logger): Promise<OpenSidecar> {
  const backend = new RedisBackend({
    url: config.redisUrl, prefix: config.prefix, timeoutMs: config.redisTimeoutMs, roomDefaults: config.roomDefaults, log,
  });
  const sidecar = new Sidecar(config, backend, log);
  try {
    await sidecar.start();
  } catch (err) {
    await backend.close();
    throw err;
  }
  return { sidecar, backend };
}
