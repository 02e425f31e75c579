// Issue 19: runs that do not hold a connection. An async execute answers 202 with the run id and the run goes through
// the job queue; a run can be cancelled queued (it never starts) or running (the steps not yet started never start),
// also from another process; a queued run whose job was lost is queued again by the sweep; nobody reaches another
// workspace's runs.
import { claimQueuedRun, queueRun, requeueRun, requeueStaleRuns, WORKFLOW_RUNS_QUEUE } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually, until, waitForStfQueue } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };

/** A JS STF; `busyMs` of busy work before it answers (the harness's STF_TIMEOUT_MS is 1500). */
async function stf(name: string, body: string, busyMs = 0): Promise<string> {
  const code = `${busyMs > 0 ? `const until = Date.now() + ${busyMs}; while (Date.now() < until) {}\n` : ''}${body}`;
  const r = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name, version: '1', runtime: 'javascript', code: b64(code) } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.version.id;
}
async function workflow(versions: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const r = await h.call('POST', '/api/v1/workflows', {
    token: owner.token,
    workspace: ws.id,
    body: { name: 'w', stf_steps: versions.map((id) => ({ stf_version_id: id, input_mappings: [] })), ...extra },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}
const run = (wf: string, runId: string, token = owner.token, workspace = ws.id) =>
  h.call('GET', `/api/v1/workflows/${wf}/runs/${runId}`, { token, workspace });
const cancel = (wf: string, runId: string, token = owner.token, workspace = ws.id, harness = h) =>
  harness.call('POST', `/api/v1/workflows/${wf}/runs/${runId}/cancel`, { token, workspace });
/** Polls the run until it has ended; its record. */
async function ended(wf: string, runId: string, harness = h): Promise<any> {
  let last: any;
  await eventually(async () => {
    last = (await harness.call('GET', `/api/v1/workflows/${wf}/runs/${runId}`, { token: owner.token, workspace: ws.id })).body;
    return !['queued', 'running'].includes(last.status);
  }, 20_000);
  return last;
}

/**
 * Resolves once the workflow-runs queue holds no job waiting or active: every run queued so far was taken and done
 * with (a queue not started yet has none).
 */
const runJobsDone = () =>
  until(async () => {
    const q = (await h.services.jobs.backlog()).find((b) => b.queue === WORKFLOW_RUNS_QUEUE);
    return (q?.waiting ?? 0) + (q?.active ?? 0) === 0 ? true : undefined;
  });

let double: string;
let slow: string;

beforeAll(async () => {
  // One queued run at a time here, so a second one stays queued while the first runs; beats every 100 ms.
  h = await Harness.create({ WORKFLOW_JOB_CONCURRENCY: '1', RUN_HEARTBEAT_INTERVAL_MS: '100', WORKFLOW_WORKSPACE_QUEUED_MAX: '3' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Async');
  double = await stf('double', 'return { n: $input.n * 2 };');
  slow = await stf('slow', 'return { n: $input.n + 1 };', 900);
});
afterAll(async () => {
  await h?.close();
});

describe('async execute', () => {
  it('answers 202 with the run id at once (Prefer: respond-async or async=true); the run goes through the queue', async () => {
    const wf = await workflow([double]);
    const a = await h.call('POST', `/api/v1/workflows/${wf}/execute`, {
      token: owner.token,
      workspace: ws.id,
      headers: { prefer: 'respond-async, wait=5' },
      body: { n: 21 },
    });
    expect(a.status, JSON.stringify(a.body)).toBe(202);
    expect(a.body).toEqual({ run_id: expect.any(String), workflow_id: wf, status: 'queued' });
    expect(a.headers.get('x-workflow-run-id')).toBe(a.body.run_id);
    expect(a.headers.get('location')).toBe(`/api/v1/workflows/${wf}/runs/${a.body.run_id}`);
    expect(a.headers.get('preference-applied')).toBe('respond-async');
    const done = await ended(wf, a.body.run_id);
    expect(done).toMatchObject({ status: 'succeeded', trigger: 'async', output: { n: 42 }, input: { n: 21 }, executed_by: owner.id });
    expect(done.queued_at).toEqual(expect.any(String));

    const b = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 1 } });
    expect(b.status).toBe(202);
    expect(b.headers.get('preference-applied')).toBeNull();
    expect(await ended(wf, b.body.run_id)).toMatchObject({ status: 'succeeded', output: { n: 2 } });

    // Without either, the request waits for the run as before, and its run says so.
    const c = await h.call('POST', `/api/v1/workflows/${wf}/execute`, { token: owner.token, workspace: ws.id, body: { n: 2 } });
    expect(c.status).toBe(200);
    expect((await run(wf, c.headers.get('x-workflow-run-id') as string)).body).toMatchObject({ trigger: 'request', queued_at: null });

    // Both audited: the request that queued it (status queued), and the run when it ended, as its user.
    const audit = await h.call('GET', '/api/v1/audit-logs?action=execute_workflow', { token: owner.token, workspace: ws.id });
    const ofRun = audit.body.filter((e: any) => e.details?.run_id === a.body.run_id);
    expect(ofRun.map((e: any) => e.details.status).sort()).toEqual(['queued', 'succeeded']);
    expect(ofRun.every((e: any) => e.user_id === owner.id)).toBe(true);
  });

  it('anonymous callers may run an open workflow, but not asynchronously (they could not read the run)', async () => {
    const wf = await workflow([double], { allow_anonymous_execute: true });
    const waited = await h.call('POST', `/api/v1/workflows/${wf}/execute`, { workspace: ws.id, body: { n: 1 } });
    expect(waited.status).toBe(200);
    const refused = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { workspace: ws.id, body: { n: 1 } });
    expect(refused.status).toBe(401);
  });

  it('a failing run is recorded failed with the step, like a waiting one; a bad async value is 400', async () => {
    const broken = await stf('broken', 'throw new Error("nope");');
    const wf = await workflow([broken]);
    const a = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=1`, { token: owner.token, workspace: ws.id, body: {} });
    expect(a.status).toBe(202);
    expect(await ended(wf, a.body.run_id)).toMatchObject({ status: 'failed', error: { step: 'stf_steps[0]', kind: 'runtime' } });
    const bad = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=maybe`, { token: owner.token, workspace: ws.id, body: {} });
    expect(bad.status).toBe(400);
  });
});

