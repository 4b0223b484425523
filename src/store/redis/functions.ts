// redstalk's Redis Functions library (built by ./scripts.ts) on Redis: loaded
// with FUNCTION LOAD on the primary at start, on every primary of a Redis
// Cluster (functions do not travel between shards), and again whenever a call
// is answered that its function does not exist: Redis restarted without
// persistence, a failover or a MOVED to a node that lacks it, a FUNCTION FLUSH.
// That answer means nothing ran, so the call is sent again once loaded.
// Scripts are called with FCALL, or FCALL_RO when flagged `no-writes`.
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './connect.js';
import { encoded } from './resp.js';
import { library, type Library, type LoadOptions, type ScriptFolder } from './scripts.js';

/** A script call: key count, keys, then arguments. */
export type ScriptFn = (...args: Array<string | number | Buffer>) => Promise<unknown>;

/**
 * One function, with string replies and with Buffer replies (job bodies stay
 * bytes); the RESP head of a call written by hand (src/store/redis/resp.ts):
 * FCALL and the function's name; and `reload`, for such a call answered that
 * the function does not exist.
 */
export interface BoundScript {
  readonly strings: ScriptFn;
  readonly buffers: ScriptFn;
  readonly head: Buffer;
  readonly reload: () => Promise<void>;
}

export type Scripts = Record<ScriptFolder, ReadonlyMap<string, BoundScript>>;

/** Redis' answer to FCALL of a function it does not have (7.0 and Valkey: "ERR Function not found"). */
export function isFunctionMissing(err: unknown): boolean {
  return err instanceof Error && /^ERR Function not found/i.test(err.message);
}

/** Sends per call: the first, and after each of the first loads again (FUNCTION FLUSHes in a row). */
const SENDS = 3;

/**
 * Sends a call, loading the library again and sending it again while Redis
 * answers that the function does not exist (each such answer means nothing ran).
 */
export async function sendLoading<T>(send: () => Promise<T>, reload: () => Promise<void>): Promise<T> {
  for (let sent = 1; ; sent++) {
    try {
      return await send();
    } catch (err) {
      if (!isFunctionMissing(err) || sent >= SENDS) throw err;
      await reload();
    }
  }
}

/** A start that cannot go on: the message says why and what to do. */
export class RedisUnfit extends Error {}

/** The primaries: the one Redis (or Sentinel's primary), or every primary of a Redis Cluster. */
function primaries(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

export class FunctionLibrary {
  readonly library: Library;
  /** One load at a time, however many calls found their function missing. */
  private loading: Promise<void> | null = null;

  constructor(private readonly redis: RedisClient, options: LoadOptions = {}) {
    this.library = library(options);
  }

  /** FUNCTION LOAD on every primary; one that has this version already is fine (its code is the same). */
  load(): Promise<void> {
    this.loading ??= this.loadEverywhere().finally(() => { this.loading = null; });
    return this.loading;
  }

  private async loadEverywhere(): Promise<void> {
    await Promise.all(primaries(this.redis).map(async (node) => {
      try {
        await node.call('FUNCTION', 'LOAD', this.library.source);
      } catch (err) {
        if (err instanceof Error && /already exists/.test(err.message)) return;
        throw err;
      }
    }));
  }

  /**
   * At start: the library loaded everywhere, or a clear refusal. Without a
   * Lua engine (Valkey can be built without one) or with FUNCTION renamed
   * away, nothing of redstalk can run.
   */
  async open(): Promise<void> {
    try {
      await this.load();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const why = /unknown command|engine/i.test(message)
        ? 'this Redis cannot run Lua functions (no Lua engine, or FUNCTION disabled or renamed): redstalk keeps every job with Lua functions, '
          + 'so it needs Redis 7.0+ or Valkey 7.2+ with Lua and the FUNCTION and FCALL commands'
        : 'redstalk could not load its Lua functions';
      throw new RedisUnfit(`${why} (FUNCTION LOAD ${this.library.name} answered: ${message})`);
    }
  }

  /** Each function, bound to the client: FCALL (FCALL_RO when read-only), loading the library again if Redis lacks it. */
  bind(): Scripts {
    const out = { jobs: new Map<string, BoundScript>(), rooms: new Map<string, BoundScript>() };
    const reload = () => this.load();
    for (const f of this.library.functions) {
      const command = f.readOnly ? 'FCALL_RO' : 'FCALL';
      const send = (buffers: boolean, args: Array<string | number | Buffer>) => (buffers
        ? this.redis.callBuffer(command, f.fn, ...args)
        : this.redis.call(command, f.fn, ...args)) as Promise<unknown>;
      const call = (buffers: boolean): ScriptFn => (...args) => sendLoading(() => send(buffers, args), reload);
      out[f.folder].set(f.name, { strings: call(false), buffers: call(true), head: encoded(command, f.fn), reload });
    }
    return out;
  }
}

/**
 * Jobs are never to be evicted: with any maxmemory-policy but noeviction,
 * Redis out of memory would delete jobs (acknowledged, then lost). Read from
 * INFO memory, since CONFIG may be renamed or denied.
 */
export async function checkEvictionPolicy(redis: RedisClient): Promise<void> {
  await Promise.all(primaries(redis).map(async (node) => {
    const info = (await node.info('memory')) as string;
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy !== undefined && policy !== 'noeviction') {
      const where = redis instanceof Cluster ? ` (node ${node.options.host}:${node.options.port})` : '';
      throw new RedisUnfit(`Redis has maxmemory-policy ${policy}${where}: when full it would evict keys, and jobs with them. `
        + 'Set maxmemory-policy noeviction (redstalk then refuses puts while Redis is full, and jobs are kept)');
    }
  }));
}

/** The functions bound to a client, the library loaded by their first call (tests, benchmarks). */
export function bindScripts(redis: RedisClient, options: LoadOptions = {}): Scripts {
  return new FunctionLibrary(redis, options).bind();
}
