/**
 * Who may execute a workflow. A signed-in member of the workspace may execute any live workflow of it, and learns
 * why one is missing (404). Anyone else may execute only a workflow that allows anonymous execution, and learns
 * nothing about what exists: no such workspace, no such workflow and not allowed are the same 401.
 */
import type { Db, Uuid } from '@wds/db';
import { unauthorized } from '@wds/errors';
import type { RunWorkspace } from '@wds/stf-runner';
import type { TopicCache } from '@wds/cache';
import { findLiveWorkspace } from '@wds/workspaces';
import { cachedWorkflow } from './cached.js';
import type { ExecutionAudit, RecordedRun, WithExecutions } from './execution.js';
import type { WorkflowExecutionDeps } from './runners.js';
import type { WorkflowView } from './views.js';

/** A signed-in caller (their membership of the workspace already checked), or null for an anonymous one. */
export type ExecutingMember = { userId: string; workspace: RunWorkspace } | null;

export async function authorizeExecution(
  db: Db,
  req: { workspaceId: string; workflowId: Uuid; member: ExecutingMember },
  /** The process's run cache, for the workflow (cached.ts); without it the workflow is read every time. */
  cache?: TopicCache,
): Promise<{ workspace: RunWorkspace; workflow: WorkflowView }> {
  const { member } = req;
  const workspace = member ? member.workspace : await findLiveWorkspace(db, req.workspaceId);
  if (!workspace) throw unauthorized();
  const workflow = await cachedWorkflow(db, cache, workspace.id, req.workflowId).catch((err: unknown) => {
    if (!member) throw unauthorized();
    throw err;
  });
  if (!member && !workflow.allow_anonymous_execute) throw unauthorized();
  return { workspace, workflow };
}

export interface ExecuteWorkflowRequest {
  workspaceId: string;
  workflowId: Uuid;
  member: ExecutingMember;
  /** `$input`. */
  input: unknown;
  /** Who else and through what, for the audit entry; its workspace, user and resource are the execution's. */
  audit: Pick<ExecutionAudit, 'apiKeyId' | 'action' | 'requestId' | 'transport'>;
  /** The recorded run this execution runs again (rerun.ts), kept with the new run. */
  rerunOf?: string | undefined;
  /** ExecutionRequest.signal: the caller waiting for the run went away (a waiting execution only). */
  signal?: AbortSignal | undefined;
  /** ExecutionRequest.onStepEnd. */
  onStepEnd?: ((done: number, total: number) => void) | undefined;
}

/** execute_workflow: authorize the caller, then run and record the execution (its audit entry with it). */
export async function executeWorkflowAs(
  deps: Pick<WorkflowExecutionDeps, 'db' | 'runCache'> & WithExecutions,
  req: ExecuteWorkflowRequest,
): Promise<RecordedRun> {
  const { workspace, workflow } = await authorizeExecution(deps.db, req, deps.runCache);
  const executedBy = req.member?.userId ?? null;
  return deps.executions.execute({
    workspace,
    workflow,
    input: req.input,
    executedBy,
    audit: { ...req.audit, workspaceId: workspace.id, userId: executedBy, resourceType: 'workflow', resourceId: workflow.id },
    rerunOf: req.rerunOf,
    signal: req.signal,
    onStepEnd: req.onStepEnd,
  });
}
