import { OPERATIONS, recordAudit } from '@wds/audit';
import { decodeStfCode, instantRun, instantRunCode } from '@wds/stf-runner';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { RunAnswer } from '../http/views/index.js';
import { StfCode, StfRuntime, Uuid, withJsonSchema } from '../http/schemas.js';

/** The fields of an instant run (one of stf_version_id, stf_id and code + runtime: the checks below). */
const RunFields = v.object({
  stf_version_id: v.optional(Uuid),
  stf_id: v.optional(Uuid),
  runtime: v.optional(StfRuntime),
  code: v.optional(StfCode),
  input: v.optional(v.unknown()),
  sources: v.optional(v.record(v.string(), v.unknown())),
});

/**
 * POST /api/v1/stfs/instant-run: runs a version without a workflow, as the calling user (its sql() calls see what
 * the user's policies allow). A failure of the user's code is a 200 `{ success: false, error }`
 * (docs/stfs.md#instant-run).
 *
 * Code mode (the origin's development loop): `{ runtime, code: <base64>, input, sources }` runs code that is not
 * saved, checked as a save would check it (a refusal is the save's 400), with no secrets. It needs what saving code
 * needs (workflow editor): a docker config starts an image, and every check of code uses the process's one compile
 * worker, which members who cannot save code have never been able to occupy.
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
    response: RunAnswer,
    summary:
      'Run an STF version (by stf_version_id, or the newest of stf_id) without a workflow, or unsaved code ({ runtime, code: base64 })',
    auth: 'user',
    workspace: 'header',
    role: 'member',
    body: v.pipe(
      RunFields,
      withJsonSchema(
        v.check<v.InferOutput<typeof RunFields>, string>(
          (b) => [b.stf_version_id, b.stf_id, b.code].filter((x) => x !== undefined).length === 1,
          'give exactly one of stf_version_id, stf_id and code',
        ),
        { oneOf: [{ required: ['stf_version_id'] }, { required: ['stf_id'] }, { required: ['code'] }] },
      ),
      withJsonSchema(v.check<v.InferOutput<typeof RunFields>, string>((b) => (b.code === undefined) === (b.runtime === undefined), 'runtime goes with code, and code with runtime'), {
        dependentRequired: { code: ['runtime'], runtime: ['code'] },
      }),
    ),
    transaction: false,
    auditsItself: true,
    // A run changes nothing cached about the workspace.
    invalidates: 'none',
    mcp: { stopsWhenAborted: true },
    handler: async (ctx) => {
      const { principal, transport, body } = ctx;
      const audit = (resourceId: string | null, details: Record<string, unknown>) =>
        recordAudit(ctx.services.db, {
          workspaceId: ctx.access.workspace.id,
          userId: principal.user.id,
          apiKeyId: principal.apiKeyId ?? null,
          action: 'instant_run_stf',
          resourceType: OPERATIONS.instant_run_stf.resource,
          resourceId,
          details,
          requestId: transport.requestId,
          transport: transport.name,
        });
      // The run stops when nobody waits for it (an MCP call cancelled or out of time, an HTTP client gone), and tells
      // an MCP caller that asked for progress when it starts and when it ended.
      const run = {
        workspace: ctx.access.workspace,
        userId: principal.user.id,
        input: body.input ?? null,
        sources: body.sources ?? {},
        signal: transport.signal,
      };
      const started = () => transport.progress?.(0, 1, 'the STF run started');
      const ended = <T>(result: T): T => {
        transport.progress?.(1, 1, 'the STF run ended');
        return result;
      };
      if (body.code !== undefined && body.runtime !== undefined) {
        await assertWorkflowEditor(ctx);
        const code = await decodeStfCode(ctx.services.config, body.runtime, body.code);
        const { answer } = await instantRunCode(ctx.services, {
          ...run,
          runtime: body.runtime,
          code,
          record: (ran) => {
            started();
            return audit(null, { ...ran, unsaved: true });
          },
        });
        return ended(answer);
      }
      const { answer } = await instantRun(ctx.services, {
        ...run,
        stfVersionId: body.stf_version_id,
        stfId: body.stf_id,
        record: (version) => {
          started();
          return audit(version.stf_id, { stf_version_id: version.id, version: version.version, runtime: version.runtime });
        },
      });
      return ended(answer);
    },
  }),
];
