import { defineConfig } from 'tsup';

export default defineConfig([
  // The library: its dependencies stay dependencies.
  {
    entry: ['src/index.ts'],
    format: ['esm'],
    target: 'node20',
    dts: { entry: 'src/index.ts' },
    sourcemap: true,
  },
  // The command line: one bundle with its dependencies, split at its lazy
  // imports, so a start reads a few files instead of hundreds (the time from
  // spawn to listening is mostly module loading: bench/startup.ts).
  {
    entry: ['src/cli.ts'],
    format: ['esm'],
    target: 'node20',
    noExternal: [/.*/],
    splitting: true,
    sourcemap: true,
    // Bundled CommonJS dependencies (ioredis, pino) call require().
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  },
]);
