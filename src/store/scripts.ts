// Loads lua/*.lua once at start: expands `--- @include "name"` lines from
// lua/includes/, and registers each script with ioredis' defineCommand, which
// calls EVALSHA and falls back to EVAL on NOSCRIPT (e.g. after a Redis restart).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';

/** lua/ sits next to src/ and next to dist/ in the published package. */
function luaDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.resolve(here, '../../lua'), path.resolve(here, '../lua')]) {
    try {
      readdirSync(candidate);
      return candidate;
    } catch { /* try the next layout */ }
  }
  throw new Error('redstalk: cannot find the lua/ folder');
}

const INCLUDE = /^--- @include "([a-zA-Z0-9_-]+)"$/m;

export function expandIncludes(source: string, dir: string, seen = new Set<string>()): string {
  return source.replace(new RegExp(INCLUDE.source, 'gm'), (_all, name: string) => {
    if (seen.has(name)) return ''; // each include once per script
    seen.add(name);
    return expandIncludes(readFileSync(path.join(dir, 'includes', `${name}.lua`), 'utf8'), dir, seen);
  });
}

export function loadScripts(dir = luaDir()): Map<string, string> {
  const scripts = new Map<string, string>();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.lua')) continue;
    scripts.set(file.slice(0, -4), expandIncludes(readFileSync(path.join(dir, file), 'utf8'), dir));
  }
  return scripts;
}

/** ioredis method name of a script ("touch" would shadow Redis' own TOUCH). */
export function scriptMethod(name: string): string {
  return `rs_${name}`;
}

export function defineScripts(redis: Redis | Cluster, scripts: Map<string, string>): void {
  for (const [name, lua] of scripts) redis.defineCommand(scriptMethod(name), { lua });
}
