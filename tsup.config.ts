import path from 'node:path';
import { defineConfig } from 'tsup';
import { buildLibrary } from './src/store/redis/scripts.js';

/** The Redis Functions libraries, built (and checked) once here rather than at every start. */
const lua = path.resolve('lua');
const PREBUILT_LIBRARIES = JSON.stringify({ plain: buildLibrary({ dir: lua }), shardedPubSub: buildLibrary({ dir: lua, shardedPubSub: true }) });

export default defineConfig([
  // The library: its dependencies stay dependencies.
  {
    entry: ['src/index.ts'],
    format: ['esm'],
    target: 'node20',
    dts: { entry: 'src/index.ts' },
    sourcemap: true,
  },
  // The command line: ONE CommonJS file with its dependencies (dist/redstalk.cjs),
  // so a start reads one file instead of hundreds and resolves no modules; its
  // lazy imports stay lazy (evaluated when first used). Run by dist/cli.js through
  // a V8 code cache (src/launch.ts): the time from spawn to serving was mostly
  // loading and compiling modules (bench/startup.ts).
  {
    entry: { redstalk: 'src/cli.ts' },
    format: ['cjs'],
    outExtension: () => ({ js: '.cjs' }),
    target: 'node20',
    noExternal: [/.*/],
    define: { REDSTALK_PREBUILT_LIBRARIES: PREBUILT_LIBRARIES },
    // import.meta.url (the lua/ folder, pino-pretty) from __filename.
    shims: true,
    // Less to read and parse; names are kept (log lines name error classes). esbuild
    // writes ASCII only (its default charset), so the launcher reads it as latin1.
    esbuildOptions(options) {
      options.minifyWhitespace = true;
      options.minifySyntax = true;
      options.charset = 'ascii';
    },
    sourcemap: true,
  },
  {
    entry: { cli: 'src/launch.ts' },
    format: ['esm'],
    target: 'node20',
    sourcemap: true,
  },
]);
