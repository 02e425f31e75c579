/**
 * Cron schedules of workflows (issue 19). A schedule runs its workflow as its creator with a fixed `$input` at each
 * tick of its cron expression in its time zone. Every process with background work asks, every SCHEDULE_TICK_MS,
 * for the schedules whose `next_run_at` has come; it locks each (FOR UPDATE SKIP LOCKED), records the run as queued
 * (trigger `schedule`) with its audit entry, and moves `next_run_at` to the first tick after now — all in one
 * transaction, so a tick fires once however many processes ask. Ticks missed while no process ran are coalesced into
 * that one run (docs/automation.md). The run then goes through the workflow-runs queue like an async execute.
 */
import { type Db, newId, sql, type WorkflowScheduleRow, type Uuid } from '@wds/db';
import { validationError } from '@wds/errors';
import { Cron } from 'croner';
import * as v from 'valibot';
import { enqueueRun, type WorkflowJobDeps } from './queued.js';
import { automationRows } from './automations.js';
import { runOrigin } from './keys.js';
import { countQueuedRuns, getWorkflow, queueRun } from './store.js';
import type { WorkflowScheduleView } from './views.js';

/** How often the due schedules are asked for, and the shortest interval a schedule may have. */
export interface ScheduleConfig {
  SCHEDULE_MIN_INTERVAL_MS: number;
  WORKFLOW_WORKSPACE_QUEUED_MAX: number;
}

const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255));
const CronText = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200));
const TimeZone = v.pipe(v.string(), v.minLength(1), v.maxLength(64));

export const CreateScheduleSchema = v.strictObject({
  /** Defaults to the cron expression. */
  name: v.optional(Name),
  cron: CronText,
  /** An IANA time zone; default UTC. */
  timezone: v.optional(TimeZone, 'UTC'),
  /** The run's `$input` (any JSON; default null). */
  input: v.optional(v.unknown()),
  paused: v.optional(v.boolean(), false),
});
export type CreateSchedule = v.InferOutput<typeof CreateScheduleSchema>;

export const UpdateScheduleSchema = v.strictObject({
  name: v.optional(Name),
  cron: v.optional(CronText),
  timezone: v.optional(TimeZone),
  input: v.optional(v.unknown()),
  /** true pauses it (no tick fires); false resumes it from the next tick after now. */
  paused: v.optional(v.boolean()),
});
export type UpdateSchedule = v.InferOutput<typeof UpdateScheduleSchema>;

const toView = (r: WorkflowScheduleRow): WorkflowScheduleView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  workflow_id: r.workflow_id,
  name: r.name,
  cron: r.cron,
  timezone: r.timezone,
  input: r.input ?? null,
  paused: r.paused,
  created_by: r.created_by,
  next_run_at: r.paused ? null : r.next_run_at.toISOString(),
  last_run_at: r.last_run_at ? r.last_run_at.toISOString() : null,
  last_run_id: r.last_run_id,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

/** Ticks of a cron expression in a time zone; 400 for an expression or zone that is not one. */
function cronOf(expression: string, timezone: string): Cron {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw validationError(`timezone: ${JSON.stringify(timezone)} is not an IANA time zone (e.g. "UTC", "Europe/Berlin")`);
  }
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, paused: true });
  } catch (err) {
    throw validationError(`cron: ${(err as Error).message}`);
  }
  return cron;
}

/** How many upcoming ticks are checked against the shortest interval (a pattern's gaps may vary). */
const GAPS_CHECKED = 20;

/**
 * Checks a schedule's expression and zone: it must tick (at all, and again), and no two of its next ticks may be
 * closer than `minIntervalMs`. The first tick after `from`.
 */
