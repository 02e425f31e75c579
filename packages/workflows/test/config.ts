import type { WorkflowExecutionConfig } from '../src/runners.js';

/** Small limits for the package's tests: short timeouts, two runs per workspace at once. */
export const TEST_CONFIG: WorkflowExecutionConfig = {
  SQL_STATEMENT_TIMEOUT_MS: 1_000,
  SQL_MAX_ROWS: 10,
  STF_TIMEOUT_MS: 1_000,
  STF_DOCKER_TIMEOUT_MS: 1_000,
  STF_DOCKER_MEMORY_MB: 64,
  STF_MAX_CODE_BYTES: 1_000,
  RUN_HEARTBEAT_INTERVAL_MS: 60_000,
  WORKFLOW_WORKSPACE_CONCURRENCY: 2,
  WORKFLOW_WORKSPACE_QUEUE: 2,
  WORKFLOW_QUEUE_TIMEOUT_MS: 1_000,
  WORKFLOW_JOB_CONCURRENCY: 2,
  WORKFLOW_WORKSPACE_QUEUED_MAX: 100,
  RUN_STALE_AFTER_MS: 60_000,
  RUN_MAX_ATTEMPTS: 3,
};
