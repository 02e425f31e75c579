/**
 * One workflow execution, with the service's real step runners: STFs in their runtimes under the STF's policy
 * subject (`$user_id` = the executing user, NULL when anonymous — DECISIONS §5), effects through the effect runner
 * and the SSRF guard, Fetch sources through the same guard, Library sources as the executing user's rows. The run
 * is recorded when it starts, as `running` and owned by this process, which keeps it alive with a heartbeat (and the
 * steps finished so far) until it ends; it is then recorded with its audit entry. If the process dies first, a
 * maintenance sweep fails it as interrupted (@wds/workflows liveness.ts).
 */
import { EffectError, fetchSource, runEffect } from '@wds/effect-runner';
import {
  type ExecutionResult,
  executeWorkflow,
  finishRun,
  newRunId,
  type InputStep,
  resolveEffectSteps,
  resolveStfSteps,
  RunHeartbeat,
  type StepRecord,
  type StepRunners,
  startRun,
  WorkflowConcurrency,
  type WorkflowView,
} from '@wds/workflows';
import type { AuditEntry } from '@wds/audit';
import { newId } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { getFile } from '@wds/storage';
import { openSealedSecrets } from '@wds/stfs';
import type { Services } from './services.js';
import { runStf } from './stf-run.js';

/** A File source's value: JSON parsed, text as a string, anything else `{ filename, content_type, size, content_base64 }`. */
async function readFileSource(services: Services, workspaceId: string, id: string): Promise<unknown> {
  const file = await getFile(services.db, workspaceId, id);
  if (file.size > FILE_SOURCE_MAX_BYTES) {
    throw new EffectError('too_large', `file ${file.filename} is larger than ${FILE_SOURCE_MAX_BYTES} bytes (the limit of an input source)`);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of (await services.blobs.get(file.blob_key)) as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
  const bytes = Buffer.concat(chunks);
  const type = file.content_type.toLowerCase();
  if (/[/+]json\b/.test(type)) {
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new EffectError('invalid', `file ${file.filename} is not valid JSON`);
    }
  }
  if (type.startsWith('text/')) return bytes.toString('utf8');
  return { filename: file.filename, content_type: file.content_type, size: file.size, content_base64: bytes.toString('base64') };
}

const FILE_SOURCE_MAX_BYTES = 5 * 1024 * 1024;

/** One heartbeat per set of services (a process has one; each test harness has its own database). */
const heartbeats = new WeakMap<Services, RunHeartbeat>();
function heartbeatOf(services: Services): RunHeartbeat {
  let beats = heartbeats.get(services);
  if (!beats) {
    beats = new RunHeartbeat({
      db: services.db,
      intervalMs: services.config.RUN_HEARTBEAT_INTERVAL_MS,
      onError: (err) => services.logger.warn({ err: err.message }, 'workflow run heartbeat failed'),
    });
    heartbeats.set(services, beats);
  }
  return beats;
}

/** One per-workspace execution cap per set of services (WORKFLOW_WORKSPACE_CONCURRENCY, …). */
const gates = new WeakMap<Services, WorkflowConcurrency>();
function gateOf(services: Services): WorkflowConcurrency {
  let gate = gates.get(services);
  if (!gate) {
    gate = new WorkflowConcurrency({
      maxRunning: services.config.WORKFLOW_WORKSPACE_CONCURRENCY,
      maxQueued: services.config.WORKFLOW_WORKSPACE_QUEUE,
      maxWaitMs: services.config.WORKFLOW_QUEUE_TIMEOUT_MS,
    });
    gates.set(services, gate);
  }
  return gate;
}

export async function executeAndRecord(...args: Parameters<typeof execute>): Promise<{ runId: string; result: ExecutionResult }> {
  const [services, workspace] = args;
  // At most WORKFLOW_WORKSPACE_CONCURRENCY executions of one workspace at once; more wait (bounded) or get 429.
  const release = await gateOf(services).acquire(workspace.id);
  try {
    return await execute(...args);
  } finally {
    release();
  }
}

