import { ServiceError } from '@wds/errors';
import { DEFAULT_LIMITS, StfError } from '@wds/stf-runtime';
import { openSecrets, resolveVersion } from '@wds/stfs';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { Uuid } from '../http/schemas.js';

/**
 * POST /api/v1/stfs/instant-run: runs a version without a workflow, as the calling user (its sql() calls see what
 * the user's policies allow). A failure of the user's code is a 200 `{ success: false, error }` (DECISIONS §6).
 */
export const instantRunRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/stfs/instant-run',
    operation: 'instant_run_stf',
    summary: 'Run an STF version (by stf_version_id, or the newest of stf_id) without a workflow',
    auth: 'user',
    workspace: 'header',
    role: 'member',
    body: v.pipe(
      v.object({
        stf_version_id: v.optional(Uuid),
        stf_id: v.optional(Uuid),
        input: v.optional(v.unknown()),
        sources: v.optional(v.record(v.string(), v.unknown())),
      }),
      v.check((b) => (b.stf_version_id === undefined) !== (b.stf_id === undefined), 'give exactly one of stf_version_id and stf_id'),
    ),
    transaction: false,
    // A run changes nothing cached about the workspace.
    invalidates: 'none',
    handler: async (ctx) => {
      const { services } = ctx.c.var;
      const ws = ctx.access.workspace;
      const version = await resolveVersion(ctx.db, ws.id, { stfVersionId: ctx.body.stf_version_id, stfId: ctx.body.stf_id });
      const runtime = services.runtimes[version.runtime];
      if (!runtime) {
        throw new ServiceError('SERVICE_UNAVAILABLE', `The ${version.runtime} runtime is not available on this server`);
      }
      const secrets = services.secrets ? await openSecrets(ctx.db, services.secrets, version.stf_id) : {};
      const limits = { statementTimeoutMs: services.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: services.config.SQL_MAX_ROWS };
      const session = await services.sql.openSession(
        { workspaceId: ws.id, ddlGroupId: ws.ddl_policy_group_id, isAdmin: false, subject: { kind: 'user', userId: ctx.principal.user.id } },
        limits,
      );
      ctx.audit({ resourceId: version.stf_id, details: { stf_version_id: version.id, version: version.version, runtime: version.runtime } });
      try {
        const result = await runtime.run({
          code: version.runtime === 'javascript' ? version.code.toString('utf8') : version.code,
          input: ctx.body.input ?? null,
          sources: ctx.body.sources ?? {},
          caller: ctx.principal.user.id,
          secrets,
          limits: { ...DEFAULT_LIMITS, timeoutMs: services.config.STF_TIMEOUT_MS },
          sql: (q) => session.query(q),
        });
        await session.end(true);
        return { success: true, output: result.output, logs: result.logs, duration_ms: result.duration_ms };
      } catch (err) {
        await session.end(false);
        if (err instanceof StfError) {
          return { success: false, error: { kind: err.kind, message: err.message, ...(err.details ? { details: err.details } : {}) }, logs: err.logs };
        }
        throw err;
      }
    },
  }),
];
