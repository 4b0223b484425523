import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { staleBuild } from './scripts/build-fresh.js';

const ROOT = path.dirname(fileURLToPath(import.meta.url));
const BUNDLE = path.join(ROOT, 'dist/cli.js');

// The client suites (clients/*) start a fresh sidecar per conformance transcript:
// the built command line when it is newer than every source it bundles (npm test
// builds it first), the sources under tsx otherwise (about 0.5 s more per start).
const bundleIsFresh = staleBuild(ROOT) === null;

// Integration tests start their own redis-server / beanstalkd processes; running
// files one at a time keeps a 2-core machine from timing them out.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'clients/node/test/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    env: bundleIsFresh ? { REDSTALK_CMD: `${process.execPath} ${BUNDLE}` } : {},
  },
});
