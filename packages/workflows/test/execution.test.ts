import '@wds/testkit';
import { createDb, type Db, migrateToLatest, newId, asUuid, type Uuid } from '@wds/db';
import { EffectError, OutboundGuard } from '@wds/effect-runner';
import { ServiceError } from '@wds/errors';
import type { StfRunnerDeps } from '@wds/stf-runner';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, expectTypeOf } from 'vitest';
import {
  authorizeExecution,
  createStepRunners,
  createWorkflow,
  executeWorkflowAs,
  getRun,
  runOutput,
  StepFailure,
  type WorkflowExecutionDeps,
  type WorkflowView,
  WorkflowExecutions,
} from '../src/index.js';
import { TEST_CONFIG } from './config.js';

type StfRuntime = NonNullable<StfRunnerDeps['runtimes']['javascript']>;
type StfRunRequest = Parameters<StfRuntime['run']>[0];

let db: Db;
const A = newId();
const GONE = newId();
let closed: WorkflowView;
let open: WorkflowView;
let withStf: WorkflowView;
const runs: StfRunRequest[] = [];
const logged: string[] = [];

const javascript: StfRuntime = {
  run: async (req) => {
    runs.push(req);
    return { output: { doubled: (req.input as { n: number }).n * 2 }, logs: [], duration_ms: 1 };
  },
  close: async () => {},
};

function depsOf(over: Partial<WorkflowExecutionDeps> = {}): WorkflowExecutionDeps {
  return {
    db,
    sql: {
      openSession: () => Promise.reject(new Error('no sql here')),
      execute: () => Promise.reject(new ServiceError('POLICY_DENIED', 'no rows for you', 'policy p')),
    },
    runtimes: { javascript },
    secrets: undefined,
    outbound: new OutboundGuard(),
    blobs: { get: () => Promise.reject(new Error('no blobs here')) },
    logger: { warn: (_o, msg) => logged.push(msg), error: (_o, msg) => logged.push(msg) },
    config: TEST_CONFIG,
    ...over,
  };
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'workflows' }), { max: 4 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: A, name: 'a' }).execute();
  await db.insertInto('platform.workspaces').values({ id: GONE, name: 'gone', deleted_at: new Date() }).execute();
  await db.insertInto('platform.users').values({ id: member.userId, email: `${member.userId}@example.com`, name: 'M', jwt_subject: null }).execute();
  closed = await createWorkflow(db, A, { name: 'closed', input_steps: [], stf_steps: [], effect_steps: [] }, null);
  open = await createWorkflow(db, A, { name: 'open', allow_anonymous_execute: true, input_steps: [], stf_steps: [], effect_steps: [] }, null);
  const stfId = newId();
  const versionId = newId();
  await db.insertInto('platform.stfs').values({ id: stfId, workspace_id: A, name: 'double', created_by: null }).execute();
  await db
    .insertInto('platform.stf_versions')
    .values({ id: versionId, stf_id: stfId, workspace_id: A, version: '1', runtime: 'javascript', code: Buffer.from('double'), input_schema: null, output_schema: null, created_by: null })
    .execute();
  withStf = await createWorkflow(
    db,
    A,
    { name: 'stf', allow_anonymous_execute: true, input_steps: [], stf_steps: [{ stf_version_id: versionId, pin_version: true, input_mappings: [] }], effect_steps: [] },
    null,
  );
});
afterAll(() => db.destroy());

const workspaceA = () => ({ id: A, ddl_policy_group_id: null, created_by: null });
const member = { userId: newId(), workspace: { id: A, ddl_policy_group_id: null, created_by: null } };
const code = (p: Promise<unknown>) => p.then(() => 'ok', (e: ServiceError) => e.code);

