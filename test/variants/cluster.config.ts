// npm run test:cluster: the integration and differential suites on a Redis
// Cluster of 3 primaries with a replica each (started once, by
// cluster-setup.ts), with --shards 12, so every primary holds 4 shards.
// Tests that drive or read one redis-server of their own skip here (onCluster).
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';
import { VARIANT_EXCLUDE } from './layout-agnostic.js';

// The base settings with this run's files (spread, not merged: merging would add them to the base's).
export default defineConfig({
  test: {
    ...base.test,
    include: ['test/integration/**/*.test.ts', 'test/differential/**/*.test.ts'],
    exclude: VARIANT_EXCLUDE,
    globalSetup: ['test/variants/cluster-setup.ts'],
    env: { ...base.test?.env, TEST_SHARDS: '12', DIFF_SEEDS: process.env.DIFF_SEEDS ?? '1-70' },
  },
});
