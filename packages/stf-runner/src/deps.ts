import type { SecretBox } from '@wds/crypto';
import type { Db } from '@wds/db';
import type { RuntimeName, StfRuntime } from '@wds/stf-runtime';
import type { TopicCache } from '@wds/cache';
import type { WorkspaceSql } from '@wds/workspace-sql';

/** The configuration a run reads, as plain numbers (the server's Config has each of them). */
export interface StfRunnerConfig {
  /** Statement and lock timeout of an STF's sql() calls. */
  SQL_STATEMENT_TIMEOUT_MS: number;
  /** Rows one sql() call may return. */
  SQL_MAX_ROWS: number;
  /** Wall-clock limit of a javascript or wasm run (and of checking javascript code when it is saved). */
  STF_TIMEOUT_MS: number;
  STF_DOCKER_TIMEOUT_MS: number;
  STF_DOCKER_MEMORY_MB: number;
  /** Largest version code after base64 decoding. */
  STF_MAX_CODE_BYTES: number;
}

/**
 * What running an STF needs of the server. The app's services satisfy it as they are; tests hand in fakes (a
 * runtime, an `openSession`) and need neither Hono nor a runtime's workers.
 */
export interface StfRunnerDeps {
  /** The platform tables: the STF's secrets and versions. */
  db: Db;
  /** Opens the transaction an STF's sql() calls run in, through the rewriter and the subject's policies. */
  sql: Pick<WorkspaceSql, 'openSession'>;
  /** STF runtimes by name; a missing one answers 503. */
  runtimes: Partial<Record<RuntimeName, StfRuntime>>;
  /** Opens sealed secrets; undefined when no key is configured (a run then gets none). */
  secrets: SecretBox | undefined;
  config: StfRunnerConfig;
  /**
   * The process's run cache (@wds/stfs createRunCache, built once with the services): what a run reads of the
   * platform tables, kept until a change of the workspace. Without it, every run reads them.
   */
  runCache?: TopicCache | undefined;
  /** Counts each run by runtime and outcome (@wds/metrics' Metrics fits); optional. */
  metrics?: StfRunMetrics | undefined;
}

/** The recording hook of runs: `outcome` is `success`, the failure kind, or `busy` / `unavailable` / `error`. */
export interface StfRunMetrics {
  stfRun(runtime: string, outcome: string, seconds: number): void;
}
