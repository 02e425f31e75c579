import { isConnectionLost } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { Subject } from '@wds/policy-engine';
import { type LogLine, type RuntimeName, StfError, StfRunCancelled, StfRuntimeBusy, StfRuntimeUnavailable } from '@wds/stf-runtime';
import { openSecrets } from '@wds/stfs';
import { type SqlSession, workspacePrincipal } from '@wds/workspace-sql';
import type { StfRunnerDeps } from './deps.js';
import { runLimits } from './limits.js';

/**
 * A run whose `sql()` met a database outage — its connection lost (a restart, pg_terminate_backend, a reset socket)
 * or none to be had — is not a failure of the user's code, whatever the code did with the error (rethrown or
 * caught): the run is rolled back and answers 503 with `Retry-After: 1` (docs/operations.md, "Losing the database").
 * The user's own SQL errors (a missing column, a policy) stay the run's answer.
 */
export class StfDatabaseUnavailable extends ServiceError {
  constructor(cause: unknown) {
    super('SERVICE_UNAVAILABLE', 'The database connection of this STF run was lost', 'nothing the run wrote was kept; try again', { retryAfterSeconds: 1 });
    this.name = 'StfDatabaseUnavailable';
    this.cause = cause;
  }
}

/** What workspace SQL throws for an outage (its connection errors are SERVICE_UNAVAILABLE), or a raw lost connection. */
const isOutage = (err: unknown): boolean => (err instanceof ServiceError && err.code === 'SERVICE_UNAVAILABLE') || isConnectionLost(err);

/** What a run needs of a version. */
export interface RunnableVersion {
  stf_id: string;
  runtime: RuntimeName;
  code: Buffer;
}

/**
 * What a run needs of its workspace: the id, the DDL group its sql() calls are checked against, and its creator
 * (whose share of the runtime the run takes: workspacePrincipal).
 */
export interface RunWorkspace {
  id: string;
  ddl_policy_group_id: string | null;
  created_by: string | null;
}

/**
 * What instant-run answers (docs/stfs.md#instant-run; a failure of the user's code is `success: false`, still a 200).
 */
export type RunAnswer =
  | { success: true; output: unknown; logs: LogLine[]; duration_ms: number }
  | { success: false; error: { kind: string; message: string; details?: string }; logs: LogLine[] };

export interface RunRequest {
  workspace: RunWorkspace;
  version: RunnableVersion;
  input: unknown;
  sources: Record<string, unknown>;
  /** The user the run is for (`$caller`; `$user_id` of an STF subject), or null when anonymous. */
  caller: string | null;
  /** Whose policies sql() runs under: the calling user (instant-run) or the STF (workflow steps). */
  subject: Subject;
  /** false: the code gets no sql() at all (describe runs). */
  sql?: boolean;
  /** The STF's secrets when the caller already has them (workflow steps); read from the database otherwise. */
  secrets?: Record<string, string>;
  /**
   * Work that belongs to a run that happens (instant-run's audit entry): started as soon as the runtime has the
   * run (StfRunRequest.onStart), so that it overlaps the run, else after the run; awaited before the run's sql()
   * writes commit (and before the answer), and its failure fails the call and rolls them back. Not done when the run
   * is refused (no runtime, too many waiting).
   */
  onStart?: () => Promise<void>;
  /**
   * Aborted when nobody waits for the run any more (StfRunRequest.signal): the runtime stops it and frees its slot,
   * its sql() writes are rolled back, and the run rejects with StfRunCancelled.
   */
  signal?: AbortSignal;
}

/**
 * Runs one STF version. Its sql() calls go through the rewriter and the subject's policies in one transaction,
 * committed when the run succeeds and rolled back when it fails; the session (a pooled connection and its
 * transaction) opens at the first sql() call, so code that does not query pays nothing for it. A runtime this
 * server does not have, or whose engine is unreachable, is a 503 ServiceError; a workspace with too many runs
 * already waiting for the runtime is a 429; failures of the code (a run that waited its whole time limit included:
 * kind 'timeout') are answers, but a run whose sql() met a database outage is a StfDatabaseUnavailable (503) even
 * when its code caught the error. Runs queue per workspace and take turns by its creator (`principalId`), so one user's
 * load over any number of workspaces waits its turn.
 */
export async function runStf(deps: StfRunnerDeps, req: RunRequest): Promise<RunAnswer> {
  if (!deps.metrics) return runOnce(deps, req);
  const t = performance.now();
  const record = (outcome: string) => deps.metrics?.stfRun(req.version.runtime, outcome, (performance.now() - t) / 1000);
  try {
    const answer = await runOnce(deps, req);
    record(answer.success ? 'success' : answer.error.kind);
    return answer;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    record(err instanceof StfRunCancelled ? 'cancelled' : code === 'TOO_MANY_REQUESTS' ? 'busy' : code === 'SERVICE_UNAVAILABLE' ? 'unavailable' : 'error');
    throw err;
  }
}

