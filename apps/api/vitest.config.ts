import { defineConfig } from 'vitest/config';

/** The files that run containers (the docker runtime): only their project starts a container engine (podman). */
const CONTAINERS = ['test/image.test.ts', 'test/instant-run-docker.test.ts', 'test/stf-subject.test.ts', 'test/mcp-cancel-docker.test.ts'];

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
      { extends: true, test: { name: 'api', exclude: [...CONTAINERS, '**/node_modules/**'], globalSetup: ['test/global-setup.ts'] } },
      { extends: true, test: { name: 'containers', include: CONTAINERS, globalSetup: ['test/global-setup.ts', '@wds/testkit/container-engine-setup'] } },
    ],
  },
});
