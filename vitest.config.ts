import { defineConfig } from 'vitest/config';

// Integration tests start their own redis-server / beanstalkd processes; running
// files one at a time keeps a 2-core machine from timing them out.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'clients/node/test/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
