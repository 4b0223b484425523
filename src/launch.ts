#!/usr/bin/env node
// dist/cli.js: runs the command line's one-file bundle (dist/redstalk.cjs)
// through a V8 code cache. Node 20 keeps no compile cache of its own (that
// came with Node 22's module.enableCompileCache), and compiling the bundle's
// megabyte on every start was the largest part of a start after Node's own
// (bench/startup.ts). The cache is written once, a second after a start, by
// the first start that found none (or found it rejected: another Node or V8
// flags); it sits beside the bundle, or in the temp folder when that is not
// writable. REDSTALK_COMPILE_CACHE=0 turns it off.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const dir = path.dirname(fileURLToPath(import.meta.url));
const bundle = path.join(dir, 'redstalk.cjs');
// ASCII (tsup.config.ts): latin1 makes its string without decoding.
const source = readFileSync(bundle, 'latin1');
const useCache = process.env.REDSTALK_COMPILE_CACHE !== '0';

/** Where a cache of this bundle for this Node would be: beside it, or in the temp folder. */
function cacheFiles(): string[] {
  const st = statSync(bundle);
  // The bundle's size and time: V8 itself checks only the source's length.
  const name = `redstalk-${process.version}-${process.arch}-${st.size}-${Math.trunc(st.mtimeMs)}.cache`;
  const uid = process.getuid?.() ?? 'user';
  return [path.join(dir, name), path.join(tmpdir(), `redstalk-${uid}`, name)];
}

const files = useCache ? cacheFiles() : [];
let cachedData: Buffer | undefined;
for (const f of files) {
  try {
    cachedData = readFileSync(f);
    break;
  } catch { /* not there */ }
}

const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: bundle,
  cachedData,
});

if (useCache && (!cachedData || script.cachedDataRejected)) {
  // After the start, so that the functions a start runs are in it (V8 compiles them lazily).
  setTimeout(() => {
    const data = script.createCachedData();
    for (const f of files) {
      try {
        mkdirSync(path.dirname(f), { recursive: true });
        const tmp = `${f}.${process.pid}`;
        writeFileSync(tmp, data);
        renameSync(tmp, f);
        return;
      } catch { /* try the next place */ }
    }
  }, 1000).unref();
}

const module = { exports: {} };
(script.runInThisContext() as (...a: unknown[]) => void)(module.exports, createRequire(bundle), module, bundle, dir);
