/**
 * Workflow definitions written for the origin platform (docs/workflows.md, "Coming from d6e"): hyphenated input step
 * names, the legacy dotted variables as aliases with deprecation notes in the run record, JSON-valued Consts, and
 * Library sources that are bundled libraries (or, as before, tables). The fixtures are written for these tests in
 * the origin's style.
 */
import '@wds/testkit';
import { createDb, type Db, migrateToLatest, newId, asUuid } from '@wds/db';
import { type EffectResult, OutboundGuard } from '@wds/effect-runner';
import { ServiceError } from '@wds/errors';
import { createDatabase } from '@wds/testkit';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  buildStepInput,
  checkDefinition,
  createWorkflow,
  CreateWorkflowSchema,
  executeWorkflow,
  FieldMappingSchema,
  getRun,
  InputStepSchema,
  libraryDocument,
  parseVariable,
  readVariable,
  type StepRunners,
  type WorkflowDefinition,
  type WorkflowExecutionDeps,
  WorkflowExecutions,
} from '../src/index.js';
import { TEST_CONFIG } from './config.js';

const variable = (value: string, target: string) => ({ source: { type: 'Variable' as const, value }, target });
const constant = (value: unknown, target: string) => ({ source: { type: 'Const' as const, value }, target });

describe('names and variables as the origin writes them', () => {
  it('input step names may carry hyphens; $sources.<name> reads them', () => {
    expect(v.safeParse(InputStepSchema, { name: 'fetch-data', source: { type: 'Fetch', url: 'https://api.example.com/x' } }).success).toBe(true);
    expect(v.safeParse(InputStepSchema, { name: 'daily_sales-2', source: { type: 'Table', name: 'sales' } }).success).toBe(true);
    for (const bad of ['-data', 'a.b', 'a b', '', 'x'.repeat(65), 'a$b']) {
      expect(v.safeParse(InputStepSchema, { name: bad, source: { type: 'Table', name: 'sales' } }).success, bad).toBe(false);
    }
    expect(parseVariable('$sources.fetch-data')).toEqual({ kind: 'sources', name: 'fetch-data', rest: '' });
    expect(parseVariable('$sources.fetch-data.items[0].sku')).toEqual({ kind: 'sources', name: 'fetch-data', rest: '.items[0].sku' });
  });

  it('the legacy dotted forms are aliases of one $ form each', () => {
    const cases: [string, string][] = [
      ['input', '$input'],
      ['input.customer.email', '$input.customer.email'],
      ['input.items.0.sku', '$input.items[0].sku'],
      ['sources.sales-data', '$sources.sales-data'],
      ['sources.sales-data.rows.2', '$sources.sales-data.rows[2]'],
      ['steps.0.output', '$steps[0]'],
      ['steps.1.output.totals.revenue', '$steps[1].totals.revenue'],
      ['steps.0.output[3]', '$steps[0][3]'],
    ];
    for (const [legacy, dollar] of cases) {
      const root = parseVariable(legacy);
      expect(root, legacy).toMatchObject({ canonical: dollar });
      const { canonical: _, ...same } = root as { canonical: string };
      expect(same, legacy).toEqual(parseVariable(dollar));
    }
    // The $ forms themselves are not legacy.
    expect(parseVariable('$steps[0].output')).not.toHaveProperty('canonical');
  });

  it('still refuses what names nothing', () => {
    for (const bad of ['secrets.token', 'env.HOME', 'source.x', 'steps.0', 'steps.0.total', 'steps.x.output', 'sources', 'inputs', '$sources.-x', 'sources.a..b']) {
      expect(parseVariable(bad), bad).toHaveProperty('error');
    }
    expect(parseVariable('steps.0.total')).toEqual({ error: expect.stringContaining('steps.0.output') });
  });

  it('reads legacy variables like their $ forms', () => {
    const scope = { input: { items: [{ sku: 'a' }] }, sources: { 'sales-data': [{ amount: 3 }] }, steps: [{ summary: 'ok' }] };
    expect(readVariable('sources.sales-data', scope)).toEqual([{ amount: 3 }]);
    expect(readVariable('$sources.sales-data[0].amount', scope)).toBe(3);
    expect(readVariable('steps.0.output', scope)).toEqual({ summary: 'ok' });
    expect(readVariable('steps.0.output.summary', scope)).toBe('ok');
    expect(readVariable('input.items.0.sku', scope)).toBe('a');
  });
});