async function execute(
  services: Services,
  workspace: { id: string; ddl_policy_group_id: string | null },
  workflow: WorkflowView,
  input: unknown,
  executedBy: string | null,
  audit: Omit<AuditEntry, 'details'>,
): Promise<{ runId: string; result: ExecutionResult }> {
  const { db } = services;
  const runId = newRunId();
  const [stfs, effects] = await Promise.all([
    resolveStfSteps(db, workspace.id, workflow.stf_steps),
    resolveEffectSteps(db, workspace.id, workflow.effect_steps),
  ]);

  const loadSource = async (step: InputStep): Promise<unknown> => {
    const src = step.source;
    switch (src.type) {
      case 'Fetch': {
        const res = await fetchSource(
          {
            url: src.url,
            ...(src.method ? { method: src.method } : {}),
            ...(src.headers ? { headers: src.headers } : {}),
            ...(src.body !== undefined ? { body: src.body } : {}),
            ...(src.timeout_secs ? { timeout_secs: src.timeout_secs } : {}),
          },
          { guard: services.outbound },
        );
        return res.body;
      }
      case 'Library': {
        if (!executedBy) {
          throw new EffectError('invalid', `Library source ${src.name} needs an authenticated execution (its rows are read with the caller's policies)`);
        }
        const r = await services.sql.execute(
          { workspaceId: workspace.id, ddlGroupId: workspace.ddl_policy_group_id, isAdmin: false, subject: { kind: 'user', userId: executedBy } },
          `SELECT * FROM ${src.name}`,
          { statementTimeoutMs: services.config.SQL_STATEMENT_TIMEOUT_MS, maxRows: services.config.SQL_MAX_ROWS },
        );
        return r.rows ?? [];
      }
      case 'File':
        return readFileSource(services, workspace.id, src.id);
    }
  };

  const runners: StepRunners = {
    loadSource: (step) =>
      loadSource(step).catch((err: unknown) => {
        // A refused statement (policy, missing table) is the step's failure, with its code as the kind.
        if (err instanceof ServiceError) throw { kind: err.code, message: err.message, details: err.details };
        throw err;
      }),
    runStf: async (stf, stepInput, sources) => {
      try {
        const answer = await runStf(services, db, {
          workspace,
          version: { stf_id: stf.stf_id, runtime: stf.runtime, code: stf.code },
          input: stepInput,
          sources,
          caller: executedBy,
          subject: { kind: 'stf', stfId: stf.stf_id, userId: executedBy },
          secrets: services.secrets ? openSealedSecrets(services.secrets, stf.stf_id, stf.sealed_secrets) : {},
        });
        return answer.success ? { ok: true, output: answer.output } : { ok: false, error: answer.error };
      } catch (err) {
        if (err instanceof ServiceError) {
          return { ok: false, error: { kind: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
        }
        throw err;
      }
    },
    runEffect: (effect, effectInput, idempotencyKey) => runEffect(effect.spec, effectInput, { guard: services.outbound, idempotencyKey }),
  };

  // Visible as `running` from its start, and never left so: a heartbeat while it runs, a sweep if it stops.
  const beats = heartbeatOf(services);
  await startRun(db, runId, workflow, input, executedBy, beats.owner);
  const progress: StepRecord[] = [];
  beats.track(runId, progress);
  try {
    let result: ExecutionResult;
    try {
      result = await executeWorkflow(workflow, input, { stfs, effects }, runners, { runId, steps: progress });
    } catch (err) {
      services.logger.error({ err, run_id: runId }, 'workflow engine failed');
      result = { status: 'failed', output: null, error: { step: 'engine', kind: 'internal', message: 'The workflow engine failed' }, steps: [], duration_ms: 0 };
    }
    // The run record and the audit entry (run id, status, failed step) are written together.
    await finishRun(db, runId, result, undefined, {
      id: newId(),
      workspace_id: audit.workspaceId,
      user_id: audit.userId,
      api_key_id: audit.apiKeyId,
      action: audit.action,
      resource_type: audit.resourceType,
      resource_id: audit.resourceId,
      details: JSON.stringify({ run_id: runId, status: result.status, ...(result.error ? { failed_step: result.error.step } : {}) }),
      request_id: audit.requestId ?? null,
      transport: audit.transport ?? null,
    });
    return { runId, result };
  } finally {
    // Left `running` only if finishing failed: the sweep then settles it once the heartbeat is stale.
    beats.untrack(runId);
  }
}
