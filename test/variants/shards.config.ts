// npm run test:shards: the integration and differential suites on one Redis
// with --shards 4 (tags are only names there): every command crosses the
// shard routing, reserves over several tubes cross shards.
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';
import { VARIANT_EXCLUDE } from './layout-agnostic.js';

// The base settings with this run's files (spread, not merged: merging would add them to the base's).
export default defineConfig({
  test: {
    ...base.test,
    include: ['test/integration/**/*.test.ts', 'test/differential/**/*.test.ts'],
    exclude: VARIANT_EXCLUDE,
    env: { ...base.test?.env, TEST_SHARDS: '4', DIFF_SEEDS: process.env.DIFF_SEEDS ?? '1-70' },
  },
});