describe('JSON-valued Const mappings', () => {
  it('pass objects, arrays, numbers, booleans and null as they are', () => {
    const mappings = [
      constant({ mode: 'strict', levels: [1, 2] }, 'options'),
      constant(['a', 'b'], 'tags'),
      constant(3, 'limit'),
      constant(false, 'dry_run'),
      constant(null, 'cursor'),
      constant('product', 'group_by'),
    ];
    for (const m of mappings) expect(v.safeParse(FieldMappingSchema, m).success, JSON.stringify(m)).toBe(true);
    expect(buildStepInput(mappings, { input: null, sources: {}, steps: [] }, null)).toEqual({
      options: { mode: 'strict', levels: [1, 2] },
      tags: ['a', 'b'],
      limit: 3,
      dry_run: false,
      cursor: null,
      group_by: 'product',
    });
    // The whole input may be a Const object too.
    expect(buildStepInput([constant({ a: 1 }, '$')], { input: null, sources: {}, steps: [] }, null)).toEqual({ a: 1 });
  });

  it('refuses a Const without a value, a Variable that is not a string and an unknown type', () => {
    expect(v.safeParse(FieldMappingSchema, { source: { type: 'Const' }, target: 'x' }).success).toBe(false);
    expect(v.safeParse(FieldMappingSchema, { source: { type: 'Variable', value: { a: 1 } }, target: 'x' }).success).toBe(false);
    const r = v.safeParse(FieldMappingSchema, { source: { type: 'Env', value: 'HOME' }, target: 'x' });
    expect(r.issues?.[0]?.message).toBe('must be Variable or Const');
  });
});

// --------------------------------------------------------------------------------------------- the engine

const ok: EffectResult = { status: 200, ok: true, headers: {}, body: null, attempts: 1, duration_ms: 1, idempotency_key: 'k' };

/** daily report, origin style: a Fetch source named `fetch-data`, legacy paths, an effect whose body reads `$.input.message`. */
const daily: WorkflowDefinition = {
  input_schema: null,
  input_steps: [
    { name: 'fetch-data', source: { type: 'Fetch', url: 'http://127.0.0.1/sales' } },
    { name: 'old-table', source: { type: 'Library', name: 'targets' } },
  ],
  stf_steps: [
    {
      stf_version_id: 'v-0',
      pin_version: false,
      input_mappings: [variable('sources.fetch-data', 'records'), variable('$sources.fetch-data.currency', 'currency'), constant({ by: 'product' }, 'group')],
    },
  ],
  effect_steps: [{ effect_version_id: 'ev-0', pin_version: false, input_mappings: [variable('steps.0.output', 'message')] }],
};

describe('the run record notes legacy forms', () => {
  it('each step lists the mappings written in a legacy form with their $ form, and the Library-as-table source', async () => {
    const seen: unknown[] = [];
    const runners: StepRunners = {
      loadSource: async (step, deprecated) => {
        if (step.source.type === 'Library') {
          deprecated({ found: JSON.stringify(step.source), use: '{"type":"Table","name":"targets"}' });
          return [{ product: 'a', target: 5 }];
        }
        return { currency: 'EUR', rows: [{ product: 'a', amount: 2 }] };
      },
      runStf: async (_s, input) => {
        seen.push(input);
        return { ok: true, output: 'sold 2 of a' };
      },
      runEffect: async (_e, input) => {
        seen.push(input);
        return ok;
      },
    };
    const result = await executeWorkflow(
      daily,
      {},
      {
        stfs: [{ stf_id: 's', stf_version_id: 'v-0', version: '1', runtime: 'javascript', code: Buffer.from(''), sealed_secrets: [] }],
        effects: [
          {
            effect_id: 'e',
            effect_version_id: 'ev-0',
            version: '1',
            spec: {
              url: 'http://127.0.0.1/hook',
              method: 'POST',
              header_mappings: [constant('application/json', 'Content-Type')],
              body_mappings: [variable('$.input.message', 'text'), variable('$.message', 'same')],
            },
          },
        ],
      },
      runners,
      { runId: 'r' },
    );
    expect(result.status).toBe('succeeded');
    expect(seen).toEqual([{ records: { currency: 'EUR', rows: [{ product: 'a', amount: 2 }] }, currency: 'EUR', group: { by: 'product' } }, { message: 'sold 2 of a' }]);
    expect(result.steps[0]).not.toHaveProperty('deprecations');
    expect(result.steps[1]).toMatchObject({
      kind: 'input',
      name: 'old-table',
      deprecations: [{ at: 'input_steps[1].source', found: '{"type":"Library","name":"targets"}', use: '{"type":"Table","name":"targets"}' }],
    });
    expect(result.steps[2]).toMatchObject({
      kind: 'stf',
      deprecations: [{ at: 'stf_steps[0].input_mappings[0]', found: 'sources.fetch-data', use: '$sources.fetch-data' }],
    });
    expect(result.steps[3]).toMatchObject({
      kind: 'effect',
      deprecations: [
        { at: 'effect_steps[0].input_mappings[0]', found: 'steps.0.output', use: '$steps[0]' },
        { at: 'effect_steps[0].effect.body_mappings[0]', found: '$.input.message', use: '$.message' },
      ],
    });
  });

  it('a skipped step still carries its notes', async () => {
    const runners: StepRunners = {
      loadSource: async () => {
        throw Object.assign(new Error('down'), { kind: 'network' });
      },
      runStf: async () => ({ ok: true, output: null }),
      runEffect: async () => ok,
    };
    const result = await executeWorkflow(daily, {}, { stfs: [], effects: [] }, runners, { runId: 'r' });
    expect(result.steps.find((s) => s.kind === 'stf')).toMatchObject({ status: 'skipped', deprecations: [{ use: '$sources.fetch-data' }] });
  });
});

