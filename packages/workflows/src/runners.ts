/**
 * The service's real step runners: STFs in their runtimes under the STF's policy subject (`$user_id` = the executing
 * user, NULL when anonymous — docs/sql-and-policies.md#policies), effects through the effect runner and the SSRF guard,
 * Fetch sources through the same guard, Table sources as the executing user's rows, Library sources from the javascript
 * runtime's bundled libraries (or, for a name that is none, as a Table source, noted), File sources from the blob
 * store.
 */
import { type Db, parseUuid, sql, type Uuid } from '@wds/db';
import { EffectError, fetchSource, type OutboundGuard, runEffect } from '@wds/effect-runner';
import { ServiceError, notFound } from '@wds/errors';
import { isLogicalName, physicalName } from '@wds/sql-rewriter';
import { type RunWorkspace, runStf, StfDatabaseUnavailable, type StfRunMetrics, type StfRunnerConfig, type StfRunnerDeps } from '@wds/stf-runner';
import { type BlobStore, getFile } from '@wds/storage';
import { openSealedSecrets } from '@wds/stfs';
import type { WorkspaceSql } from '@wds/workspace-sql';
import type { InputStep } from './definition.js';
import type { StepError, StepRunners } from './engine.js';
import { libraryDocument } from './libraries.js';
import type { Deprecation } from './variables.js';

/** The configuration an execution reads, as plain numbers (the server's Config has each of them). */
export interface WorkflowExecutionConfig extends StfRunnerConfig {
  /** How often the runs of this process are marked alive. */
  RUN_HEARTBEAT_INTERVAL_MS: number;
  /** Executions one workspace may have in progress, waiting, and how long one may wait (WorkflowConcurrency). */
  WORKFLOW_WORKSPACE_CONCURRENCY: number;
  WORKFLOW_WORKSPACE_QUEUE: number;
  WORKFLOW_QUEUE_TIMEOUT_MS: number;
  /** Queued runs one process runs at once (the workflow-runs job queue). */
  WORKFLOW_JOB_CONCURRENCY: number;
  /** Runs one workspace may have queued; one more is refused (429). */
  WORKFLOW_WORKSPACE_QUEUED_MAX: number;
  /**
   * A queued run waiting longer than this is queued again (its job was lost with the process that queued it); a
   * running one without a heartbeat for this long is settled (its process died).
   */
  RUN_STALE_AFTER_MS: number;
  /** Attempts of a queued run cut by a crash: resumed until it has had this many, then failed as interrupted. */
  RUN_MAX_ATTEMPTS: number;
  /** The bytes of JSON each step's input and output may keep in its run's record (step-data.ts); 0 keeps nothing; default 64 KiB. */
  WORKFLOW_STEP_DATA_MAX_BYTES?: number;
}

/**
 * What executing workflows needs of the server: what running an STF needs, and the outbound guard, the blob store,
 * statements as a user (Table sources) and a logger. The app's services satisfy it as they are.
 */
export interface WorkflowExecutionDeps extends StfRunnerDeps {
  sql: Pick<WorkspaceSql, 'openSession' | 'execute'>;
  /** The SSRF guard of effects and Fetch sources (OUTBOUND_ALLOWLIST). */
  outbound: OutboundGuard;
  /** Where the bytes of File sources are. */
  blobs: Pick<BlobStore, 'get'>;
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  config: WorkflowExecutionConfig;
  /** Counts STF runs (StfRunnerDeps) and finished workflow runs by status; optional. */
  metrics?: (StfRunMetrics & { workflowRun?(status: string, seconds: number): void }) | undefined;
}

/** A step's failure with its own kind (a refused statement: its error code), as the engine records it. */
export class StepFailure extends Error {
  readonly kind: string;
  readonly details: string | undefined;

  constructor(error: StepError) {
    super(error.message);
    this.name = 'StepFailure';
    this.kind = error.kind;
    this.details = error.details;
  }
}

/** A ServiceError as a step's error: its code is the kind. */
/**
 * The kind of an STF step whose sql() met a database outage (StfDatabaseUnavailable): not the STF's failure, so a
 * waiting execution answers 503 instead of 422 (runOutput).
 */
export const DATABASE_UNAVAILABLE = 'database_unavailable';

export const stepErrorOf = (err: ServiceError): StepError => ({
  kind: err.code,
  message: err.message,
  ...(err.details ? { details: err.details } : {}),
});

/** The largest file a File source reads. */
export const FILE_SOURCE_MAX_BYTES = 5 * 1024 * 1024;

/** A File source's value: JSON parsed, text as a string, anything else `{ filename, content_type, size, content_base64 }`. */
async function readFileSource(deps: WorkflowExecutionDeps, workspaceId: string, id: Uuid): Promise<unknown> {
  const file = await getFile(deps.db, workspaceId, id);
  if (file.size > FILE_SOURCE_MAX_BYTES) {
    throw new EffectError('too_large', `file ${file.filename} is larger than ${FILE_SOURCE_MAX_BYTES} bytes (the limit of an input source)`);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of (await deps.blobs.get(file.blob_key)) as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
  const bytes = Buffer.concat(chunks);
  const type = file.content_type.toLowerCase();
  if (/[/+]json\b/.test(type)) {
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new EffectError('invalid', `file ${file.filename} is not valid JSON`);
    }
  }
  if (type.startsWith('text/')) return bytes.toString('utf8');
  return { filename: file.filename, content_type: file.content_type, size: file.size, content_base64: bytes.toString('base64') };
}

