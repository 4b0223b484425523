// Builds redstalk's Redis Functions library from lua/: each script of
// lua/jobs/ and lua/rooms/ becomes one function of a single library, loaded
// with FUNCTION LOAD (src/store/redis/functions.ts) and called with FCALL, or
// FCALL_RO for scripts flagged `no-writes`.
//
// A script file is its `#!lua [flags=...]` line, its doc comment, then
// `--- @include "name"` lines (helpers from lua/includes/), its own helpers,
// and, after a `--- @call` line, the code each call runs (without that line,
// the whole file is the call). FUNCTION LOAD runs the library once: the
// includes and the scripts' helpers are made then, once, not per call; the
// call's code is the body of the function's entry, which receives KEYS and
// ARGV. Module-level locals outlive a call, so each file sets what a call
// changes in its `begin_<file name>` function, which the entry calls first
// (includes first, then the script's), and the loader refuses a file whose
// functions change a module-level local its begin does not set. (So what a
// call left, its arguments and the records it read, stays referenced until the
// next call of the library starts: one call's worth of Lua memory.)
//
// Lua 5.1 allows 200 locals and 60 upvalues a function: each include is
// written once per group of scripts that include the same files, in a
// function of its own (run once, at load: its locals count apart from the
// other groups'; its upvalues are the few locals of the library's top), and
// each script's helpers in a block of its own (`do ... end`: a block, not a
// function, so locals end with it and it has no upvalues of its own); an
// entry's upvalues are only the names its call's code uses.
//
// The library's name and its functions' names carry its version, a hash of
// its source: sidecars of two versions (a rolling upgrade) each call their own.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The two script folders: two key contracts (includes/jobs.lua, includes/room.lua). */
export type ScriptFolder = 'jobs' | 'rooms';
export const SCRIPT_FOLDERS: readonly ScriptFolder[] = ['jobs', 'rooms'];

/** lua/ sits next to src/ and next to dist/ in the published package. */
export function luaDir(): string {
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
const SHEBANG = /^#!lua(?: flags=(\S*))?\n/;
const CALL = /^--- @call$/m;
/**
 * `--- @variant allow-oom` in a script also registers it as <name>AllowOom
 * with that flag, for the callers that only send it what frees or moves memory.
 * `--- @variant sections` registers <name>Sections, flagged
 * allow-cross-slot-keys: one call that runs the script once per section, each
 * with its own keys and arguments (the shards a Redis node holds, in one call).
 * It declares no keys: its caller sends it to the node itself. Its arguments:
 * the section count, then per section a probe key ('' for none), the key
 * count, the argument count, the keys, the arguments. Before any section
 * runs, every probe key is looked up: on a Redis Cluster, a key of a slot
 * this node does not serve, or is moving away, makes Redis refuse it, and the
 * call answers TRYSHARDS having run nothing. Its reply: each section's.
 */
const VARIANT = /^--- @variant (allow-oom|sections)$/gm;
/** The error a sections call answers when a section's slot is not (wholly) on the node it was sent to. */
export const TRY_SHARDS = 'TRYSHARDS';

/** includes/jobs.lua's wake-up command, which becomes SPUBLISH on a Redis Cluster. */
const PUBLISH = "local PUBLISH = 'PUBLISH'";

export interface LoadOptions {
  /** Wake-ups over sharded pub/sub (SPUBLISH): on a Redis Cluster, each stays on its shard's node. */
  shardedPubSub?: boolean;
  /** The lua/ folder (tests build a library of another version from a copy). */
  dir?: string;
}

/** One function of the library. */
export interface LibraryFunction {
  folder: ScriptFolder;
  /** The script's name (its file's, or <name>AllowOom / <name>Sections for its variants). */
  name: string;
  /** The function's name in Redis: the library's version and the script's folder and name. */
  fn: string;
  flags: readonly string[];
  /** Flagged `no-writes`: called with FCALL_RO. */
  readOnly: boolean;
}

export interface Library {
  /** `redstalk_<version>`. */
  name: string;
  /** A hash of the library's code. */
  version: string;
  /** What FUNCTION LOAD is given. */
  source: string;
  functions: readonly LibraryFunction[];
}

/** A Lua file of lua/: its name (begin_<name>) and text. */
interface LuaFile { name: string; path: string; text: string }

interface Script {
  folder: ScriptFolder;
  file: LuaFile;
  flags: string[];
  variants: Set<string>;
  /** The includes, expanded in order (each once). */
  includes: LuaFile[];
  /** Made once at load (module level of the script's block). */
  helpers: string;
  /** Run per call: the entry's body. */
  call: string;
}

function readScript(dir: string, folder: ScriptFolder, file: string): Script {
  const text = readFileSync(path.join(dir, folder, file), 'utf8');
  const shebang = SHEBANG.exec(text);
  if (!shebang) throw new Error(`lua/${folder}/${file}: the first line must be #!lua [flags=...]`);
  const flags = shebang[1] ? shebang[1].split(',') : [];
  const variants = new Set([...text.matchAll(VARIANT)].map((m) => m[1]!));
  if (variants.has('allow-oom') && flags.length > 0) throw new Error(`lua/${folder}/${file}: a script with an allow-oom variant must have no flags of its own`);
  const includes: LuaFile[] = [];
  const seen = new Set<string>();
  const include = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const p = path.join('includes', `${name}.lua`);
    const body = readFileSync(path.join(dir, p), 'utf8');
    for (const m of body.matchAll(INCLUDE)) include(m[1]!);
    includes.push({ name, path: p, text: body.replace(INCLUDE, '') });
  };
  for (const m of text.matchAll(INCLUDE)) include(m[1]!);
  const code = text.slice(shebang[0].length).replace(INCLUDE, '');
  const split = CALL.exec(code);
  const helpers = split ? code.slice(0, split.index) : '';
  const call = split ? code.slice(split.index + split[0].length) : code;
  return { folder, file: { name: file.slice(0, -4), path: path.join(folder, file), text: helpers }, flags, variants, includes, helpers, call };
}

