import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { globalSetup: ['@wds/testkit/global-setup'], testTimeout: 60_000, hookTimeout: 120_000 },
});