// --------------------------------------------------------------------------------------------- with the database

let db: Db;
const W = newId();
const member = newId();
let stfVersion: string;
const tables: string[] = [];

function depsOf(): WorkflowExecutionDeps {
  return {
    db,
    sql: {
      openSession: () => Promise.reject(new Error('no sql here')),
      // The workspace's tables as the executing user reads them: `targets` has a row, anything else is refused.
      execute: async (_caller, text) => {
        tables.push(text);
        if (text === 'SELECT * FROM targets') return { rows: [{ product: 'a', target: 5 }] } as never;
        throw new ServiceError('POLICY_DENIED', 'no rows for you');
      },
    },
    runtimes: {
      javascript: { run: async (req) => ({ output: { got: Object.keys(req.sources as object) }, logs: [], duration_ms: 1 }), close: async () => {} },
    },
    secrets: undefined,
    outbound: new OutboundGuard(),
    blobs: { get: () => Promise.reject(new Error('no blobs here')) },
    logger: { warn: () => {}, error: () => {} },
    config: TEST_CONFIG,
  };
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'wf_origin' }), { max: 4 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
  await db.insertInto('platform.users').values({ id: member, email: `${member}@example.com`, name: 'M', jwt_subject: null }).execute();
  const stfId = newId();
  stfVersion = newId();
  await db.insertInto('platform.stfs').values({ id: stfId, workspace_id: W, name: 'report', created_by: null }).execute();
  await db
    .insertInto('platform.stf_versions')
    .values({ id: stfVersion, stf_id: stfId, workspace_id: W, version: '1', runtime: 'javascript', code: Buffer.from('x'), input_schema: null, output_schema: null, created_by: null })
    .execute();
});
afterAll(() => db?.destroy());

const definition = (over: Partial<WorkflowDefinition>): WorkflowDefinition => ({ input_schema: null, input_steps: [], stf_steps: [], effect_steps: [], ...over });
const problems = (def: WorkflowDefinition) => checkDefinition(db, W, def).then(() => '', (e: ServiceError) => `${e.code}: ${e.details}`);

describe('saving', () => {
  it('accepts hyphenated names, legacy paths, JSON Consts and Library sources of both kinds', async () => {
    const body = v.parse(CreateWorkflowSchema, {
      name: 'daily-sales-summary',
      input_steps: [
        { name: 'sales-data', source: { type: 'Fetch', url: 'https://api.example.com/sales/today', method: 'GET' } },
        { name: 'pdf', source: { type: 'Library', name: '@d6e-ai/pdf-lib' } },
        { name: 'targets', source: { type: 'Library', name: 'targets' } },
        { name: 'rows', source: { type: 'Table', name: 'targets' } },
      ],
      stf_steps: [
        {
          stf_version_id: stfVersion,
          input_mappings: [variable('sources.sales-data', 'records'), variable('$sources.pdf.version', 'v'), constant({ mode: 'strict' }, 'options')],
        },
        { stf_version_id: stfVersion, input_mappings: [variable('steps.0.output.total', 'total'), variable('input.day', 'day')] },
      ],
    });
    expect(await problems({ ...body, input_schema: null, effect_steps: [] })).toBe('');
  });

  it('refuses garbage: unknown roots and libraries, legacy paths to missing sources or later steps', async () => {
    const msg = await problems(
      definition({
        input_steps: [
          { name: 'sales-data', source: { type: 'Library', name: 'no-such-lib' } },
          { name: 'b', source: { type: 'Library', name: '@d6e-ai/nothing' } },
        ],
        stf_steps: [
          {
            stf_version_id: stfVersion,
            pin_version: false,
            input_mappings: [
              variable('secrets.token', 'a'),
              variable('sources.sales', 'b'),
              variable('steps.0.output', 'c'),
              variable('steps.0.summary', 'd'),
              variable('$sources.sales-data', 'ok'),
            ],
          },
        ],
      }),
    );
    expect(msg).toMatch(/^VALIDATION_ERROR/);
    expect(msg).toContain('input_steps[0].source.name: "no-such-lib" is not a bundled library');
    expect(msg).toContain('input_steps[1].source.name: "@d6e-ai/nothing" is not a bundled library');
    expect(msg).toContain('stf_steps[0].input_mappings[0]: unknown variable root in "secrets.token"');
    expect(msg).toContain('stf_steps[0].input_mappings[1]: no input step is named "sales"');
    expect(msg).toContain('stf_steps[0].input_mappings[2]: $steps[0] is not an earlier STF step');
    expect(msg).toContain('stf_steps[0].input_mappings[3]: "steps.0.summary" names no step output');
    expect(msg).not.toContain('input_mappings[4]');
  });
});

