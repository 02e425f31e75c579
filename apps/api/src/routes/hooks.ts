import { ServiceError } from '@wds/errors';
import {
  createHook,
  CreateHookSchema,
  deleteHook,
  deliverHook,
  getHook,
  listHooks,
  rotateHookSecret,
  updateHook,
  UpdateHookSchema,
} from '@wds/workflows';
import type { Readable } from 'node:stream';
import * as v from 'valibot';
import { readCapped } from '../http/body-limit.js';
import { assertWorkflowEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { PageQuery } from '../http/schemas.js';
import { HookDelivered, WorkflowHook, WorkflowHookWithSecret } from '../http/views/index.js';

/** Inbound webhooks of a workflow (docs/automation.md): members read them, workflow editors manage them. */
const base = '/api/v1/workflows/:workflowId/hooks';
const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

/** The raw body, at most `max` bytes (413 beyond), whatever its framing: the signature is over these bytes exactly. */
const readRaw = (stream: Readable, max: number): Promise<Buffer> =>
  readCapped(stream, max, () => new ServiceError('PAYLOAD_TOO_LARGE', 'Request body too large', `a hook delivery is at most ${max} bytes (HOOK_MAX_BODY_BYTES)`));

export const hookRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_workflow_hooks',
    response: v.array(WorkflowHook),
    summary: 'Inbound webhooks of a workflow (never their secrets)',
    query: PageQuery,
    handler: ({ db, access, params, query }) => listHooks(db, access.workspace.id, params.workflowId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'create_workflow_hook',
    status: 201,
    response: WorkflowHookWithSecret,
    summary:
      'Create an inbound webhook (workflow editors): { name?, paused? } → the hook with its `path` and its signing `secret`, shown this once. Deliveries run the workflow as the creator',
    body: CreateHookSchema,
    openapi: { errors: [503] },
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const hook = await createHook(ctx.db, ctx.services.secrets, ctx.access.workspace.id, ctx.params.workflowId, ctx.body, ctx.principal.user.id);
      ctx.audit({ resourceId: hook.id, details: { workflow_id: hook.workflow_id } });
      return hook;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:hookId`,
    operation: 'get_workflow_hook',
    response: WorkflowHook,
    summary: 'One inbound webhook of a workflow (never its secret)',
    handler: ({ db, access, params }) => getHook(db, access.workspace.id, params.workflowId, params.hookId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: `${base}/:hookId`,
    operation: 'update_workflow_hook',
    response: WorkflowHook,
    summary: 'Rename or pause a webhook (workflow editors; its deliveries then run as the changer); a paused hook answers deliveries 401',
    body: UpdateHookSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const hook = await updateHook(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.hookId, ctx.body, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: hook.workflow_id, changed: Object.keys(ctx.body) } });
      return hook;
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: `${base}/:hookId/rotate-secret`,
    operation: 'rotate_workflow_hook_secret',
    response: WorkflowHookWithSecret,
    summary: 'A new signing secret for a webhook (workflow editors), shown this once; the old one stops working at once; its deliveries then run as the rotator',
    openapi: { errors: [503] },
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const hook = await rotateHookSecret(ctx.db, ctx.services.secrets, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.hookId, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: hook.workflow_id } });
      return hook;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: `${base}/:hookId`,
    operation: 'delete_workflow_hook',
    status: 204,
    summary: 'Delete a webhook (workflow editors): its URL answers 401 from then on; its runs stay in the run history',
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const hook = await deleteHook(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.hookId);
      ctx.audit({ resourceId: hook.id, details: { workflow_id: hook.workflow_id } });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/hooks/:hookId',
    operation: 'deliver_workflow_hook',
    status: 202,
    response: HookDelivered,
    summary:
      'Deliver an event to a workflow webhook (no credential, no X-Workspace-ID): signed with the hook\'s secret — `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>` or `Stripe-Signature: t=<unix>,v1=<hex HMAC of "<t>.<body>">` — with a JSON or form body, the run\'s $input; `X-GitHub-Delivery`, `X-Delivery-Id` or `Idempotency-Key` de-duplicates redeliveries. 202 with the queued run; 401 for anything not signed by a live hook',
    auth: 'none',
    mcp: { exclude: 'a webhook is called by the outside service that signs it; agents run the workflow with execute_workflow' },
    // The run and the delivery are recorded in one transaction of the package; the audit entry follows.
    transaction: false,
    invalidates: 'none',
    openapi: {
      requestBody: {
        description: 'The event: JSON, or form fields (a repeated field becomes a list)',
        content: {
          'application/json': { schema: {} },
          'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: { type: 'string' } } },
        },
      },
      headers: [
        { name: 'X-Hub-Signature-256', description: '`sha256=` and the hex HMAC-SHA256 of the raw body with the hook secret (GitHub)', schema: { type: 'string' } },
        { name: 'Stripe-Signature', description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, within 5 minutes (Stripe)', schema: { type: 'string' } },
        { name: 'X-GitHub-Delivery', description: 'A delivery id: a redelivery answers the first run', schema: { type: 'string' } },
        { name: 'X-Delivery-Id', description: 'A delivery id (as X-GitHub-Delivery)', schema: { type: 'string' } },
        { name: 'Idempotency-Key', description: 'A delivery id (as X-GitHub-Delivery)', schema: { type: 'string' } },
      ],
      errors: [401, 413, 415],
    },
    handler: async (ctx) => {
      const { services, transport, params } = ctx;
      const delivered = await deliverHook(services, {
        hookId: params.hookId,
        body: await readRaw(transport.bodyStream(), services.config.HOOK_MAX_BODY_BYTES),
        contentType: transport.header('content-type'),
        header: (name) => transport.header(name),
        admit: (workspaceId) => transport.limitWorkspace(workspaceId),
      });
      ctx.audit({
        workspaceId: delivered.workspaceId,
        resourceId: params.hookId,
        details: { run_id: delivered.run_id, workflow_id: delivered.workflowId, duplicate: delivered.duplicate, delivery_id: delivered.deliveryId ?? null },
      });
      return { run_id: delivered.run_id, status: delivered.status, duplicate: delivered.duplicate };
    },
  }),
];
