import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // PostgreSQL for every test; a container engine (podman) for the docker runtime's.
    globalSetup: ['@wds/testkit/global-setup', '@wds/testkit/container-engine-setup'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