describe('cancel', () => {
  it('a queued run ends cancelled and never starts; a running one skips the steps not yet started', async () => {
    const wf = await workflow([slow, double]);
    // The first takes the one place; the second waits in the queue.
    const first = (await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 1 } })).body.run_id;
    const second = (await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 5 } })).body.run_id;
    await eventually(async () => (await run(wf, first)).body.status === 'running', 10_000);
    // Its slow step under way: its STF holds the worker (a run just claimed has not started a step yet).
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    expect((await run(wf, second)).body.status).toBe('queued');

    const queued = await cancel(wf, second);
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    expect(queued.body).toMatchObject({ status: 'cancelled', error: { step: 'run', kind: 'cancelled' }, steps: [] });

    const running = await cancel(wf, first);
    expect(running.status).toBe(200);
    expect(running.body.status).toBe('running');
    expect(running.body.cancel_requested_at).toEqual(expect.any(String));
    const done = await ended(wf, first);
    expect(done).toMatchObject({ status: 'cancelled', error: { step: 'run', kind: 'cancelled' }, output: null });
    // The slow step was under way and ended by itself; the next never started.
    expect(done.steps.map((s: any) => s.status)).toEqual(['succeeded', 'skipped']);
    // The cancelled queued run never ran, even once its job was taken.
    await runJobsDone();
    expect((await run(wf, second)).body).toMatchObject({ status: 'cancelled', steps: [] });

    // An ended run cannot be cancelled: 409.
    // The run list filters by state.
    const cancelledRuns = (await h.call('GET', `/api/v1/workflows/${wf}/runs?status=cancelled`, { token: owner.token, workspace: ws.id })).body;
    expect(cancelledRuns.map((r: any) => r.id).sort()).toEqual([first, second].sort());
    expect((await h.call('GET', `/api/v1/workflows/${wf}/runs?status=sleeping`, { token: owner.token, workspace: ws.id })).status).toBe(400);
    const again = await cancel(wf, first);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('CONFLICT');
  });

  it('a waiting execution cancelled from elsewhere answers 409 naming the run', async () => {
    const wf = await workflow([slow, double]);
    const waiting = h.call('POST', `/api/v1/workflows/${wf}/execute`, { token: owner.token, workspace: ws.id, body: { n: 1 } });
    let runId: string | undefined;
    await eventually(async () => {
      const list = (await h.call('GET', `/api/v1/workflows/${wf}/runs`, { token: owner.token, workspace: ws.id })).body;
      runId = list.find((r: any) => r.status === 'running')?.id;
      return runId !== undefined;
    }, 10_000);
    expect((await cancel(wf, runId as string)).status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(409);
    expect(JSON.parse(answer.body.details)).toMatchObject({ run_id: runId, kind: 'cancelled' });
  });

  it('a cancel asked through another process stops the run at its process\'s next heartbeat', async () => {
    const other = await Harness.create({}, h.url);
    try {
      const wf = await workflow([slow, double]);
      const runId = (await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 1 } })).body.run_id;
      await eventually(async () => (await run(wf, runId)).body.status === 'running', 10_000);
      const asked = await cancel(wf, runId, owner.token, ws.id, other);
      expect(asked.status).toBe(200);
      expect(await ended(wf, runId)).toMatchObject({ status: 'cancelled' });
    } finally {
      await other.close();
    }
  });

  it('only the run\'s executor or a workflow editor may cancel it; another workspace\'s runs are 404', async () => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    const wf = await workflow([slow]);
    const runId = (await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 1 } })).body.run_id;
    // The member may execute and read runs, but not cancel the owner's (no workflow editor group set: admins edit).
    expect((await run(wf, runId, member.token)).status).toBe(200);
    const refused = await cancel(wf, runId, member.token);
    expect(refused.status).toBe(403);

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    for (const r of [await run(wf, runId, stranger.token, theirs.id), await cancel(wf, runId, stranger.token, theirs.id)]) {
      expect(r.status).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain(runId);
    }
    expect((await cancel(wf, 'not-a-uuid')).status).toBe(404);
    await ended(wf, runId);
  });
});

