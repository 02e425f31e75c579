import { defineConfig } from 'vitest/config';

export default defineConfig({
  // --expose-gc: the memory test collects garbage as it goes, so that rss shows what is held, not what is not yet freed.
  test: { globalSetup: ['@wds/testkit/global-setup'], testTimeout: 60_000, hookTimeout: 120_000, execArgv: ['--expose-gc'] },
});
