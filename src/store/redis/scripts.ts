// Loads lua/jobs/*.lua and lua/rooms/*.lua once, expands `--- @include "name"`
// lines from lua/includes/, and registers each script once with ioredis'
// defineCommand (EVALSHA, falling back to EVAL on NOSCRIPT, e.g. after a
// Redis restart). Scripts flagged `no-writes` are registered read-only.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { encoded } from './resp.js';

/** A script call: key count, keys, then arguments. */
export type ScriptFn = (...args: Array<string | number | Buffer>) => Promise<unknown>;

/**
 * One script, with string replies and with Buffer replies (job bodies stay
 * bytes); and the RESP heads of a call written by hand (src/store/redis/resp.ts):
 * EVALSHA and its sha, or EVAL and its source (when Redis lacks the script).
 */
export interface BoundScript { readonly strings: ScriptFn; readonly buffers: ScriptFn; readonly heads: ScriptHeads }
export interface ScriptHeads { readonly evalsha: Buffer; readonly eval: Buffer }

/** The two script folders: two key contracts (includes/jobs.lua, includes/room.lua). */
export type ScriptFolder = 'jobs' | 'rooms';

export type Scripts = Record<ScriptFolder, ReadonlyMap<string, BoundScript>>;

/** lua/ sits next to src/ and next to dist/ in the published package. */
function luaDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.resolve(here, '../../../lua'), path.resolve(here, '../lua')]) {
    try {
      readdirSync(path.join(candidate, 'includes'));
      return candidate;
    } catch { /* try the next layout */ }
  }
  throw new Error('redstalk: cannot find the lua/ folder');
}

const INCLUDE = /^--- @include "([a-zA-Z0-9_-]+)"$/gm;

function expandIncludes(source: string, dir: string, seen = new Set<string>()): string {
  return source.replace(INCLUDE, (_all, name: string) => {
    if (seen.has(name)) return ''; // each include once per script
    seen.add(name);
    return expandIncludes(readFileSync(path.join(dir, 'includes', `${name}.lua`), 'utf8'), dir, seen);
  });
}

export interface ScriptSource { name: string; lua: string; readOnly: boolean }

/**
 * `--- @variant allow-oom` in a script also registers it as <name>AllowOom
 * with that flag, for the callers that only send it what frees or moves memory.
 */
const VARIANT = /^--- @variant allow-oom$/m;

/** includes/jobs.lua's wake-up command, which becomes SPUBLISH on a Redis Cluster. */
const PUBLISH = "local PUBLISH = 'PUBLISH'";

export interface LoadOptions {
  /** Wake-ups over sharded pub/sub (SPUBLISH): on a Redis Cluster, each stays on its shard's node. */
  shardedPubSub?: boolean;
}

/** The scripts of one folder, includes expanded. */
export function loadScripts(folder: ScriptFolder, dir = luaDir(), options: LoadOptions = {}): ScriptSource[] {
  return readdirSync(path.join(dir, folder)).filter((f) => f.endsWith('.lua')).sort().flatMap((file) => {
    let lua = expandIncludes(readFileSync(path.join(dir, folder, file), 'utf8'), dir);
    if (options.shardedPubSub) lua = lua.replace(PUBLISH, "local PUBLISH = 'SPUBLISH'");
    const name = file.slice(0, -4);
    const script = { name, lua, readOnly: /^#!lua\b.*\bflags=\S*no-writes/.test(lua) };
    if (!VARIANT.test(lua)) return [script];
    if (!lua.startsWith('#!lua\n')) throw new Error(`${file}: a script with an allow-oom variant must have no flags of its own`);
    return [script, { name: `${name}AllowOom`, lua: lua.replace(/^#!lua\n/, '#!lua flags=allow-oom\n'), readOnly: false }];
  });
}

/** Registers every script on the client, once; `rs_` keeps "touch" from shadowing Redis' own TOUCH. */
export function bindScripts(redis: Redis | Cluster, options: LoadOptions = {}): Scripts {
  const methods = redis as unknown as Record<string, ScriptFn>;
  const bind = (folder: ScriptFolder) => new Map(loadScripts(folder, luaDir(), options).map(({ name, lua, readOnly }) => {
    const method = `rs_${folder}_${name}`;
    redis.defineCommand(method, { lua, readOnly });
    const heads = { evalsha: encoded('EVALSHA', createHash('sha1').update(lua).digest('hex')), eval: encoded('EVAL', lua) };
    return [name, { strings: methods[method]!.bind(redis), buffers: methods[`${method}Buffer`]!.bind(redis), heads }] as const;
  }));
  return { jobs: bind('jobs'), rooms: bind('rooms') };
}