describe('a workspace cannot fill the shared queue', () => {
  it('a workspace with a backlog does not hold up another workspace\'s next run', async () => {
    // The other workspace and its workflow first, so that queuing its run is one call.
    const other = await h.user('fair');
    const theirs = await h.workspace(other.token, 'Light');
    const s = await h.call('POST', '/api/v1/stfs', { token: other.token, workspace: theirs.id, body: { name: 'one', version: '1', runtime: 'javascript', code: b64('return 1;') } });
    const w = await h.call('POST', '/api/v1/workflows', {
      token: other.token,
      workspace: theirs.id,
      body: { name: 'w', stf_steps: [{ stf_version_id: s.body.version.id, input_mappings: [] }] },
    });
    const wf = await workflow([slow]);
    const queue = async () => (await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 1 } })).body.run_id;
    const a1 = await queue();
    await eventually(async () => (await run(wf, a1)).body.status === 'running', 10_000);
    const a2 = await queue();
    const a3 = await queue();
    // Queued last, while the first of the backlog still runs (it takes 900 ms): its run goes before the backlog's.
    const b1 = (await h.call('POST', `/api/v1/workflows/${w.body.id}/execute?async=true`, { token: other.token, workspace: theirs.id, body: {} })).body.run_id;
    expect((await run(wf, a1)).body.status).toBe('running');
    const theirRun = async () => (await h.call('GET', `/api/v1/workflows/${w.body.id}/runs/${b1}`, { token: other.token, workspace: theirs.id })).body;
    await eventually(async () => (await theirRun()).status === 'succeeded', 20_000);
    const done = await Promise.all([a2, a3].map((id) => ended(wf, id)));
    // One run at a time in this process: the light workspace's started before the backlog's second.
    expect(Date.parse((await theirRun()).started_at)).toBeLessThan(Date.parse(done[0].started_at));
  });

  it('beyond WORKFLOW_WORKSPACE_QUEUED_MAX queued runs, one more is 429 with nothing recorded; other workspaces queue on', async () => {
    const wf = await workflow([slow]);
    const ids: string[] = [];
    // One runs (the process's one place), three wait: the cap.
    for (let i = 0; i < 4; i++) {
      const r = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: i } });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      ids.push(r.body.run_id);
      if (i === 0) await eventually(async () => (await run(wf, r.body.run_id)).body.status === 'running', 10_000);
    }
    const before = (await h.call('GET', `/api/v1/workflows/${wf}/runs`, { token: owner.token, workspace: ws.id })).body.length;
    const refused = await h.call('POST', `/api/v1/workflows/${wf}/execute?async=true`, { token: owner.token, workspace: ws.id, body: { n: 9 } });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('TOO_MANY_REQUESTS');
    expect((await h.call('GET', `/api/v1/workflows/${wf}/runs`, { token: owner.token, workspace: ws.id })).body.length).toBe(before);
    // Another workspace's cap is its own.
    const other = await h.user('other-ws');
    const theirs = await h.workspace(other.token, 'Other');
    const code = b64('return 1;');
    const s = await h.call('POST', '/api/v1/stfs', { token: other.token, workspace: theirs.id, body: { name: 'one', version: '1', runtime: 'javascript', code } });
    const w = await h.call('POST', '/api/v1/workflows', {
      token: other.token,
      workspace: theirs.id,
      body: { name: 'w', stf_steps: [{ stf_version_id: s.body.version.id, input_mappings: [] }] },
    });
    const queued = await h.call('POST', `/api/v1/workflows/${w.body.id}/execute?async=true`, { token: other.token, workspace: theirs.id, body: {} });
    expect(queued.status).toBe(202);
    for (const id of ids.slice(1)) await cancel(wf, id);
    await ended(wf, ids[0] as string);
  });
});

