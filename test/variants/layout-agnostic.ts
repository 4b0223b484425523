// Integration files the variants (test:shards, test:cluster) leave to the main
// run: what they test does not depend on how the data set is laid out in Redis
// (process start and stop with the embedded redis-server, forked workers, the
// early listening socket, memory held per connection), so running them again
// over shards would only add minutes to CI.
import { configDefaults } from 'vitest/config';

export const VARIANT_EXCLUDE = [
  ...configDefaults.exclude,
  'test/integration/embedded-orphans.test.ts',
  'test/integration/workers.test.ts',
  'test/integration/early-listen.test.ts',
  'test/integration/memory.test.ts',
];
