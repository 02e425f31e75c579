import '@wds/testkit';
import { randomUUID } from 'node:crypto';
import { createDb, type Db, migrateToLatest, newId, sql, asUuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  claimQueuedRun,
  createWorkflow,
  finishRun,
  getRun,
  INSTANCE_ID,
  newRunId,
  queueRun,
  requeueRun,
  RunHeartbeat,
  settleInterruptedRuns,
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

/** The database's clock (heartbeats are its now()): a beat written after this reads at or after it. */
const dbClock = async () => (await sql<{ at: Date }>`SELECT clock_timestamp() AS at`.execute(db)).rows[0]!.at.getTime();

describe('run records', () => {
  it('a run is written when it starts, owned by this process, alive as of now, and reads as running', async () => {
    const id = newRunId();
    const before = await dbClock();
    await startRun(db, id, w, { n: 1 }, null);
    const r = await row(id);
    expect(r).toMatchObject({ status: 'running', owner: INSTANCE_ID, steps: [] });
    expect(r.heartbeat_at!.getTime()).toBeGreaterThanOrEqual(before);
    expect(await getRun(db, A, asUuid(w.id), asUuid(id))).toMatchObject({ status: 'running', input: { n: 1 }, finished_at: null });
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
    const before = await dbClock();
    await beats.beat();
    for (const id of [one, two]) expect((await row(id)).heartbeat_at!.getTime()).toBeGreaterThanOrEqual(before);
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

    const swept = await getRun(db, A, asUuid(w.id), asUuid(dead));
    expect(swept).toMatchObject({
      status: 'failed',
      error: { step: 'run', kind: 'interrupted', message: expect.stringMatching(/^interrupted: the process running it stopped \(no heartbeat since \d{4}-\d\d-\d\dT/) },
      steps: [{ kind: 'stf', index: 0, status: 'succeeded' }],
    });
    expect(swept.finished_at).not.toBeNull();
    expect(swept.duration_ms).toBeGreaterThan(600_000);
    expect(await getRun(db, A, asUuid(w.id), asUuid(legacy))).toMatchObject({ status: 'failed', error: { kind: 'interrupted' } });
    expect((await getRun(db, A, asUuid(w.id), asUuid(fresh))).status).toBe('running');
    expect(await getRun(db, A, asUuid(w.id), asUuid(finished))).toMatchObject({ status: 'succeeded', error: null });

    // A run that was only slow to beat and then ends: what really happened wins over the sweep's verdict.
    await finishRun(db, dead, { status: 'succeeded', output: { late: true }, error: null, steps: [], duration_ms: 5 });
    expect(await getRun(db, A, asUuid(w.id), asUuid(dead))).toMatchObject({ status: 'succeeded', output: { late: true }, error: null });
  });
});

describe('the audit entry of a waiting run whose process died (issue 29, point 1)', () => {
  const entriesOf = async (runId: string) =>
    (
      await sql<{ action: string; resource_id: string; user_id: string | null; details: Record<string, unknown> }>`
        SELECT action, resource_id, user_id, details FROM platform.audit_logs WHERE workspace_id = ${A} AND details->>'run_id' = ${runId}`.execute(db)
    ).rows;

  it('is written by the sweep that ends it, once: what its STF steps committed is never without its run\'s entry', async () => {
    const [waiting, cancelled, queued] = [newRunId(), newRunId(), newRunId()];
    for (const id of [waiting, cancelled]) await startRun(db, id, w, null, null);
    await sql`UPDATE platform.workflow_runs SET cancel_requested_at = now() WHERE id = ${cancelled}`.execute(db);
    // A queued kind's run out of attempts has the entry it was queued with; the sweep adds none.
    await startRun(db, queued, w, null, null);
    await sql`UPDATE platform.workflow_runs SET trigger = 'async' WHERE id = ${queued}`.execute(db);
    for (const id of [waiting, cancelled, queued]) await age(id, 600_000);

    await settleInterruptedRuns(db, { staleAfterMs: 60_000 });
    expect(await entriesOf(waiting)).toEqual([
      { action: 'execute_workflow', resource_id: w.id, user_id: null, details: { run_id: waiting, status: 'failed', failed_step: 'run', interrupted: true } },
    ]);
    expect(await entriesOf(cancelled)).toEqual([
      { action: 'execute_workflow', resource_id: w.id, user_id: null, details: { run_id: cancelled, status: 'cancelled', interrupted: true } },
    ]);
    expect(await entriesOf(queued)).toEqual([]);
    // Settled runs are not settled again.
    await settleInterruptedRuns(db, { staleAfterMs: 60_000 });
    expect(await entriesOf(waiting)).toHaveLength(1);
  });
});

describe('settleInterruptedRuns: queued runs cut by a crash are resumed, a bounded number of times (issue 29)', () => {
  const full = (id: string) => db.selectFrom('platform.workflow_runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  /** A queued run of `trigger`, claimed `attempts` times by processes that died 10 minutes ago. */
  async function cut(trigger: 'async' | 'schedule' | 'webhook' | 'event', attempts: number): Promise<string> {
    const id = await queueRun(db, { workflow: w, input: { trigger }, executedBy: null, trigger });
    for (let i = 0; i < attempts; i++) {
      expect(await claimQueuedRun(db, id, randomUUID())).toMatchObject({ attempts: i + 1 });
      if (i < attempts - 1) await sql`UPDATE platform.workflow_runs SET status = 'queued' WHERE id = ${id}`.execute(db);
    }
    await sql`UPDATE platform.workflow_runs SET steps = ${JSON.stringify([{ kind: 'stf', index: 0, status: 'succeeded' }])}::jsonb,
                checkpoint = '{"definition":"d","stf":[],"effects":[]}'::jsonb WHERE id = ${id}`.execute(db);
    await age(id, 600_000);
    return id;
  }

  it('a queued kind goes back to queued with its steps and checkpoint; a waiting run fails; out of attempts fails; a cancel ends cancelled', async () => {
    const resumed = await Promise.all((['async', 'schedule', 'webhook', 'event'] as const).map((t) => cut(t, 1)));
    const last = await cut('event', 3);
    const waiting = newRunId();
    await startRun(db, waiting, w, null, null);
    await age(waiting, 600_000);
    const cancelled = await cut('async', 1);
    await sql`UPDATE platform.workflow_runs SET cancel_requested_at = now() WHERE id = ${cancelled}`.execute(db);

    const settled = await settleInterruptedRuns(db, { staleAfterMs: 60_000, maxAttempts: 3 });
    expect(settled.resumed.sort()).toEqual([...resumed].sort());
    expect(settled.failed).toBeGreaterThanOrEqual(2);
    expect(settled.cancelled).toBeGreaterThanOrEqual(1);
    for (const id of resumed) {
      const r = await full(id);
      expect(r).toMatchObject({ status: 'queued', owner: null, heartbeat_at: null, error: null, finished_at: null, attempts: 1, steps: [{ kind: 'stf', index: 0 }] });
      expect(r.checkpoint).toEqual({ definition: 'd', stf: [], effects: [] });
    }
    // Its third attempt died too: failed, saying so, and nothing left to resume.
    expect(await full(last)).toMatchObject({
      status: 'failed',
      attempts: 3,
      checkpoint: null,
      error: { step: 'run', kind: 'interrupted', message: expect.stringMatching(/^interrupted: the process running it stopped \(no heartbeat since .*\); attempt 3 of at most 3 \(RUN_MAX_ATTEMPTS\): not resumed again$/) },
    });
    expect(await getRun(db, A, asUuid(w.id), asUuid(last))).toMatchObject({ attempts: 3, status: 'failed' });
    // A run someone waited for is never sent again: its caller saw its request fail.
    expect(await full(waiting)).toMatchObject({ status: 'failed', attempts: 1, error: { kind: 'interrupted', message: expect.not.stringContaining('attempt') } });
    expect(await full(cancelled)).toMatchObject({ status: 'cancelled', error: { step: 'run', kind: 'cancelled' }, checkpoint: null });

    // The next claim is the second attempt; its start stays the first attempt's.
    const before = (await full(resumed[0] as string)).started_at;
    expect(await claimQueuedRun(db, resumed[0] as string)).toMatchObject({ status: 'running', attempts: 2, started_at: before });
    // A claim given back (no free place) is not an attempt.
    await requeueRun(db, resumed[0] as string);
    expect(await full(resumed[0] as string)).toMatchObject({ status: 'queued', attempts: 1 });
  });

  it('without maxAttempts nothing is resumed (sweepInterruptedRuns as before)', async () => {
    const id = await cut('async', 1);
    expect(await sweepInterruptedRuns(db, { staleAfterMs: 60_000 })).toBeGreaterThanOrEqual(1);
    expect(await full(id)).toMatchObject({ status: 'failed', error: { kind: 'interrupted' } });
  });

  it('an attempt that was only slow neither keeps the next attempt alive nor overwrites its end', async () => {
    const id = await cut('async', 1);
    await settleInterruptedRuns(db, { staleAfterMs: 60_000, maxAttempts: 3 });
    expect(await claimQueuedRun(db, id, randomUUID())).toMatchObject({ attempts: 2 });
    await age(id, 600_000);
    // The first attempt's process beats and finishes late.
    const beats = new RunHeartbeat({ db, intervalMs: 60_000 });
    beats.track(id, [{ kind: 'stf', index: 0, status: 'failed' }], undefined, 1);
    await beats.beat();
    beats.untrack(id);
    expect(Date.now() - (await full(id)).heartbeat_at!.getTime()).toBeGreaterThan(500_000);
    await finishRun(db, id, { status: 'failed', output: null, error: { step: 'stf_steps[0]', kind: 'late', message: 'late' }, steps: [], duration_ms: 1 }, undefined, undefined, 1);
    expect(await full(id)).toMatchObject({ status: 'running', attempts: 2 });
    // The second attempt's own end is recorded, and clears the checkpoint.
    await finishRun(db, id, { status: 'succeeded', output: 2, error: null, steps: [], duration_ms: 1 }, undefined, undefined, 2);
    expect(await full(id)).toMatchObject({ status: 'succeeded', output: 2, checkpoint: null });
  });
});
