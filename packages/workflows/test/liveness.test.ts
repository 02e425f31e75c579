import '@wds/testkit';
import { randomUUID } from 'node:crypto';
import { createDb, type Db, migrateToLatest, newId, sql } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createWorkflow,
  finishRun,
  getRun,
  INSTANCE_ID,
  newRunId,
  RunHeartbeat,
  type StepRecord,
  startRun,
  sweepInterruptedRuns,
  type WorkflowView,
} from '../src/index.js';

let db: Db;
const A = newId();
let w: WorkflowView;

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'workflows' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: A, name: 'a' }).execute();
  w = await createWorkflow(db, A, { name: 'w', input_steps: [], stf_steps: [], effect_steps: [] }, null);
});
afterAll(() => db.destroy());

const row = (id: string) =>
  db.selectFrom('platform.workflow_runs').select(['status', 'owner', 'heartbeat_at', 'steps', 'error']).where('id', '=', id).executeTakeFirstOrThrow();

/** Moves a run's heartbeat (and start) into the past, as if its process had stopped beating that long ago. */
const age = (id: string, ms: number, owner: string | null = randomUUID()) =>
  sql`UPDATE platform.workflow_runs SET owner = ${owner}, heartbeat_at = now() - ${ms} * interval '1 millisecond',
        started_at = now() - ${ms + 1000} * interval '1 millisecond' WHERE id = ${id}`.execute(db);

describe('run records', () => {
  it('a run is written when it starts, owned by this process, alive as of now, and reads as running', async () => {
    const id = newRunId();
    await startRun(db, id, w, { n: 1 }, null);
    const r = await row(id);
    expect(r).toMatchObject({ status: 'running', owner: INSTANCE_ID, steps: [] });
    expect(Date.now() - r.heartbeat_at!.getTime()).toBeLessThan(60_000);
    expect(await getRun(db, A, w.id, id)).toMatchObject({ status: 'running', input: { n: 1 }, finished_at: null });
  });

  it('the heartbeat marks every tracked run alive in one beat, with the steps finished so far; untracked runs are left', async () => {
    const beats = new RunHeartbeat({ db, intervalMs: 60_000 });
    const [one, two, gone] = [newRunId(), newRunId(), newRunId()];
    for (const id of [one, two, gone]) {
      await startRun(db, id, w, null, null);
      await age(id, 600_000, INSTANCE_ID);
    }
    const steps: StepRecord[] = [];
    beats.track(one, steps);
    beats.track(two, []);
    beats.track(gone, []);
    beats.untrack(gone);
    steps.push({ kind: 'stf', index: 0, status: 'succeeded', duration_ms: 2 });
    await beats.beat();
    for (const id of [one, two]) expect(Date.now() - (await row(id)).heartbeat_at!.getTime()).toBeLessThan(60_000);
    expect((await row(one)).steps).toEqual([{ kind: 'stf', index: 0, status: 'succeeded', duration_ms: 2 }]);
    expect(Date.now() - (await row(gone)).heartbeat_at!.getTime()).toBeGreaterThan(500_000);
    beats.untrack(one);
    beats.untrack(two);
  });
});

describe('sweepInterruptedRuns', () => {
  it('fails running runs whose heartbeat is stale as interrupted; fresh, legacy-fresh and finished runs stay', async () => {
    const [dead, legacy, fresh, finished] = [newRunId(), newRunId(), newRunId(), newRunId()];
    for (const id of [dead, legacy, fresh, finished]) await startRun(db, id, w, { id }, null);
    // Another process, gone for 10 minutes, after finishing one step.
    await age(dead, 600_000);
    await sql`UPDATE platform.workflow_runs SET steps = ${JSON.stringify([{ kind: 'stf', index: 0, status: 'succeeded' }])}::jsonb WHERE id = ${dead}`.execute(db);
    // A run recorded before heartbeats existed: no owner, no heartbeat; its start stands in.
    await sql`UPDATE platform.workflow_runs SET owner = NULL, heartbeat_at = NULL, started_at = now() - interval '37 minutes' WHERE id = ${legacy}`.execute(db);
    // Another process, alive (beat 5 s ago).
    await age(fresh, 5_000);
    await finishRun(db, finished, { status: 'succeeded', output: 1, error: null, steps: [], duration_ms: 1 });
    await age(finished, 600_000);

    expect(await sweepInterruptedRuns(db, { staleAfterMs: 60_000 })).toBeGreaterThanOrEqual(2);

    const swept = await getRun(db, A, w.id, dead);
    expect(swept).toMatchObject({
      status: 'failed',
      error: { step: 'run', kind: 'interrupted', message: expect.stringMatching(/^interrupted: the process running it stopped \(no heartbeat since \d{4}-\d\d-\d\dT/) },
      steps: [{ kind: 'stf', index: 0, status: 'succeeded' }],
    });
    expect(swept.finished_at).not.toBeNull();
    expect(swept.duration_ms).toBeGreaterThan(600_000);
    expect(await getRun(db, A, w.id, legacy)).toMatchObject({ status: 'failed', error: { kind: 'interrupted' } });
    expect((await getRun(db, A, w.id, fresh)).status).toBe('running');
    expect(await getRun(db, A, w.id, finished)).toMatchObject({ status: 'succeeded', error: null });

    // A run that was only slow to beat and then ends: what really happened wins over the sweep's verdict.
    await finishRun(db, dead, { status: 'succeeded', output: { late: true }, error: null, steps: [], duration_ms: 5 });
    expect(await getRun(db, A, w.id, dead)).toMatchObject({ status: 'succeeded', output: { late: true }, error: null });
  });
});
