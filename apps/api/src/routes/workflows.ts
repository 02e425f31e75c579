import {
  cancelWorkflowRun,
  checkDefinition,
  createWorkflow,
  CreateWorkflowSchema,
  definitionOf,
  executeWorkflowAs,
  getRun,
  getWorkflow,
  listRuns,
  listWorkflows,
  patchedDefinition,
  queueWorkflowAs,
  rerunWorkflowRunAs,
  runOutput,
  softDeleteWorkflow,
  updateWorkflow,
  UpdateWorkflowSchema,
} from '@wds/workflows';
import { unauthorized } from '@wds/errors';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { Workflow, WorkflowRun, WorkflowRunSummary } from '../http/views/index.js';
import { defineRoute, type Transport, workspaceAccess } from '../http/route.js';
import { PageQuery, Uuid, boolQuery, pageEntries } from '../http/schemas.js';
import type { OpenApiExtras } from '../http/openapi.js';

const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

/** `async`: the query of the operations that run a workflow (execute, rerun). */
const RunQuery = v.object({ async: boolQuery('must be true or false', true) });

/** Whether the caller asked not to wait for the run: `Prefer: respond-async` (then it is applied), or `async=true`. */
function asksAsync(transport: Transport, query: { async?: string | undefined }): { async: boolean; prefer: boolean } {
  const prefer = /(^|[\s,;])respond-async([\s,;]|$)/i.test(transport.header('prefer') ?? '');
  return { async: prefer || query.async === 'true' || query.async === '1', prefer };
}

/**
 * What a waiting execution gets of its caller: the signal that cancels the run when the caller goes away (an MCP call
 * cancelled or out of time, an HTTP client disconnected: docs/workflows.md), and a progress report per step ended.
 */
function waiting(transport: Transport) {
  return {
    signal: transport.signal,
    onStepEnd: (done: number, total: number) => transport.progress?.(done, total, `${done} of ${total} steps ended`),
  };
}

/** 202 with the run queued: its id, where to read it, and the preference applied when asked with Prefer. */
function queuedAnswer(workflowId: string, runId: string, prefer: boolean): Response {
  const headers: Record<string, string> = { 'x-workflow-run-id': runId, location: `/api/v1/workflows/${workflowId}/runs/${runId}` };
  if (prefer) headers['preference-applied'] = 'respond-async';
  return Response.json({ run_id: runId, workflow_id: workflowId, status: 'queued' }, { status: 202, headers });
}

/** What the operations that run a workflow state: the result (200) or the run queued (202), and the Prefer header. */
const runAnswers = (what: string): OpenApiExtras => ({
  responses: {
    '200': {
      description: "The last STF step's output",
      content: { 'application/json': { schema: { description: "Any JSON value: the last STF step's output" } } },
      headers: { 'X-Workflow-Run-Id': { schema: { type: 'string' }, description: `The ${what} (GET …/runs lists it)` } },
    },
    '202': {
      description: 'Queued (Prefer: respond-async, or async=true): the run starts on a process of the job queue',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/WorkflowRunQueued' } } },
      headers: {
        'X-Workflow-Run-Id': { schema: { type: 'string' }, description: `The ${what}` },
        Location: { schema: { type: 'string' }, description: 'The run: GET it for its state and result' },
        'Preference-Applied': { schema: { type: 'string' }, description: '`respond-async` when asked with Prefer' },
      },
    },
  },
  headers: [{ name: 'Prefer', description: '`respond-async`: answer 202 at once and run in the background', schema: { type: 'string' } }],
  errors: [409, 422],
});

