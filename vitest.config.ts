import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts', 'ts/src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Several suites spawn hundreds of processes and measure descriptors and memory of the
    // test process itself; one file at a time per worker keeps those figures honest.
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
