/**
 * rerun_workflow_run (issue 31): a new run of a recorded run's workflow with that run's `$input`, as the caller — as
 * if they executed the workflow now: they must be a member who may execute it, its steps run at the versions they
 * would run now, Table sources read with their policies and STF `sql()` has them as `$user_id`; never as the user
 * the recorded run ran as. It waits for the run, or queues it (async), exactly like execute_workflow; the new run
 * records which run it repeats (`rerun_of`). A run whose input is rows only the user it ran as may read (a row
 * trigger's event) is theirs alone to run again; a run that has not ended cannot be run again.
 */
import type { Uuid } from '@wds/db';
import { type ExecuteWorkflowRequest, executeWorkflowAs } from './authorize.js';
import type { RecordedRun, WithExecutions } from './execution.js';
import { queueWorkflowAs, type WorkflowJobDeps } from './queued.js';
import { rerunInput } from './store.js';

export interface RerunRequest extends Omit<ExecuteWorkflowRequest, 'input' | 'member' | 'rerunOf'> {
  /** A signed-in member (a run is only readable, and so repeatable, by one). */
  member: NonNullable<ExecuteWorkflowRequest['member']>;
  /** The recorded run whose `$input` the new run gets. */
  runId: Uuid;
  /** Queue the new run instead of waiting for it. */
  async: boolean;
}

/** What a rerun did: queued the new run (its id), or ran it (as execute_workflow answers it: runOutput). */
export type RerunOutcome = { queued: string } | { ran: RecordedRun };

export async function rerunWorkflowRunAs(deps: WorkflowJobDeps & WithExecutions, req: RerunRequest): Promise<RerunOutcome> {
  const { runId, async, ...rest } = req;
  const input = await rerunInput(deps.db, req.member.workspace.id, req.workflowId, runId, req.member.userId);
  const execute: ExecuteWorkflowRequest = { ...rest, input, rerunOf: runId };
  if (async) return { queued: await queueWorkflowAs(deps, execute) };
  return { ran: await executeWorkflowAs(deps, execute) };
}