describe('Library and Table sources, executed and recorded', () => {
  it('a Library source is the bundled library { code, types, version } in either name form', () => {
    const bare = libraryDocument('pdf-lib');
    expect(bare).toEqual({ code: expect.any(String), types: expect.any(String), version: expect.any(String) });
    expect(bare?.code.length).toBeGreaterThan(1000);
    expect(bare?.types).toContain('declare module');
    expect(libraryDocument('@d6e-ai/pdf-lib')).toMatchObject({ code: bare?.code, version: bare?.version });
    expect(libraryDocument('targets')).toBeUndefined();
    expect(libraryDocument('@d6e-ai/targets')).toBeUndefined();
  });

  it('runs: Library → the library, Table → rows (as the user), Library naming a table → rows with a note in the stored run', async () => {
    const wf = await createWorkflow(
      db,
      W,
      {
        name: 'sources',
        input_steps: [
          { name: 'pdf-lib', source: { type: 'Library', name: '@d6e-ai/pdf-lib' } },
          { name: 'rows', source: { type: 'Table', name: 'targets' } },
          { name: 'old-rows', source: { type: 'Library', name: 'targets' } },
        ],
        stf_steps: [{ stf_version_id: stfVersion, pin_version: true, input_mappings: [variable('sources.pdf-lib.version', 'v'), variable('$sources.rows', 'rows')] }],
        effect_steps: [],
      },
      null,
    );
    tables.length = 0;
    const run = await new WorkflowExecutions(depsOf()).execute({
      workspace: { id: W, ddl_policy_group_id: null, created_by: null },
      workflow: wf,
      input: {},
      executedBy: member,
      audit: { workspaceId: W, userId: member, apiKeyId: null, action: 'execute_workflow', resourceType: 'workflow', resourceId: wf.id },
    });
    expect(run.result.error).toBeNull();
    expect(run.result.output).toEqual({ got: ['pdf-lib', 'rows', 'old-rows'] });
    // Both table reads went through the user's statement path (policies, row cap); the library read none.
    expect(tables).toEqual(['SELECT * FROM targets', 'SELECT * FROM targets']);
    const stored = await getRun(db, W, asUuid(wf.id), asUuid(run.runId));
    expect(stored.steps).toEqual([
      expect.not.objectContaining({ deprecations: expect.anything() }),
      expect.not.objectContaining({ deprecations: expect.anything() }),
      expect.objectContaining({
        name: 'old-rows',
        status: 'succeeded',
        deprecations: [{ at: 'input_steps[2].source', found: '{"type":"Library","name":"targets"}', use: '{"type":"Table","name":"targets"}' }],
      }),
      expect.objectContaining({
        kind: 'stf',
        deprecations: [{ at: 'stf_steps[0].input_mappings[0]', found: 'sources.pdf-lib.version', use: '$sources.pdf-lib.version' }],
      }),
    ]);
  });

  it('a Table source (or a Library naming a table) is refused to an anonymous execution; a bundled library is not', async () => {
    const wf = await createWorkflow(
      db,
      W,
      { name: 'anon', allow_anonymous_execute: true, input_steps: [{ name: 'lib', source: { type: 'Library', name: 'date-fns' } }], stf_steps: [], effect_steps: [] },
      null,
    );
    const request = (workflow: typeof wf) => ({
      workspace: { id: W, ddl_policy_group_id: null, created_by: null },
      workflow,
      input: {},
      executedBy: null,
      audit: { workspaceId: W, userId: null, apiKeyId: null, action: 'execute_workflow', resourceType: 'workflow', resourceId: workflow.id },
    });
    expect((await new WorkflowExecutions(depsOf()).execute(request(wf))).result.error).toBeNull();
    for (const source of [{ type: 'Table' as const, name: 'targets' }, { type: 'Library' as const, name: 'targets' }]) {
      const table = await createWorkflow(db, W, { name: 'anon-table', allow_anonymous_execute: true, input_steps: [{ name: 't', source }], stf_steps: [], effect_steps: [] }, null);
      const run = await new WorkflowExecutions(depsOf()).execute(request(table));
      expect(run.result.error, JSON.stringify(source)).toMatchObject({ step: 'input_steps[0]', kind: 'invalid', message: expect.stringContaining('authenticated') });
    }
  });
});
