import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The docker runtime's tests need a container engine (podman's Docker-compatible service).
    globalSetup: ['@wds/testkit/container-engine-setup'],
  },
});