function readScripts(dir: string): Script[] {
  return SCRIPT_FOLDERS.flatMap((folder) => readdirSync(path.join(dir, folder))
    .filter((f) => f.endsWith('.lua')).sort().map((f) => readScript(dir, folder, f)));
}

// --- Per-call state -------------------------------------------------------

/**
 * Comments dropped (Lua strings in these files hold no `--`), and a statement
 * continued on the next line (after `,` or `=`) joined into one line.
 */
function plainCode(text: string): string {
  return text.replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '').replace(/--.*$/gm, '').replace(/([,=])[ \t]*\n\s*/g, '$1 ');
}

/** Names declared by `local a, b [= ...]` at column 0 (module level): with or without a value. */
function moduleLocals(code: string): { declared: Set<string>; withoutValue: Set<string> } {
  const declared = new Set<string>();
  const withoutValue = new Set<string>();
  for (const m of code.matchAll(/^local (?!function\b)([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*(=(?!=))?/gm)) {
    for (const name of m[1]!.split(',').map((n) => n.trim())) {
      declared.add(name);
      if (!m[2]) withoutValue.add(name);
    }
  }
  return { declared, withoutValue };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const TARGET = '[A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*|\\[[^\\]\\n]*\\])*';

/**
 * Whether `code` assigns `name`, or one of its fields: `name = `, `a, name = `,
 * `name[k] = `, `name.f = `, or table.insert/remove/sort(name ...). Names a
 * `local` declares are another variable. (A key of a table constructor named
 * like a module-level local counts too: rename one of them.)
 */
function assigns(code: string, name: string): boolean {
  const n = escape(name);
  const undeclared = code.replace(/\blocal\s+(?!function\b)[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*/g, 'local');
  const assignment = new RegExp(`(?:^|[^\\w.:])${n}(?:\\.[A-Za-z_]\\w*|\\[[^\\]\\n]*\\])*\\s*(?:,\\s*${TARGET}\\s*)*=(?!=)`, 'm');
  return assignment.test(undeclared) || new RegExp(`table\\.(?:insert|remove|sort)\\(\\s*${n}\\b`).test(undeclared);
}

/** The body of `local function begin_<name>()` in a file's module-level code, or null. */
function beginBody(code: string, name: string): string | null {
  const m = new RegExp(`^local function begin_${escape(name)}\\(\\)\\n([\\s\\S]*?)^end$`, 'm').exec(code);
  return m ? m[1]! : null;
}

/**
 * Refuses a file whose module-level locals a call may change without its
 * begin_<name> setting them: `others` is code that runs within calls (the
 * scripts' helpers and calls that use this file).
 */
function checkPerCallState(file: LuaFile, others: readonly string[]): void {
  const code = plainCode(file.text);
  const { declared, withoutValue } = moduleLocals(code);
  const begin = beginBody(code, file.name);
  // Inside functions: the indented lines of this file, and the code of the files that use it.
  const inside = [code.split('\n').filter((l) => /^\s/.test(l)).join('\n'), ...others.map(plainCode)].join('\n');
  const beginSets = (name: string) => begin !== null && assigns(begin, name);
  for (const name of declared) {
    const why = withoutValue.has(name) ? 'is declared without a value' : assigns(inside, name) ? 'is changed within calls' : null;
    if (why && !beginSets(name)) {
      throw new Error(`lua/${file.path}: the module-level local '${name}' ${why}, and begin_${file.name}() does not set it: `
        + 'in a function library module-level locals outlive a call, so every call must start by setting it');
    }
  }
}

// --- The library ----------------------------------------------------------

/**
 * The standard globals the scripts use, as locals of the library. In a Redis
 * function every global is looked up in an empty table first, then through its
 * metatable's __index (function_lua.c): several table lookups per use, on
 * every `redis.call`, `tonumber` or `string.sub`. The loading code sees
 * another set of globals (without them), so each entry binds them once a call.
 */
const STANDARD_GLOBALS = ['redis', 'string', 'math', 'table', 'tonumber', 'tostring', 'type', 'pairs', 'ipairs', 'unpack', 'cmsgpack', 'pcall'];
const BIND_GLOBALS = [
  `local ${STANDARD_GLOBALS.join(', ')}`,
  'local function bind_globals()',
  `  local G = _G`,
  `  ${STANDARD_GLOBALS.join(', ')} = ${STANDARD_GLOBALS.map((g) => `G.${g}`).join(', ')}`,
  'end',
];

const indent = (text: string, by: string) => text.replace(/^(?=.)/gm, by);

function entry(script: Script): string {
  const begins = [...script.includes, script.file].filter((f) => beginBody(plainCode(f.text), f.name) !== null).map((f) => `begin_${f.name}()`);
  if (!script.variants.has('sections')) {
    return ['local function entry(keys, args)', '  bind_globals()', '  KEYS, ARGV = keys, args', ...indent(begins.join('\n'), '  ').split('\n'), indent(script.call.trim(), '  '), 'end'].join('\n');
  }
  return `local function call()
${indent(script.call.trim(), '  ')}
end
local function entry(keys, args)
  bind_globals()
  KEYS, ARGV = keys, args
${indent(begins.join('\n'), '  ')}
  return call()
end
local function entry_sections(_, args)
  bind_globals()
  local sections, at = {}, 2
  for s = 1, tonumber(args[1]) do
    local nk, na = tonumber(args[at + 1]), tonumber(args[at + 2])
    local k, a = {}, {}
    for i = 1, nk do k[i] = args[at + 2 + i] end
    for i = 1, na do a[i] = args[at + 2 + nk + i] end
    sections[s] = { probe = args[at], keys = k, args = a }
    at = at + 3 + nk + na
  end
  for s, section in ipairs(sections) do
    if section.probe ~= '' and not pcall(redis.call, 'EXISTS', section.probe) then
      return redis.error_reply('${TRY_SHARDS} section ' .. s .. ': its slot is not served here, or is moving')
    end
  end
  local out = {}
  for s, section in ipairs(sections) do
    KEYS, ARGV = section.keys, section.args
${indent(begins.join('\n'), '    ')}
    out[s] = call()
  end
  return out
end`;
}

/**
 * The command line's bundle carries both libraries, built from lua/ when it was
 * built (tsup.config.ts), so a start neither reads nor checks the Lua files;
 * run from src/, this is undefined and the library is built from lua/.
 */
declare const REDSTALK_PREBUILT_LIBRARIES: { plain: Library; shardedPubSub: Library } | undefined;

/** The library for these options: the bundle's, else built from lua/. */
export function library(options: LoadOptions = {}): Library {
  if (options.dir === undefined && typeof REDSTALK_PREBUILT_LIBRARIES !== 'undefined') {
    return REDSTALK_PREBUILT_LIBRARIES[options.shardedPubSub ? 'shardedPubSub' : 'plain'];
  }
  return buildLibrary(options);
}

/** The library for these options, from lua/. */
export function buildLibrary(options: LoadOptions = {}): Library {
  const dir = options.dir ?? luaDir();
  const scripts = readScripts(dir);
  if (options.shardedPubSub) {
    for (const s of scripts) for (const f of s.includes) f.text = f.text.replace(PUBLISH, "local PUBLISH = 'SPUBLISH'");
  }
  // Scripts that include the same files share one copy of them.
  const groups = new Map<string, Script[]>();
  for (const s of scripts) {
    const key = s.includes.map((f) => f.name).join(',');
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  const blocks: string[] = [];
  const registrations: Array<(version: string) => { fn: LibraryFunction; lua: string }> = [];
  for (const group of groups.values()) {
    const includes = group[0]!.includes;
    for (const f of includes) checkPerCallState(f, group.flatMap((s) => [s.helpers, s.call]));
    const parts = includes.map((f) => `-- lua/${f.path}\n${f.text.trim()}`);
    for (const s of group) {
      checkPerCallState(s.file, [s.call]);
      const names: Array<[string, readonly string[], string]> = [[s.file.name, s.flags, 'entry']];
      if (s.variants.has('allow-oom')) names.push([`${s.file.name}AllowOom`, ['allow-oom'], 'entry']);
      if (s.variants.has('sections')) names.push([`${s.file.name}Sections`, [...s.flags, 'allow-cross-slot-keys'], 'entry_sections']);
      const index = registrations.length;
      for (const [name, flags, callback] of names) {
        registrations.push((version) => {
          const fn = `redstalk_${version}_${s.folder}_${name}`;
          const lua = `register_function{ function_name = '${fn}', callback = ${callback}, flags = {${flags.map((f) => ` '${f}'`).join(',')}${flags.length > 0 ? ' ' : ''}} }`;
          return { fn: { folder: s.folder, name, fn, flags, readOnly: flags.includes('no-writes') }, lua };
        });
      }
      parts.push(`do -- lua/${s.file.path}\n${indent(`${s.helpers.trim()}\n${entry(s)}\n@@register ${index} ${names.length}@@`.trim(), '  ')}\nend`);
    }
    blocks.push(`;(function()\n${indent(parts.join('\n\n'), '  ')}\nend)()`);
  }
  const body = [
    '-- The call\'s keys and arguments, set by each function\'s entry before anything else.',
    'local KEYS, ARGV',
    '-- Taken while the loading code\'s own `redis` is in sight (BIND_GLOBALS hides it).',
    'local register_function = redis.register_function',
    ...BIND_GLOBALS,
    ...blocks,
  ].join('\n\n');
  const version = createHash('sha1').update(body).update(JSON.stringify(registrations.map((r) => r('v').fn))).digest('hex').slice(0, 12);
  const functions: LibraryFunction[] = [];
  const source = body.replace(/^(\s*)@@register (\d+) (\d+)@@$/gm, (_all, pad: string, at: string, count: string) => {
    const lines: string[] = [];
    for (let i = Number(at); i < Number(at) + Number(count); i++) {
      const { fn, lua } = registrations[i]!(version);
      functions.push(fn);
      lines.push(pad + lua);
    }
    return lines.join('\n');
  });
  const name = `redstalk_${version}`;
  return {
    name,
    version,
    source: `#!lua name=${name}\n-- redstalk's functions, built by src/store/redis/scripts.ts from its lua/ folder.\n\n${source}\n`,
    functions,
  };
}