/** Whether the workspace has a table `name` (a valid logical name); the service's own catalogue read, no rows. */
async function workspaceTableExists(db: Db, workspaceId: string, name: string): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    SELECT to_regclass(${`user_data."${physicalName(workspaceId, name)}"`}) IS NOT NULL AS found`.execute(db);
  return rows[0]?.found === true;
}

/** The rows of the workspace table `name`, read as the executing user under their policies and the row cap. */
async function tableRows(deps: WorkflowExecutionDeps, workspace: RunWorkspace, executedBy: string | null, name: string): Promise<unknown[]> {
  if (!executedBy) {
    throw new EffectError('invalid', `Table source ${name} needs an authenticated execution (its rows are read with the caller's policies)`);
  }
  const r = await deps.sql.execute(
    { workspaceId: workspace.id, ddlGroupId: workspace.ddl_policy_group_id, isAdmin: false, subject: { kind: 'user', userId: executedBy } },
    `SELECT * FROM ${name}`,
    { statementTimeoutMs: deps.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: deps.config.SQL_MAX_ROWS },
  );
  return r.rows ?? [];
}

async function loadSource(
  deps: WorkflowExecutionDeps,
  workspace: RunWorkspace,
  executedBy: string | null,
  step: InputStep,
  deprecated: (d: Omit<Deprecation, 'at'>) => void,
  readRows: () => void,
): Promise<unknown> {
  const src = step.source;
  switch (src.type) {
    case 'Fetch': {
      const res = await fetchSource(
        {
          url: src.url,
          ...(src.method ? { method: src.method } : {}),
          ...(src.headers ? { headers: src.headers } : {}),
          ...(src.body !== undefined ? { body: src.body } : {}),
          ...(src.timeout_secs ? { timeout_secs: src.timeout_secs } : {}),
        },
        { guard: deps.outbound },
      );
      return res.body;
    }
    case 'Library': {
      // Saved when `Library` meant a table (check.ts lets only a table name through): read it as one, and say so.
      // A name that is both a bundled library and a table of the workspace (`xlsx`, `docx`, …) stays the table it
      // was before bundled libraries had these names, so no saved definition changes what it reads.
      const asTable = isLogicalName(src.name) && (await workspaceTableExists(deps.db, workspace.id, src.name));
      const library = asTable ? undefined : libraryDocument(src.name);
      if (library) return library;
      if (!isLogicalName(src.name)) throw new EffectError('invalid', `Library ${src.name} is not a bundled library`);
      deprecated({ found: JSON.stringify({ type: 'Library', name: src.name }), use: JSON.stringify({ type: 'Table', name: src.name }) });
      readRows();
      return tableRows(deps, workspace, executedBy, src.name);
    }
    case 'Table':
      readRows();
      return tableRows(deps, workspace, executedBy, src.name);
    case 'File':
      return readFileSource(deps, workspace.id, parseUuid(src.id, () => notFound('File')));
  }
}

/** The step runners of one execution in `workspace`, for `executedBy` (null: anonymous). */
export function createStepRunners(deps: WorkflowExecutionDeps, workspace: RunWorkspace, executedBy: string | null): StepRunners {
  return {
    loadSource: (step, deprecated, readRows = () => {}) =>
      loadSource(deps, workspace, executedBy, step, deprecated, readRows).catch((err: unknown) => {
        // A refused statement (policy, missing table) is the step's failure, with its code as the kind.
        if (err instanceof ServiceError) throw new StepFailure(stepErrorOf(err));
        throw err;
      }),
    runStf: async (stf, stepInput, sources, signal) => {
      try {
        const answer = await runStf(deps, {
          workspace,
          version: { stf_id: stf.stf_id, runtime: stf.runtime, code: stf.code },
          input: stepInput,
          sources,
          caller: executedBy,
          subject: { kind: 'stf', stfId: stf.stf_id, userId: executedBy },
          secrets: deps.secrets ? openSealedSecrets(deps.secrets, stf.stf_id, stf.sealed_secrets) : {},
          ...(signal ? { signal } : {}),
        });
        return answer.success ? { ok: true, output: answer.output } : { ok: false, error: answer.error };
      } catch (err) {
        // The database went away under the step: recorded as such, answered as an outage.
        if (err instanceof StfDatabaseUnavailable) return { ok: false, error: { ...stepErrorOf(err), kind: DATABASE_UNAVAILABLE } };
        // No runtime, a busy one: the step fails with that code; the run is recorded all the same.
        if (err instanceof ServiceError) return { ok: false, error: stepErrorOf(err) };
        throw err;
      }
    },
    runEffect: (effect, effectInput, idempotencyKey) => runEffect(effect.spec, effectInput, { guard: deps.outbound, idempotencyKey }),
  };
}
