import {
  createSchedule,
  CreateScheduleSchema,
  deleteSchedule,
  getSchedule,
  listSchedules,
  updateSchedule,
  UpdateScheduleSchema,
} from '@wds/workflows';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { PageQuery } from '../http/schemas.js';
import { WorkflowSchedule } from '../http/views/index.js';

/** Cron schedules of a workflow (docs/automation.md): members read them, workflow editors manage them. */
const base = '/api/v1/workflows/:workflowId/schedules';
const common = { auth: 'user', workspace: 'header', role: 'member' } as const;

export const scheduleRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_workflow_schedules',
    response: v.array(WorkflowSchedule),
    summary: 'Schedules of a workflow, oldest first',
    query: PageQuery,
    handler: ({ db, access, params, query }) => listSchedules(db, access.workspace.id, params.workflowId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'create_workflow_schedule',
    status: 201,
    response: WorkflowSchedule,
    summary:
      'Run the workflow on a cron schedule (workflow editors): { cron, timezone? (IANA, default UTC), input?, name?, paused? }; it runs as its creator, with `input` as $input, at most one run per tick across all processes; ticks missed while no process ran fire once',
    body: CreateScheduleSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const schedule = await createSchedule(ctx.db, ctx.services.config, ctx.access.workspace.id, ctx.params.workflowId, ctx.body, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: schedule.workflow_id, cron: schedule.cron, timezone: schedule.timezone } });
      return schedule;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:scheduleId`,
    operation: 'get_workflow_schedule',
    response: WorkflowSchedule,
    summary: 'One schedule of a workflow',
    handler: ({ db, access, params }) => getSchedule(db, access.workspace.id, params.workflowId, params.scheduleId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: `${base}/:scheduleId`,
    operation: 'update_workflow_schedule',
    response: WorkflowSchedule,
    summary:
      'Change a schedule (workflow editors): name, cron, timezone, input; `paused: true` pauses it, `paused: false` resumes it from the next tick after now',
    body: UpdateScheduleSchema,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const schedule = await updateSchedule(ctx.db, ctx.services.config, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.scheduleId, ctx.body, ctx.principal.user.id);
      ctx.audit({ details: { workflow_id: schedule.workflow_id, changed: Object.keys(ctx.body) } });
      return schedule;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: `${base}/:scheduleId`,
    operation: 'delete_workflow_schedule',
    status: 204,
    summary: 'Delete a schedule (workflow editors); its runs stay in the run history',
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const schedule = await deleteSchedule(ctx.db, ctx.access.workspace.id, ctx.params.workflowId, ctx.params.scheduleId);
      ctx.audit({ resourceId: schedule.id, details: { workflow_id: schedule.workflow_id } });
    },
  }),
];
