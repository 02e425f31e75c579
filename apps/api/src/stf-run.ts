import type { Db } from '@wds/db';
import { ServiceError } from '@wds/errors';
import type { Subject } from '@wds/policy-engine';
import { StfError, type LogLine, StfRuntimeBusy, StfRuntimeUnavailable } from '@wds/stf-runtime';
import { openSecrets } from '@wds/stfs';
import type { SqlSession } from '@wds/workspace-sql';
import type { HandlerCtx } from './http/route.js';
import { runLimits } from './runtimes.js';
import type { Services } from './services.js';

/** What a run needs of a version. */
export interface RunnableVersion {
  stf_id: string;
  runtime: 'javascript' | 'wasm' | 'docker';
  code: Buffer;
}

/** DECISIONS §6: what instant-run answers (a failure of the user's code is `success: false`, still a 200). */
export type RunAnswer =
  | { success: true; output: unknown; logs: LogLine[]; duration_ms: number }
  | { success: false; error: { kind: string; message: string; details?: string }; logs: LogLine[] };

export interface RunRequest {
  workspace: { id: string; ddl_policy_group_id: string | null };
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
}

/**
 * Runs one STF version. Its sql() calls go through the rewriter and the subject's policies in one transaction,
 * committed when the run succeeds and rolled back when it fails; the session (a pooled connection and its
 * transaction) opens at the first sql() call, so code that does not query pays nothing for it. A runtime this
 * server does not have, or whose engine is unreachable, is a 503 ServiceError; a workspace with too many runs
 * already waiting for the runtime is a 429; failures of the code (a run that waited its whole time limit included:
 * kind 'timeout') are answers. Runs queue per workspace (`workspaceId`), so one workspace's load waits its turn.
 */
export async function runStf(services: Services, db: Db, req: RunRequest): Promise<RunAnswer> {
  const { version } = req;
  const runtime = services.runtimes[version.runtime];
  if (!runtime) {
    throw new ServiceError(
      'SERVICE_UNAVAILABLE',
      `The ${version.runtime} runtime is not available on this server`,
      version.runtime === 'docker' ? 'no container engine is configured (DOCKER_HOST)' : undefined,
    );
  }
  const secrets = req.secrets ?? (services.secrets ? await openSecrets(db, services.secrets, version.stf_id) : {});
  let session: Promise<SqlSession> | undefined;
  const openSession = () =>
    (session ??= services.sql.openSession(
      { workspaceId: req.workspace.id, ddlGroupId: req.workspace.ddl_policy_group_id, isAdmin: false, subject: req.subject },
      { statementTimeoutMs: services.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: services.config.SQL_MAX_ROWS },
    ));
  const end = async (ok: boolean) => {
    const open = await session?.catch(() => undefined);
    await open?.end(ok);
  };
  try {
    const result = await runtime.run({
      code: version.runtime === 'javascript' ? version.code.toString('utf8') : version.code,
      input: req.input,
      sources: req.sources,
      caller: req.caller,
      workspaceId: req.workspace.id,
      stfId: version.stf_id,
      secrets,
      limits: runLimits(version.runtime, services.config),
      ...(req.sql === false ? {} : { sql: async (q: string) => (await openSession()).query(q) }),
    });
    await end(true);
    return { success: true, output: result.output, logs: result.logs, duration_ms: result.duration_ms };
  } catch (err) {
    await end(false);
    if (err instanceof StfError) {
      return { success: false, error: { kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) }, logs: err.logs };
    }
    // The workspace has as many runs waiting for this runtime as it may have: nothing ran.
    if (err instanceof StfRuntimeBusy) throw new ServiceError('TOO_MANY_REQUESTS', err.message, err.details);
    if (err instanceof StfRuntimeUnavailable) {
      throw new ServiceError('SERVICE_UNAVAILABLE', `The ${version.runtime} runtime cannot run STFs now`, err.message);
    }
    throw err;
  }
}

/** instant-run and describe: the calling user's run, under the user's policies. */
export function runAsCaller(
  ctx: HandlerCtx<unknown, unknown>,
  version: RunnableVersion,
  input: unknown,
  sources: Record<string, unknown>,
  opts: { sql?: boolean } = {},
): Promise<RunAnswer> {
  const userId = ctx.principal.user.id;
  return runStf(ctx.services, ctx.db, {
    workspace: ctx.access.workspace,
    version,
    input,
    sources,
    caller: userId,
    subject: { kind: 'user', userId },
    ...(opts.sql === false ? { sql: false } : {}),
  });
}
