import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Property and recovery tests are CPU-bound and run beside other packages' tests (scripts/test.sh): a limit for
    // a stuck test, never an assertion of speed.
    testTimeout: 60_000,
  },
});
