import {
  createTrigger,
  CreateTriggerSchema,
  deleteTrigger,
  getTrigger,
  listEvents,
  listTriggers,
  replayEvent,
  updateTrigger,
  UpdateTriggerSchema,
} from '@wds/workflows';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { PageQuery, pageEntries } from '../http/schemas.js';
import { WorkflowEvent, WorkflowTrigger } from '../http/views/index.js';

/** Event triggers of a workflow and their events (docs/automation.md): members read them, workflow editors manage them. */
const base = '/api/v1/workflows/:workflowId/triggers';
const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

export const triggerRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_workflow_triggers',
    response: v.array(WorkflowTrigger),
    summary: 'Event triggers of a workflow',
    query: PageQuery,
    handler: ({ db, access, params, query }) => listTriggers(db, access.workspace.id, params.workflowId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'create_workflow_trigger',
    status: 201,
    response: WorkflowTrigger,
    summary:
      'Run the workflow on an event of the workspace (workflow editors): { event: file_uploaded | document_changed | row_inserted | row_updated | row_deleted, table_name? (required for row events, refused otherwise), name?, paused? }; each event is the run\'s $input (row events: one per row the creator may select), runs as the creator, retried on failure and dead-lettered after TRIGGER_MAX_ATTEMPTS',
    body: CreateTriggerSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const trigger = await createTrigger(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.body, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: trigger.workflow_id, event: trigger.event, ...(trigger.table_name ? { table_name: trigger.table_name } : {}) } });
      return trigger;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:triggerId`,
    operation: 'get_workflow_trigger',
    response: WorkflowTrigger,
    summary: 'One event trigger of a workflow',
    handler: ({ db, access, params }) => getTrigger(db, access.workspace.id, params.workflowId, params.triggerId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: `${base}/:triggerId`,
    operation: 'update_workflow_trigger',
    response: WorkflowTrigger,
    summary: 'Rename or pause a trigger (workflow editors); a paused trigger records no new events and holds its pending ones',
    body: UpdateTriggerSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const trigger = await updateTrigger(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.triggerId, ctx.body, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: trigger.workflow_id, changed: Object.keys(ctx.body) } });
      return trigger;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: `${base}/:triggerId`,
    operation: 'delete_workflow_trigger',
    status: 204,
    summary: 'Delete a trigger and its events (workflow editors); their runs stay in the run history',
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const trigger = await deleteTrigger(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.triggerId);
      ctx.audit({ resourceId: trigger.id, details: { workflow_id: trigger.workflow_id } });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:triggerId/events`,
    operation: 'list_workflow_trigger_events',
    response: v.array(WorkflowEvent),
    summary: 'Events of a trigger, newest first, with their delivery state; `status=dead` lists the dead letters',
    query: v.object({ ...pageEntries, status: v.optional(v.picklist(['pending', 'running', 'succeeded', 'dead'], 'must be pending, running, succeeded or dead')) }),
    handler: ({ db, access, params, query, principal }) =>
      listEvents(db, access.workspace.id, params.workflowId, params.triggerId, query, principal.user.id),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: `${base}/:triggerId/events/:eventId/replay`,
    operation: 'replay_workflow_trigger_event',
    response: WorkflowEvent,
    summary: 'Replay a dead event (workflow editors): pending again with fresh attempts; 409 for an event that is not dead',
    openapi: { errors: [409] },
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const event = await replayEvent(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.triggerId, ctx.params.eventId, ctx.principal.user.id);
      ctx.audit({ resourceId: ctx.params.triggerId, details: { workflow_id: event.workflow_id, event_id: event.id } });
      return event;
    },
  }),
];