describe('who may execute', () => {
  it('an anonymous caller gets the same 401 for a missing or deleted workspace, a missing workflow and one that is not open', async () => {
    expect(await code(authorizeExecution(db, { workspaceId: newId(), workflowId: asUuid(open.id), member: null }))).toBe('UNAUTHORIZED');
    expect(await code(authorizeExecution(db, { workspaceId: GONE, workflowId: asUuid(open.id), member: null }))).toBe('UNAUTHORIZED');
    expect(await code(authorizeExecution(db, { workspaceId: A, workflowId: newId(), member: null }))).toBe('UNAUTHORIZED');
    // A text that is not a UUID never reaches it: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf<Parameters<typeof authorizeExecution>[1]['workflowId']>().toEqualTypeOf<Uuid>();
    expect(await code(authorizeExecution(db, { workspaceId: A, workflowId: asUuid(closed.id), member: null }))).toBe('UNAUTHORIZED');
    const ok = await authorizeExecution(db, { workspaceId: A, workflowId: asUuid(open.id), member: null });
    expect(ok.workspace.id).toBe(A);
    expect(ok.workflow.id).toBe(open.id);
  });

  it('a member may execute any workflow of the workspace and learns that one is missing', async () => {
    expect((await authorizeExecution(db, { workspaceId: A, workflowId: asUuid(closed.id), member })).workflow.id).toBe(closed.id);
    expect(await code(authorizeExecution(db, { workspaceId: A, workflowId: newId(), member }))).toBe('NOT_FOUND');
  });
});

describe('executing and recording', () => {
  it('runs the STF steps under the STF subject and records the run with its audit entry', async () => {
    const deps = depsOf();
    const run = await executeWorkflowAs({ ...deps, executions: new WorkflowExecutions(deps) }, {
      workspaceId: A,
      workflowId: asUuid(withStf.id),
      member: null,
      input: { n: 21 },
      audit: { apiKeyId: null, action: 'execute_workflow', requestId: 'req-1', transport: 'mcp' },
    });
    expect(runOutput(run)).toEqual({ doubled: 42 });
    expect(runs.at(-1)).toMatchObject({ caller: null, workspaceId: A, code: 'double' });
    const stored = await getRun(db, A, asUuid(withStf.id), asUuid(run.runId));
    expect(stored).toMatchObject({ status: 'succeeded', executed_by: null });
    const audit = await db.selectFrom('platform.audit_logs').selectAll().where('request_id', '=', 'req-1').executeTakeFirstOrThrow();
    expect(audit).toMatchObject({
      workspace_id: A,
      user_id: null,
      action: 'execute_workflow',
      resource_type: 'workflow',
      resource_id: withStf.id,
      transport: 'mcp',
      details: { run_id: run.runId, status: 'succeeded' },
    });
  });

  it('a step without its runtime fails with that code, and the answer is 422 RUNTIME_ERROR naming step and run', async () => {
    const run = await new WorkflowExecutions(depsOf({ runtimes: {} })).execute({
      workspace: workspaceA(),
      workflow: withStf,
      input: { n: 1 },
      executedBy: member.userId,
      audit: { workspaceId: A, userId: member.userId, apiKeyId: null, action: 'execute_workflow', resourceType: 'workflow', resourceId: withStf.id },
    });
    expect(run.result.error).toMatchObject({ step: 'stf_steps[0]', kind: 'SERVICE_UNAVAILABLE' });
    const err = (() => {
      try {
        runOutput(run);
      } catch (e) {
        return e as ServiceError;
      }
    })();
    expect(err?.code).toBe('RUNTIME_ERROR');
    expect(JSON.parse(err?.details ?? '{}')).toMatchObject({ run_id: run.runId, step: 'stf_steps[0]', kind: 'SERVICE_UNAVAILABLE' });
    expect((await getRun(db, A, asUuid(withStf.id), asUuid(run.runId))).status).toBe('failed');
  });
});

describe('step runners', () => {
  const ignore = () => {};

  it("a Table source needs a signed-in caller, and a refused statement fails the step with the refusal's code", async () => {
    const table = { name: 'rows', source: { type: 'Table' as const, name: 'orders' } };
    const anonymous = createStepRunners(depsOf(), workspaceA(), null);
    await expect(anonymous.loadSource(table, ignore)).rejects.toBeInstanceOf(EffectError);
    const signedIn = createStepRunners(depsOf(), workspaceA(), member.userId);
    const err = await signedIn.loadSource(table, ignore).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepFailure);
    expect(err).toMatchObject({ kind: 'POLICY_DENIED', message: 'no rows for you', details: 'policy p' });
  });

  it('a File source that does not exist fails the step as NOT_FOUND', async () => {
    const runners = createStepRunners(depsOf(), workspaceA(), member.userId);
    await expect(runners.loadSource({ name: 'f', source: { type: 'File', id: newId() } }, ignore)).rejects.toMatchObject({ kind: 'NOT_FOUND' });
  });
});