export const workflowRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/workflows',
    operation: 'list_workflows',
    response: v.array(Workflow),
    summary: 'Workflows of the workspace (`name` narrows to an exact name)',
    query: v.object({ ...PageQuery.entries, name: v.optional(v.pipe(v.string(), v.maxLength(255))) }),
    handler: ({ db, access, query }) => listWorkflows(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/workflows',
    operation: 'create_workflow',
    response: Workflow,
    summary: 'Create a workflow (workflow editors); its steps are checked against this workspace',
    body: CreateWorkflowSchema,
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      await checkDefinition(ctx.db, ctx.access.workspace.id, definitionOf(ctx.body));
      const w = await createWorkflow(ctx.db, ctx.access.workspace.id, ctx.body, ctx.principal.user.id);
      ctx.audit({ resourceId: w.id, details: { name: w.name, stf_steps: w.stf_steps.length, effect_steps: w.effect_steps.length } });
      return w;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/workflows/:workflowId',
    operation: 'get_workflow',
    response: Workflow,
    summary: 'A workflow',
    handler: ({ db, access, params }) => getWorkflow(db, access.workspace.id, params.workflowId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: '/api/v1/workflows/:workflowId',
    operation: 'update_workflow',
    response: Workflow,
    summary: "Change a workflow (workflow editors); step lists given replace the saved ones. Whoever changes its steps takes over its schedules, hooks and triggers (a row trigger's pending events die as owner_changed)",
    body: UpdateWorkflowSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const id = ctx.params.workflowId;
      const current = await getWorkflow(ctx.db, ctx.access.workspace.id, id);
      const definition = patchedDefinition(current, ctx.body);
      await checkDefinition(ctx.db, ctx.access.workspace.id, definition);
      const w = await updateWorkflow(ctx.db, ctx.access.workspace.id, id, ctx.body, definition, ctx.principal.user.id);
      ctx.audit({ resourceId: id, details: { changed: Object.keys(ctx.body) } });
      return w;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: '/api/v1/workflows/:workflowId',
    operation: 'delete_workflow',
    summary: 'Soft-delete a workflow (workflow editors)',
    status: 204,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const w = await softDeleteWorkflow(ctx.db, ctx.access.workspace.id, ctx.params.workflowId);
      ctx.audit({ resourceId: w.id, details: { name: w.name } });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workflows/:workflowId/execute',
    operation: 'execute_workflow',
    response: v.unknown(),
    summary:
      'Run a workflow with the body as $input; answers the last STF step\'s output (422 RUNTIME_ERROR naming the failed step; 409 when cancelled). With `Prefer: respond-async` or `async=true`: 202 with the run id at once, the run queued (GET …/runs/{runId} shows it). X-Workspace-ID required; Authorization optional only for workflows that allow anonymous execution',
    // The workspace comes from X-Workspace-ID, but the caller may be anonymous: resolved in the handler.
    auth: 'optional',
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    // The body is `$input`, any JSON value; an empty body is null.
    body: v.unknown(),
    query: RunQuery,
    mcp: { bodyName: 'input', workspace: true, stopsWhenAborted: true },
    openapi: runAnswers('run'),
    handler: async (ctx) => {
      const { services, transport, principal, body } = ctx;
      const workspaceId = transport.workspaceId();
      // A signed-in caller must be a member (404/403, and the workspace's rate limit); who else may run it is the
      // workflow's to say (@wds/workflows authorizeExecution).
      const member = principal
        ? { userId: principal.user.id, workspace: (await workspaceAccess(services, transport, principal, workspaceId)).workspace }
        : null;
      const workflowId = ctx.params.workflowId;
      const request = {
        workspaceId,
        workflowId,
        member,
        input: body,
        audit: { apiKeyId: principal?.apiKeyId ?? null, action: 'execute_workflow', requestId: transport.requestId, transport: transport.name },
      };
      const asked = asksAsync(transport, ctx.query);
      if (asked.async) {
        // Only members can read the run it starts, and a run queued is work for everyone's queue: signed in only.
        if (!principal) throw unauthorized('Asynchronous execution needs a signed-in member');
        return queuedAnswer(workflowId, await queueWorkflowAs(services, request), asked.prefer);
      }
      // A waiting execution is cancelled when its caller goes away, and reports each step that ended.
      const run = await executeWorkflowAs(services, { ...request, ...waiting(transport) });
      transport.setHeader('X-Workflow-Run-Id', run.runId);
      return runOutput(run);
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/workflows/:workflowId/runs',
    operation: 'list_workflow_runs',
    response: v.array(WorkflowRunSummary),
    summary: "Runs of a workflow, newest first (status, trigger, per-step records, timings; without input and output); `status`, `trigger` and `trigger_id` filter them. A row trigger's run shows its errors' messages only to the user it ran as",
    query: v.object({
      ...pageEntries,
      status: v.optional(v.picklist(['queued', 'running', 'succeeded', 'failed', 'cancelled'], 'must be queued, running, succeeded, failed or cancelled')),
      trigger: v.optional(v.picklist(['request', 'async', 'schedule', 'webhook', 'event'], 'must be request, async, schedule, webhook or event')),
      trigger_id: v.optional(Uuid),
    }),
    handler: async ({ db, access, params, query, principal }) =>
      listRuns(db, access.workspace.id, params.workflowId, query, principal.user.id),
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/api/v1/workflows/:workflowId/runs/:runId',
    operation: 'get_workflow_run',
    response: WorkflowRun,
    summary: "One run of a workflow, with its input, output, error and per-step records, each with the step's input and output (secrets masked; over WORKFLOW_STEP_DATA_MAX_BYTES a `{ truncated, bytes, preview }` marker). A run made of rows only the user it ran as may read (a row trigger's, or one whose Table step read with their policies) is whole only for that user: others get its input without the rows (`redacted: true`), no output, no step input or output (null), and errors without their messages",
    handler: async ({ db, access, params, principal }) =>
      getRun(db, access.workspace.id, params.workflowId, params.runId, principal.user.id),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/workflows/:workflowId/runs/:runId/cancel',
    operation: 'cancel_workflow_run',
    response: WorkflowRun,
    summary:
      'Cancel a run (its executor, or workflow editors): a queued run ends `cancelled` at once; a running one skips every step not yet started and ends `cancelled` (a step under way ends by its own limits); 409 for a run that has ended. Answers the run as it is now',
    // Each change is one conditional statement; the audit entry follows it.
    transaction: false,
    invalidates: 'none',
    openapi: { errors: [409] },
    handler: async (ctx) => {
      const { services, access, params, principal } = ctx;
      const workflowId = params.workflowId;
      const runId = params.runId;
      const run = await getRun(services.db, access.workspace.id, workflowId, runId);
      if (run.executed_by !== principal.user.id) await assertWorkflowEditor(ctx);
      ctx.audit({ resourceId: runId, details: { workflow_id: workflowId, status: run.status } });
      return cancelWorkflowRun(services, access.workspace.id, workflowId, runId, principal.user.id);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/api/v1/workflows/:workflowId/runs/:runId/rerun',
    operation: 'rerun_workflow_run',
    response: v.unknown(),
    summary:
      "Run a workflow again with a recorded run's $input, as the caller now (their right to execute it, their policies, the versions they would run), never as the user the run ran as; answers as execute does (the result, or 202 with `Prefer: respond-async` or `async=true`). 403 for a run whose input is rows only the user it ran as may read, 409 for a run that has not ended",
    // The execution writes the new run and its audit entry (rerun_workflow_run, with rerun_of) itself.
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    query: RunQuery,
    openapi: runAnswers('new run'),
    mcp: { stopsWhenAborted: true },
    handler: async ({ services, transport, access, params, principal, query }) => {
      const asked = asksAsync(transport, query);
      const outcome = await rerunWorkflowRunAs(services, {
        workspaceId: access.workspace.id,
        workflowId: params.workflowId,
        runId: params.runId,
        member: { userId: principal.user.id, workspace: access.workspace },
        async: asked.async,
        ...(asked.async ? {} : waiting(transport)),
        audit: { apiKeyId: principal.apiKeyId ?? null, action: 'rerun_workflow_run', requestId: transport.requestId, transport: transport.name },
      });
      if ('queued' in outcome) return queuedAnswer(params.workflowId, outcome.queued, asked.prefer);
      transport.setHeader('X-Workflow-Run-Id', outcome.ran.runId);
      return runOutput(outcome.ran);
    },
  }),
];
