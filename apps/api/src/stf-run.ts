import { ServiceError } from '@wds/errors';
import { StfError, type LogLine, StfRuntimeUnavailable } from '@wds/stf-runtime';
import { openSecrets, type resolveVersion } from '@wds/stfs';
import type { SqlSession } from '@wds/workspace-sql';
import type { HandlerCtx } from './http/route.js';
import { runLimits } from './runtimes.js';

type Version = Awaited<ReturnType<typeof resolveVersion>>;

/** DECISIONS §6: what instant-run answers (a failure of the user's code is `success: false`, still a 200). */
export type RunAnswer =
  | { success: true; output: unknown; logs: LogLine[]; duration_ms: number }
  | { success: false; error: { kind: string; message: string; details?: string }; logs: LogLine[] };

/**
 * Runs one STF version as the calling user: its sql() calls go through the rewriter and the user's policies in
 * one transaction, committed when the run succeeds and rolled back when it fails. With `sql: false` the code
 * gets no sql() at all (describe runs).
 */
export async function runAsCaller(
  ctx: HandlerCtx<unknown, unknown>,
  version: Version,
  input: unknown,
  sources: Record<string, unknown>,
  opts: { sql?: boolean } = {},
): Promise<RunAnswer> {
  const { services } = ctx.c.var;
  const ws = ctx.access.workspace;
  const runtime = services.runtimes[version.runtime];
  if (!runtime) {
    throw new ServiceError(
      'SERVICE_UNAVAILABLE',
      `The ${version.runtime} runtime is not available on this server`,
      version.runtime === 'docker' ? 'no container engine is configured (DOCKER_HOST)' : undefined,
    );
  }
  const secrets = services.secrets ? await openSecrets(ctx.db, services.secrets, version.stf_id) : {};
  // The SQL session (a pooled connection and a transaction) opens at the run's first sql() call: most runs of
  // code that does not query pay nothing for it.
  let session: Promise<SqlSession> | undefined;
  const openSession = () =>
    (session ??= services.sql.openSession(
      { workspaceId: ws.id, ddlGroupId: ws.ddl_policy_group_id, isAdmin: false, subject: { kind: 'user', userId: ctx.principal.user.id } },
      { statementTimeoutMs: services.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: services.config.SQL_MAX_ROWS },
    ));
  const end = async (ok: boolean) => {
    const open = await session?.catch(() => undefined);
    await open?.end(ok);
  };
  try {
    const result = await runtime.run({
      code: version.runtime === 'javascript' ? version.code.toString('utf8') : version.code,
      input,
      sources,
      caller: ctx.principal.user.id,
      workspaceId: ws.id,
      stfId: version.stf_id,
      secrets,
      limits: runLimits(version.runtime, services.config),
      ...(opts.sql === false ? {} : { sql: async (q: string) => (await openSession()).query(q) }),
    });
    await end(true);
    return { success: true, output: result.output, logs: result.logs, duration_ms: result.duration_ms };
  } catch (err) {
    await end(false);
    if (err instanceof StfError) {
      return { success: false, error: { kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) }, logs: err.logs };
    }
    if (err instanceof StfRuntimeUnavailable) {
      throw new ServiceError('SERVICE_UNAVAILABLE', `The ${version.runtime} runtime cannot run STFs now`, err.message);
    }
    throw err;
  }
}