describe('queued runs survive a lost job, and may not outlive their user', () => {
  it('a run given back to the queue after a cancel was asked ends cancelled instead of waiting again', async () => {
    const wf = await workflow([double]);
    const runId = await queueRun(h.services.db, { workflow: { id: wf, workspace_id: ws.id }, input: {}, executedBy: owner.id, trigger: 'async' });
    // Claimed by a process, cancelled before it started a step, then given back (no place in its workspace).
    expect(await claimQueuedRun(h.services.db, runId, '00000000-0000-4000-8000-0000000000aa')).toBeDefined();
    expect((await cancel(wf, runId)).body).toMatchObject({ status: 'running', cancel_requested_at: expect.any(String) });
    await requeueRun(h.services.db, runId);
    expect((await run(wf, runId)).body).toMatchObject({ status: 'cancelled', error: { kind: 'cancelled' } });
  });

  it('a queued run without a job (its process died before queuing it) is queued again by the sweep', async () => {
    const wf = await workflow([double]);
    // Recorded as a request would, but never put on the queue.
    const runId = await queueRun(h.services.db, { workflow: { id: wf, workspace_id: ws.id }, input: { n: 4 }, executedBy: owner.id, trigger: 'async' });
    // Nothing runs it: with every job done, it is still queued.
    await runJobsDone();
    expect((await run(wf, runId)).body.status).toBe('queued');
    // The sweep's rule: queued longer than RUN_STALE_AFTER_MS.
    const sweeper = { ...h.services, config: { ...h.services.config, RUN_STALE_AFTER_MS: 0 } };
    expect(await requeueStaleRuns(sweeper)).toBeGreaterThanOrEqual(1);
    expect(await ended(wf, runId)).toMatchObject({ status: 'succeeded', output: { n: 8 } });
  });

  it("a schedule's run queued before another editor changed the workflow's steps does not run them as the old owner", async () => {
    const other = await h.user('other-editor');
    await h.addMember(owner.token, ws.id, other.email, 'admin');
    const wf = await workflow([double]);
    const schedule = (await h.call('POST', `/api/v1/workflows/${wf}/schedules`, { token: owner.token, workspace: ws.id, body: { cron: '0 0 1 1 *', paused: true } })).body;
    const runId = await queueRun(h.services.db, { workflow: { id: wf, workspace_id: ws.id }, input: { n: 1 }, executedBy: owner.id, trigger: 'schedule', triggerId: schedule.id });
    const patched = await h.call('PATCH', `/api/v1/workflows/${wf}`, { token: other.token, workspace: ws.id, body: { stf_steps: [{ stf_version_id: double, input_mappings: [] }, { stf_version_id: double, input_mappings: [] }] } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const sweeper = { ...h.services, config: { ...h.services.config, RUN_STALE_AFTER_MS: 0 } };
    await requeueStaleRuns(sweeper);
    expect(await ended(wf, runId)).toMatchObject({ status: 'failed', error: { step: 'run', kind: 'owner_changed' }, steps: [] });
    // The schedule is the changer's now: its next runs are theirs.
    expect((await h.call('GET', `/api/v1/workflows/${wf}/schedules/${schedule.id}`, { token: owner.token, workspace: ws.id })).body.created_by).toBe(other.id);
  });

  it('a run queued by a user who is no longer a member ends failed without running', async () => {
    const leaving = await h.user('leaving');
    const m = await h.addMember(owner.token, ws.id, leaving.email, 'member');
    const wf = await workflow([double]);
    const runId = await queueRun(h.services.db, { workflow: { id: wf, workspace_id: ws.id }, input: { n: 1 }, executedBy: leaving.id, trigger: 'async' });
    const members = (await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token })).body;
    const membership = members.find((x: any) => x.user_id === leaving.id);
    expect(membership, JSON.stringify(m)).toBeDefined();
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${membership.id}`, { token: owner.token })).status).toBe(204);
    const sweeper = { ...h.services, config: { ...h.services.config, RUN_STALE_AFTER_MS: 0 } };
    await requeueStaleRuns(sweeper);
    expect(await ended(wf, runId)).toMatchObject({ status: 'failed', error: { step: 'run', kind: 'forbidden' }, steps: [] });
  });
});
