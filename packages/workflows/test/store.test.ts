import '@wds/testkit';
import { createDb, migrateToLatest, newId, asUuid } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  checkDefinition,
  createWorkflow,
  definitionOf,
  finishRun,
  getRun,
  getWorkflow,
  listRuns,
  listWorkflows,
  newRunId,
  patchedDefinition,
  resolveEffectSteps,
  resolveStfSteps,
  softDeleteWorkflow,
  startRun,
  updateWorkflow,
} from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const page = { limit: 100, offset: 0 };

async function stfWithVersions(ws: string, labels: string[]): Promise<{ stfId: string; versions: string[] }> {
  const stfId = newId();
  await db.insertInto('platform.stfs').values({ id: stfId, workspace_id: ws, name: 's', created_by: null }).execute();
  const versions: string[] = [];
  for (const version of labels) {
    const id = newId();
    await db
      .insertInto('platform.stf_versions')
      .values({ id, stf_id: stfId, workspace_id: ws, version, runtime: 'javascript', code: Buffer.from(`return "${version}"`), input_schema: null, output_schema: null, created_by: null })
      .execute();
    versions.push(id);
  }
  return { stfId, versions };
}

async function effectWithVersions(ws: string, labels: string[]): Promise<{ effectId: string; versions: string[] }> {
  const effectId = newId();
  await db.insertInto('platform.effects').values({ id: effectId, workspace_id: ws, name: 'e', description: null, created_by: null }).execute();
  const versions: string[] = [];
  for (const version of labels) {
    const id = newId();
    await db
      .insertInto('platform.effect_versions')
      .values({
        id,
        effect_id: effectId,
        workspace_id: ws,
        version,
        url: `http://127.0.0.1/${version}`,
        method: 'POST',
        header_mappings: '[]',
        body_mappings: JSON.stringify([{ source: { type: 'Variable', value: '$.id' }, target: 'id' }]),
        query_mappings: '[]',
        input_schema: null,
        timeout_secs: 5,
        created_by: null,
      })
      .execute();
    versions.push(id);
  }
  return { effectId, versions };
}

