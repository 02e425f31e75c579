import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The docker runtime's tests need a container engine (podman's Docker-compatible service).
    globalSetup: ['@wds/testkit/container-engine-setup'],
    // Memory bombs and worker start-ups are CPU-bound: the suite runs beside other packages' tests (scripts/test.sh),
    // so a test may take several times as long as alone. A limit, never an assertion of speed.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