export function checkSchedule(expression: string, timezone: string, minIntervalMs: number, from = new Date()): Date {
  const cron = cronOf(expression, timezone);
  const ticks = cron.nextRuns(GAPS_CHECKED + 1, from);
  const first = ticks[0];
  if (!first) throw validationError('cron: the expression never fires');
  for (let i = 1; i < ticks.length; i++) {
    const gap = (ticks[i] as Date).getTime() - (ticks[i - 1] as Date).getTime();
    if (gap < minIntervalMs) {
      throw validationError(`cron: fires ${gap} ms apart; a schedule may fire at most every ${minIntervalMs} ms (SCHEDULE_MIN_INTERVAL_MS)`);
    }
  }
  return first;
}

/** The first tick strictly after `after`, or undefined when the expression has no more. */
function nextTick(row: Pick<WorkflowScheduleRow, 'cron' | 'timezone'>, after: Date): Date | undefined {
  return new Cron(row.cron, { timezone: row.timezone, paused: true }).nextRun(after) ?? undefined;
}

const schedules = automationRows('platform.workflow_schedules', 'Schedule');

export async function listSchedules(db: Db, workspaceId: string, workflowId: Uuid, page: { limit: number; offset: number }): Promise<WorkflowScheduleView[]> {
  return (await schedules.list(db, workspaceId, workflowId, page)).map(toView);
}

export async function getSchedule(db: Db, workspaceId: string, workflowId: Uuid, scheduleId: Uuid): Promise<WorkflowScheduleView> {
  return toView(await schedules.get(db, workspaceId, workflowId, scheduleId));
}

export async function createSchedule(
  db: Db,
  config: Pick<ScheduleConfig, 'SCHEDULE_MIN_INTERVAL_MS'>,
  workspaceId: string,
  workflowId: Uuid,
  s: CreateSchedule,
  createdBy: string,
): Promise<WorkflowScheduleView> {
  await getWorkflow(db, workspaceId, workflowId);
  const first = checkSchedule(s.cron, s.timezone, config.SCHEDULE_MIN_INTERVAL_MS);
  const row = await db
    .insertInto('platform.workflow_schedules')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      workflow_id: workflowId,
      name: s.name ?? s.cron,
      cron: s.cron,
      timezone: s.timezone,
      input: JSON.stringify(s.input ?? null),
      paused: s.paused,
      created_by: createdBy,
      next_run_at: first,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toView(row);
}

/** PATCH: a new expression or zone, or a resume, starts again from the first tick after now; it runs as its changer. */
export async function updateSchedule(
  db: Db,
  config: Pick<ScheduleConfig, 'SCHEDULE_MIN_INTERVAL_MS'>,
  workspaceId: string,
  workflowId: Uuid,
  scheduleId: Uuid,
  patch: UpdateSchedule,
  /** Who changes it: from now on the user it runs as (an editor cannot make another's schedule run their way). */
  changedBy: string,
): Promise<WorkflowScheduleView> {
  const current = await schedules.get(db, workspaceId, workflowId, scheduleId);
  const cron = patch.cron ?? current.cron;
  const timezone = patch.timezone ?? current.timezone;
  const retimed = patch.cron !== undefined || patch.timezone !== undefined || (patch.paused === false && current.paused);
  const next = retimed ? checkSchedule(cron, timezone, config.SCHEDULE_MIN_INTERVAL_MS) : undefined;
  const row = await schedules.update(db, current.id, patch, changedBy, {
    ...(patch.input !== undefined ? { input: JSON.stringify(patch.input ?? null) } : {}),
    ...(next ? { cron, timezone, next_run_at: next } : {}),
  });
  return toView(row);
}

export async function deleteSchedule(db: Db, workspaceId: string, workflowId: Uuid, scheduleId: Uuid): Promise<WorkflowScheduleView> {
  return toView(await schedules.remove(db, workspaceId, workflowId, scheduleId));
}

/** How many due schedules one round fires at most (the next round takes the rest). */
const ROUND = 100;

