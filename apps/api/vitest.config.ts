import { defineConfig } from 'vitest/config';

/** The files that run containers (the docker runtime): only their project starts a container engine (podman). */
const CONTAINERS = ['test/image.test.ts', 'test/instant-run-docker.test.ts', 'test/stf-subject.test.ts', 'test/mcp-cancel-docker.test.ts'];
/**
 * The files that mostly wait — the console's browser tests (chromium, Lighthouse), and the service's own processes
 * started, killed and restarted with their embedded PostgreSQL, and backed up with pg_dump — are projects of their
 * own, run by `pnpm test:beside` beside the two streams of scripts/test.sh, on the CPU those leave idle.
 */
const BROWSER = ['test/console-*.test.ts'];
const PROCESSES = ['test/lifecycle.test.ts', 'test/backup.test.ts'];

export default defineConfig({
  test: {
    // A limit for a stuck test, never an assertion of speed: the suite runs beside other packages (scripts/test.sh), and
    // a worker-scoped harness fixture is built inside its first test.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Files share the worker's module graph instead of importing the service and compiling its WebAssembly (SQL
    // parser, QuickJS) again for each: 12 min for the package instead of 16 (docs/performance.md, "The test suite").
    // Every file builds its own services, database and servers; none may leave process state behind.
    isolate: false,
    projects: [
      // PostgreSQL for every test file, each on its own copy of a database migrated once (test/global-setup.ts).
      { extends: true, test: { name: 'api', exclude: [...CONTAINERS, ...BROWSER, ...PROCESSES, '**/node_modules/**'], globalSetup: ['test/global-setup.ts'] } },
      { extends: true, test: { name: 'containers', include: CONTAINERS, globalSetup: ['test/global-setup.ts', '@wds/testkit/container-engine-setup'] } },
      // A page under load may take seconds to show what a poll waits for: a poll waits up to 15 s (never an
      // assertion of speed, only how long a stuck page is waited for).
      { extends: true, test: { name: 'browser', include: BROWSER, globalSetup: ['test/global-setup.ts'], expect: { poll: { timeout: 15_000 } } } },
      { extends: true, test: { name: 'processes', include: PROCESSES, globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