async function problems(def: Parameters<typeof definitionOf>[0], ws = A): Promise<string> {
  const err = await checkDefinition(db, ws, definitionOf(def)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).code).toBe('VALIDATION_ERROR');
  return (err as ServiceError).details ?? '';
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'workflows' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('checkDefinition', () => {
  it('accepts steps of this workspace and variables that refer backwards', async () => {
    const s = await stfWithVersions(A, ['1']);
    const e = await effectWithVersions(A, ['1']);
    await checkDefinition(
      db,
      A,
      definitionOf({
        input_steps: [{ name: 'rates', source: { type: 'Fetch', url: 'http://127.0.0.1/rates' } }],
        stf_steps: [
          { stf_version_id: s.versions[0] as string, pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$sources.rates.eur' }, target: 'r' }] },
          { stf_version_id: s.versions[0] as string, pin_version: true, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].x' }, target: 'x' }] },
        ],
        effect_steps: [{ effect_version_id: e.versions[0] as string, pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[1]' }, target: '$' }] }],
      }),
    );
  });

  it('lists every problem: unknown or foreign versions, unknown roots, forward steps, unknown sources, duplicates', async () => {
    const foreign = await stfWithVersions(B, ['1']);
    const foreignEffect = await effectWithVersions(B, ['1']);
    const mine = await stfWithVersions(A, ['1']);
    const details = await problems({
      input_steps: [
        { name: 'a', source: { type: 'Fetch', url: 'ftp://127.0.0.1/x' } },
        { name: 'a', source: { type: 'Library', name: 'orders' } },
      ],
      stf_steps: [
        { stf_version_id: foreign.versions[0] as string, pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$env.TOKEN' }, target: 'x' }] },
        { stf_version_id: mine.versions[0] as string, pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[1].x' }, target: 'x' }] },
        { stf_version_id: newId(), pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$sources.nope' }, target: 'x' }] },
      ],
      effect_steps: [{ effect_version_id: foreignEffect.versions[0] as string, pin_version: false, input_mappings: [{ source: { type: 'Variable', value: '$steps[3]' }, target: 'x' }] }],
    });
    for (const expected of [
      'input_steps[0].source.url: must be http or https',
      'input_steps[1].name: "a" is used twice',
      `stf_steps[0].stf_version_id: no STF version ${foreign.versions[0]} in this workspace`,
      'stf_steps[0].input_mappings[0]: unknown variable root',
      'stf_steps[1].input_mappings[0]: $steps[1] is not an earlier STF step',
      'stf_steps[2].stf_version_id: no STF version',
      'stf_steps[2].input_mappings[0]: no input step is named "nope"',
      `effect_steps[0].effect_version_id: no effect version ${foreignEffect.versions[0]} in this workspace`,
      'effect_steps[0].input_mappings[0]: $steps[3] is not an earlier STF step',
    ]) {
      expect(details).toContain(expected);
    }
  });

  it('refuses versions of a deleted STF', async () => {
    const s = await stfWithVersions(A, ['1']);
    await db.updateTable('platform.stfs').set({ deleted_at: new Date() }).where('id', '=', s.stfId).execute();
    expect(await problems({ stf_steps: [{ stf_version_id: s.versions[0] as string, pin_version: false, input_mappings: [] }] })).toContain('no STF version');
  });
});

describe('resolving step versions', () => {
  it('runs the newest version unless pinned; another workspace resolves to nothing', async () => {
    const s = await stfWithVersions(A, ['1', '2', '3']);
    const foreign = await stfWithVersions(B, ['1']);
    const got = await resolveStfSteps(db, A, [
      { stf_version_id: s.versions[0] as string, pin_version: false, input_mappings: [] },
      { stf_version_id: s.versions[0] as string, pin_version: true, input_mappings: [] },
      { stf_version_id: foreign.versions[0] as string, pin_version: true, input_mappings: [] },
    ]);
    expect(got.map((r) => r?.version)).toEqual(['3', '1', undefined]);
    expect(got[0]?.code.toString()).toBe('return "3"');

    const e = await effectWithVersions(A, ['1', '2']);
    const effects = await resolveEffectSteps(db, A, [
      { effect_version_id: e.versions[0] as string, pin_version: false, input_mappings: [] },
      { effect_version_id: e.versions[0] as string, pin_version: true, input_mappings: [] },
    ]);
    expect(effects.map((r) => r?.spec.url)).toEqual(['http://127.0.0.1/2', 'http://127.0.0.1/1']);
    expect(effects[0]?.spec).toMatchObject({ method: 'POST', timeout_secs: 5, retries: 0, body_mappings: [{ target: 'id' }] });
    expect(await resolveEffectSteps(db, B, [{ effect_version_id: e.versions[0] as string, pin_version: false, input_mappings: [] }])).toEqual([undefined]);
  });
});

describe('workflows and runs', () => {
  it('create, list by name, patch, soft delete; runs recorded and listed newest first', async () => {
    const w = await createWorkflow(db, A, { name: 'orders', description: 'd', input_steps: [], stf_steps: [], effect_steps: [] }, null);
    expect(w).toMatchObject({ name: 'orders', allow_anonymous_execute: false, input_schema: null, stf_steps: [] });
    expect((await listWorkflows(db, A, { ...page, name: 'orders' })).map((x) => x.id)).toEqual([w.id]);
    expect(await listWorkflows(db, A, { ...page, name: 'other' })).toEqual([]);
    expect(await listWorkflows(db, B, page)).toEqual([]);
    await expect(getWorkflow(db, B, asUuid(w.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });

    const patch = { allow_anonymous_execute: true, input_schema: { type: 'object' } };
    const updated = await updateWorkflow(db, A, asUuid(w.id), patch, patchedDefinition(w, patch), newId());
    expect(updated).toMatchObject({ name: 'orders', allow_anonymous_execute: true, input_schema: { type: 'object' } });

    const first = newRunId();
    await finishRun(db, first, { status: 'succeeded', output: { ok: 1 }, error: null, steps: [], duration_ms: 1 }, { workflow: w, input: { n: 1 }, executedBy: null, at: new Date() });
    const second = newRunId();
    await startRun(db, second, w, { n: 2 }, null);
    expect((await getRun(db, A, asUuid(w.id), asUuid(second))).status).toBe('running');
    expect(await getRun(db, A, asUuid(w.id), asUuid(first))).toMatchObject({ status: 'succeeded', input: { n: 1 }, output: { ok: 1 } });
    await finishRun(db, second, { status: 'failed', output: null, error: { step: 'stf_steps[0]', kind: 'runtime', message: 'boom' }, steps: [], duration_ms: 3.5 });
    const runs = await listRuns(db, A, asUuid(w.id), page);
    expect(runs.map((r) => r.id)).toEqual([second, first]);
    expect(runs[0]).not.toHaveProperty('input');
    expect(await getRun(db, A, asUuid(w.id), asUuid(second))).toMatchObject({ status: 'failed', input: { n: 2 }, error: { step: 'stf_steps[0]' }, duration_ms: 3.5 });
    await expect(getRun(db, B, asUuid(w.id), asUuid(second))).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // With an audit entry, the run and the entry are written by one statement (insert and update forms).
    const audited = newRunId();
    const entry = (action: string) => ({ workspaceId: A, userId: null, apiKeyId: null, action, resourceType: 'workflow', resourceId: w.id });
    await finishRun(db, audited, { status: 'succeeded', output: 1, error: null, steps: [], duration_ms: 1 }, { workflow: w, input: null, executedBy: null, at: new Date() }, entry('execute_a'));
    await finishRun(db, second, { status: 'succeeded', output: 2, error: null, steps: [], duration_ms: 1 }, undefined, entry('execute_b'));
    expect((await getRun(db, A, asUuid(w.id), asUuid(audited))).output).toBe(1);
    expect((await getRun(db, A, asUuid(w.id), asUuid(second))).output).toBe(2);
    const actions = await db.selectFrom('platform.audit_logs').select('action').where('resource_id', '=', w.id).execute();
    expect(actions.map((a) => a.action).sort()).toEqual(['execute_a', 'execute_b']);

    await softDeleteWorkflow(db, A, asUuid(w.id));
    await expect(getWorkflow(db, A, asUuid(w.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(listRuns(db, A, asUuid(w.id), page)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