async function runOnce(deps: StfRunnerDeps, req: RunRequest): Promise<RunAnswer> {
  const { version } = req;
  const runtime = deps.runtimes[version.runtime];
  if (!runtime) {
    throw new ServiceError(
      'SERVICE_UNAVAILABLE',
      `The ${version.runtime} runtime is not available on this server`,
      version.runtime === 'docker' ? 'no container engine is configured (DOCKER_HOST)' : undefined,
    );
  }
  const secrets = req.secrets ?? (deps.secrets ? await openSecrets(deps.db, deps.secrets, version.stf_id) : {});
  let session: Promise<SqlSession> | undefined;
  const openSession = () =>
    (session ??= deps.sql.openSession(
      { workspaceId: req.workspace.id, ddlGroupId: req.workspace.ddl_policy_group_id, isAdmin: false, subject: req.subject },
      { statementTimeoutMs: deps.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: deps.config.SQL_MAX_ROWS },
    ));
  // The first outage a sql() call (or the commit) met: the run's answer then, whatever its code made of the error.
  let outage: StfDatabaseUnavailable | undefined;
  const end = async (ok: boolean) => {
    const open = await session?.catch(() => undefined);
    try {
      await open?.end(ok);
    } catch (err) {
      if (!isOutage(err)) throw err;
      outage ??= new StfDatabaseUnavailable(err);
      throw outage;
    }
  };
  const sql = async (q: string) => {
    try {
      return await (await openSession()).query(q);
    } catch (err) {
      if (isOutage(err)) outage ??= new StfDatabaseUnavailable(err);
      throw err;
    }
  };
  let started: Promise<void> | undefined;
  const start = () => {
    if (!req.onStart || started) return;
    started = req.onStart();
    started.catch(() => undefined); // awaited below; no unhandled rejection while the run goes on
  };
  let answer: RunAnswer;
  try {
    const result = await runtime.run({
      code: version.runtime === 'javascript' ? version.code.toString('utf8') : version.code,
      input: req.input,
      sources: req.sources,
      caller: req.caller,
      workspaceId: req.workspace.id,
      principalId: workspacePrincipal(req.workspace),
      stfId: version.stf_id,
      secrets,
      limits: runLimits(version.runtime, deps.config),
      ...(req.sql === false ? {} : { sql }),
      ...(req.onStart ? { onStart: start } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    if (outage) throw outage;
    // The run's started work (instant-run's audit entry) is done before its sql() writes commit: a committed write
    // always has its run's entry, and an entry that could not be written takes the writes with it (rolled back below).
    start();
    await started;
    await end(true);
    answer = { success: true, output: result.output, logs: result.logs, duration_ms: result.duration_ms };
  } catch (err) {
    if (outage) {
      // Nothing of it is kept (its transaction died with the connection); its started work is finished first.
      await end(false).catch(() => undefined);
      await started?.catch(() => undefined);
      throw outage;
    }
    await end(false);
    if (!(err instanceof StfError)) {
      // Work started for a run the runtime then failed is finished first; the failure stands.
      await started?.catch(() => undefined);
      // The workspace has as many runs waiting for this runtime as it may have: nothing ran.
      if (err instanceof StfRuntimeBusy) throw new ServiceError('TOO_MANY_REQUESTS', err.message, err.details);
      if (err instanceof StfRuntimeUnavailable) {
        throw new ServiceError('SERVICE_UNAVAILABLE', `The ${version.runtime} runtime cannot run STFs now`, err.message);
      }
      throw err;
    }
    answer = { success: false, error: { kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) }, logs: err.logs };
  }
  // An answered run: its started work done (begun now when the runtime never said it started).
  start();
  await started;
  return answer;
}

/** A user's own run (instant-run, describe): `$caller` is the user, and sql() runs under the user's policies. */
export interface UserRunRequest {
  workspace: RunWorkspace;
  userId: string;
  version: RunnableVersion;
  input: unknown;
  sources: Record<string, unknown>;
  /** false: the code gets no sql() at all. */
  sql?: boolean;
  /** The STF's secrets when the caller already has them; read from the database otherwise. */
  secrets?: Record<string, string>;
  /** RunRequest.onStart. */
  onStart?: () => Promise<void>;
  /** RunRequest.signal. */
  signal?: AbortSignal;
}

export function runAsUser(deps: StfRunnerDeps, req: UserRunRequest): Promise<RunAnswer> {
  return runStf(deps, {
    workspace: req.workspace,
    version: req.version,
    input: req.input,
    sources: req.sources,
    caller: req.userId,
    subject: { kind: 'user', userId: req.userId },
    ...(req.sql === false ? { sql: false } : {}),
    ...(req.secrets ? { secrets: req.secrets } : {}),
    ...(req.onStart ? { onStart: req.onStart } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
}