/**
 * Fires the due schedules once: for each (locked, so another process skips it), a queued run as its creator with
 * its audit entry, and `next_run_at` moved past now (as the database tells the time) — in one transaction; then the
 * runs are queued. Schedules of deleted workflows or workspaces, and those whose expression no longer parses, are
 * paused instead. A workspace at its queued-run cap skips the tick (logged). Returns the runs queued.
 *
 * `now` stands in for the database's clock (tests fire the ticks of seconds to come without waiting for them).
 */
export async function fireDueSchedules(deps: WorkflowJobDeps & { config: ScheduleConfig }, opts: { now?: Date } = {}): Promise<string[]> {
  const queued: string[] = [];
  const clock = opts.now ? sql<Date>`${opts.now.toISOString()}::timestamptz` : sql<Date>`now()`;
  await deps.db.transaction().execute(async (tx) => {
    const due = await tx
      .selectFrom('platform.workflow_schedules as s')
      .innerJoin('platform.workflows as w', 'w.id', 's.workflow_id')
      .innerJoin('platform.workspaces as ws', 'ws.id', 's.workspace_id')
      .selectAll('s')
      .select([clock.as('db_now'), sql<boolean>`w.deleted_at IS NOT NULL OR ws.deleted_at IS NOT NULL`.as('gone')])
      .where('s.paused', '=', false)
      .where('s.next_run_at', '<=', clock)
      .orderBy('s.next_run_at')
      .limit(ROUND)
      .forUpdate('s')
      .skipLocked()
      .execute();
    for (const s of due) {
      // The schedule of a deleted workflow or workspace pauses, so rounds do not keep finding it.
      if (s.gone) {
        await tx.updateTable('platform.workflow_schedules').set({ paused: true }).where('id', '=', s.id).execute();
        continue;
      }
      // The database's clock decides what is due, so it also decides what comes next: strictly after the tick fired
      // and after now as the database sees it (a process whose clock is behind must not fire the same tick again).
      const after = new Date(Math.max(s.db_now.getTime(), s.next_run_at.getTime()));
      let next: Date | undefined;
      try {
        next = nextTick(s, after);
      } catch (err) {
        // An expression that stopped parsing (a library or time zone data change) pauses its schedule, not the round.
        deps.logger.warn({ schedule_id: s.id, err: (err as Error).message }, 'schedule paused: its expression no longer parses');
        await tx.updateTable('platform.workflow_schedules').set({ paused: true }).where('id', '=', s.id).execute();
        continue;
      }
      const now = s.db_now;
      const tick = s.next_run_at;
      let runId: string | null = null;
      if ((await countQueuedRuns(tx, s.workspace_id)) >= deps.config.WORKFLOW_WORKSPACE_QUEUED_MAX) {
        deps.logger.warn({ schedule_id: s.id, workspace_id: s.workspace_id }, 'schedule tick skipped: the workspace has too many runs queued');
      } else {
        runId = await queueRun(
          tx,
          {
            workflow: { id: s.workflow_id, workspace_id: s.workspace_id },
            input: s.input,
            executedBy: s.created_by,
            trigger: 'schedule',
            triggerId: s.id,
            origin: runOrigin.schedule(s.id, tick),
          },
          (id) => ({
            workspaceId: s.workspace_id,
            userId: s.created_by,
            apiKeyId: null,
            action: 'execute_workflow',
            resourceType: 'workflow',
            resourceId: s.workflow_id,
            details: { run_id: id, status: 'queued', trigger: 'schedule', schedule_id: s.id, tick: tick.toISOString(), late_ms: now.getTime() - tick.getTime() },
          }),
        );
        queued.push(runId);
      }
      await tx
        .updateTable('platform.workflow_schedules')
        .set({
          // An expression with no more ticks (a year field in the past) pauses.
          ...(next ? { next_run_at: next } : { paused: true }),
          last_run_at: tick,
          ...(runId ? { last_run_id: runId } : {}),
        })
        .where('id', '=', s.id)
        .execute();
    }
  });
  for (const runId of queued) await enqueueRun(deps, runId);
  return queued;
}
