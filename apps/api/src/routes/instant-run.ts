import { OPERATIONS, recordAudit } from '@wds/audit';
import { instantRun } from '@wds/stf-runner';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { Uuid } from '../http/schemas.js';

/**
 * POST /api/v1/stfs/instant-run: runs a version without a workflow, as the calling user (its sql() calls see what
 * the user's policies allow). A failure of the user's code is a 200 `{ success: false, error }` (DECISIONS §6).
 *
 * The audit entry is the route's own: the same entry the pipeline writes for an operation, begun as soon as the
 * runtime has the run so that its round trip overlaps the run, and written before the answer. A run refused (429,
 * 503) has none, as before.
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
    auditsItself: true,
    // A run changes nothing cached about the workspace.
    invalidates: 'none',
    handler: async (ctx) => {
      const { principal, transport } = ctx;
      const { answer } = await instantRun(ctx.services, {
        workspace: ctx.access.workspace,
        userId: principal.user.id,
        stfVersionId: ctx.body.stf_version_id,
        stfId: ctx.body.stf_id,
        input: ctx.body.input ?? null,
        sources: ctx.body.sources ?? {},
        record: (version) =>
          recordAudit(ctx.services.db, {
            workspaceId: ctx.access.workspace.id,
            userId: principal.user.id,
            apiKeyId: principal.apiKeyId ?? null,
            action: 'instant_run_stf',
            resourceType: OPERATIONS.instant_run_stf.resource,
            resourceId: version.stf_id,
            details: { stf_version_id: version.id, version: version.version, runtime: version.runtime },
            requestId: transport.requestId,
            transport: transport.name,
          }),
      });
      return answer;
    },
  }),
];
