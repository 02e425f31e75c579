// Issue 19: cron schedules of workflows. Managed by workflow editors, checked when saved (expression, zone, shortest
// interval); fired by two processes (two sets of services on one database) asking at once: each tick fires exactly
// once, as the schedule's creator with its input; ticks missed while nobody asked fire once. The rounds are asked at
// the seconds to come (fireDueSchedules' `now`), so no test waits for the clock.
import { checkSchedule, fireDueSchedules } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let other: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let member: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let wf: string;

const call = (method: string, path: string, body?: unknown, token = owner.token, workspace = ws.id) => h.call(method, path, { token, workspace, body });
const schedules = (workflowId = wf) => `/api/v1/workflows/${workflowId}/schedules`;
/** `ms` from now: when a round of fireDueSchedules takes place. */
const inMs = (ms: number) => new Date(Date.now() + ms);

beforeAll(async () => {
  // The ticks of seconds to come fire within moments, so their runs queue at once and wait for the harness's one
  // JavaScript worker together: the default STF time limit (waiting included), not the harness's 1.5 s.
  const env = { SCHEDULE_MIN_INTERVAL_MS: '1000', WORKFLOW_JOB_CONCURRENCY: '2', STF_TIMEOUT_MS: '10000' };
  h = await Harness.create(env);
  other = await Harness.create(env, h.url);
  owner = await h.user('owner');
  member = await h.user('member');
  ws = await h.workspace(owner.token, 'Scheduled');
  await h.addMember(owner.token, ws.id, member.email, 'member');
  const stf = await call('POST', '/api/v1/stfs', { name: 'echo', version: '1', runtime: 'javascript', code: b64('return { got: $input };') });
  expect(stf.status, JSON.stringify(stf.body)).toBe(201);
  const w = await call('POST', '/api/v1/workflows', { name: 'nightly', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  wf = w.body.id;
});
afterAll(async () => {
  await other?.close();
  await h?.close();
});

describe('schedules: managing them', () => {
  it('create, list, get, pause, resume, retime, delete; each checked and audited', async () => {
    const created = await call('POST', schedules(), { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', input: { report: 'daily' }, name: 'weekday 9am' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ workflow_id: wf, cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', input: { report: 'daily' }, paused: false, created_by: owner.id });
    // 09:00 in Berlin is 07:00 or 08:00 UTC, on a weekday.
    const next = new Date(created.body.next_run_at);
    expect([7, 8]).toContain(next.getUTCHours());
    expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay());
    const id = created.body.id;

    expect((await call('GET', schedules())).body.map((s: any) => s.id)).toContain(id);
    expect((await call('GET', `${schedules()}/${id}`, undefined, member.token)).body.id).toBe(id);

    const paused = await call('PATCH', `${schedules()}/${id}`, { paused: true });
    expect(paused.body).toMatchObject({ paused: true, next_run_at: null });
    const resumed = await call('PATCH', `${schedules()}/${id}`, { paused: false, cron: '30 6 * * *', timezone: 'UTC' });
    expect(resumed.body).toMatchObject({ paused: false, cron: '30 6 * * *' });
    expect(new Date(resumed.body.next_run_at).getUTCHours()).toBe(6);

    // Changed by another editor, it runs as that editor from then on.
    const second = await h.user('second-admin');
    await h.addMember(owner.token, ws.id, second.email, 'admin');
    const taken = await h.call('PATCH', `${schedules()}/${id}`, { token: second.token, workspace: ws.id, body: { input: { report: 'mine' } } });
    expect(taken.body).toMatchObject({ created_by: second.id, input: { report: 'mine' } });

    expect((await call('DELETE', `${schedules()}/${id}`)).status).toBe(204);
    expect((await call('GET', `${schedules()}/${id}`)).status).toBe(404);
    const audit = (await call('GET', '/api/v1/audit-logs?limit=1000')).body.map((e: any) => e.action);
    expect(audit).toEqual(expect.arrayContaining(['create_workflow_schedule', 'update_workflow_schedule', 'delete_workflow_schedule']));
  });

  it('refuses a bad expression, a bad zone, one that never fires, a bad name and unknown fields (400)', async () => {
    for (const body of [
      { cron: 'every morning' },
      { cron: '* * * * *', timezone: 'Mars/Olympus_Mons' },
      { cron: '0 0 0 1 1 * 2001' },
      { cron: '0 * * * *', name: '' },
      { cron: '0 * * * *', extra: true },
    ]) {
      const r = await call('POST', schedules(), body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
    // Firing more often than SCHEDULE_MIN_INTERVAL_MS (1 s in this file, 1 min by default) is refused, saying why.
    const refusal = (cron: string, minMs: number) => {
      try {
        checkSchedule(cron, 'UTC', minMs);
      } catch (e) {
        return (e as { code?: string; details?: string }).code === 'VALIDATION_ERROR' ? (e as { details?: string }).details : 'not a validation error';
      }
      return 'accepted';
    };
    expect(refusal('* * * * *', 120_000)).toMatch(/at most every 120000 ms/);
    expect(refusal('*/30 * * * * *', 60_000)).toMatch(/30000 ms apart/);
    expect(checkSchedule('0 */2 * * *', 'UTC', 60_000).getUTCMinutes()).toBe(0);
  });

  it('members read schedules but only workflow editors manage them; another workspace sees nothing', async () => {
    const refused = await call('POST', schedules(), { cron: '0 * * * *' }, member.token);
    expect(refused.status).toBe(403);
    const mine = await call('POST', schedules(), { cron: '0 * * * *', paused: true });
    expect(mine.status).toBe(201);
    expect((await call('PATCH', `${schedules()}/${mine.body.id}`, { paused: false }, member.token)).status).toBe(403);
    expect((await call('DELETE', `${schedules()}/${mine.body.id}`, undefined, member.token)).status).toBe(403);

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    for (const [method, path] of [
      ['GET', schedules()],
      ['GET', `${schedules()}/${mine.body.id}`],
      ['PATCH', `${schedules()}/${mine.body.id}`],
      ['DELETE', `${schedules()}/${mine.body.id}`],
      ['POST', schedules()],
    ] as const) {
      const r = await call(method, path, method === 'PATCH' ? { paused: false } : method === 'POST' ? { cron: '0 * * * *' } : undefined, stranger.token, theirs.id);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain(mine.body.id);
    }
    await call('DELETE', `${schedules()}/${mine.body.id}`);
  });
});

describe('schedules: firing', () => {
  it('two processes asking every 100 ms fire each tick of an every-second schedule exactly once, as its creator', async () => {
    const s = await call('POST', schedules(), { cron: '* * * * * *', input: { from: 'schedule' } });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    // Both processes' tickers, at once, every 100 ms of the next 3.3 s.
    const start = Date.now();
    let last = start;
    for (let at = start; at <= start + 3_300; at += 100) {
      last = at;
      await Promise.all([fireDueSchedules(h.services, { now: new Date(at) }), fireDueSchedules(other.services, { now: new Date(at) })]);
    }
    expect((await call('PATCH', `${schedules()}/${s.body.id}`, { paused: true })).status).toBe(200);

    const runs = (await call('GET', `/api/v1/workflows/${wf}/runs?limit=100&trigger=schedule&trigger_id=${s.body.id}`)).body;
    expect(runs.every((r: any) => r.trigger_id === s.body.id)).toBe(true);
    const fired = (await call('GET', '/api/v1/audit-logs?action=execute_workflow&limit=1000')).body.filter(
      (e: any) => e.details?.schedule_id === s.body.id && e.details.status === 'queued',
    );
    const ticks = fired.map((e: any) => e.details.tick as string).sort();
    // One run per tick, no tick twice, no tick left out: every second from the first tick to the last round.
    const expected: string[] = [];
    for (let t = Date.parse(s.body.next_run_at); t <= last; t += 1000) expected.push(new Date(t).toISOString());
    expect(expected.length).toBeGreaterThanOrEqual(3);
    expect(ticks).toEqual(expected);
    expect(runs.length).toBe(ticks.length);
    for (const r of runs) expect(r).toMatchObject({ trigger: 'schedule', executed_by: owner.id });

    // They run through the queue as the creator, with the schedule's input.
    await eventually(async () => {
      const all = (await call('GET', `/api/v1/workflows/${wf}/runs?limit=100`)).body.filter((r: any) => r.trigger_id === s.body.id);
      return all.every((r: any) => r.status === 'succeeded');
    }, 20_000);
    const one = (await call('GET', `/api/v1/workflows/${wf}/runs/${runs[0].id}`)).body;
    expect(one).toMatchObject({ input: { from: 'schedule' }, output: { got: { from: 'schedule' } } });
    const after = (await call('GET', `${schedules()}/${s.body.id}`)).body;
    expect(after.last_run_id).toEqual(expect.any(String));
    await call('DELETE', `${schedules()}/${s.body.id}`);
  });

  it('ticks missed while no process asked fire once, late, and the schedule goes on from now', async () => {
    const s = await call('POST', schedules(), { cron: '* * * * * *' });
    const late = inMs(3_200);
    const queued = await fireDueSchedules(h.services, { now: late });
    const mine = queued.length;
    expect(mine).toBe(1);
    const entry = (await call('GET', '/api/v1/audit-logs?action=execute_workflow&limit=1000')).body.find(
      (e: any) => e.details?.schedule_id === s.body.id,
    );
    expect(entry.details.late_ms).toBeGreaterThan(2_000);
    const after = (await call('GET', `${schedules()}/${s.body.id}`)).body;
    expect(Date.parse(after.next_run_at)).toBeGreaterThan(late.getTime());
    expect(Date.parse(after.next_run_at)).toBeLessThanOrEqual(late.getTime() + 1000);
    // Paused, nothing fires.
    await call('PATCH', `${schedules()}/${s.body.id}`, { paused: true });
    expect(await fireDueSchedules(h.services, { now: inMs(3_200 + 1_100) })).toEqual([]);
    await call('DELETE', `${schedules()}/${s.body.id}`);
  });

  it('a schedule of a deleted workflow does not fire; one whose creator left runs nothing and says why', async () => {
    const leaving = await h.user('leaving');
    await h.addMember(owner.token, ws.id, leaving.email, 'admin');
    const s = await h.call('POST', schedules(), { token: leaving.token, workspace: ws.id, body: { cron: '* * * * * *' } });
    expect(s.status, JSON.stringify(s.body)).toBe(201);
    const members = (await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token })).body;
    const m = members.find((x: any) => x.user_id === leaving.id);
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token })).status).toBe(204);
    const [runId] = await fireDueSchedules(h.services, { now: inMs(1_100) });
    expect(runId).toBeDefined();
    await eventually(async () => (await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body.status === 'failed', 20_000);
    expect((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body).toMatchObject({
      status: 'failed',
      trigger: 'schedule',
      error: { step: 'run', kind: 'forbidden' },
      steps: [],
    });
    await call('PATCH', `${schedules()}/${s.body.id}`, { paused: true });

    // A deleted workflow's schedules stay quiet.
    const w2 = await call('POST', '/api/v1/workflows', { name: 'gone' });
    const s2 = await call('POST', schedules(w2.body.id), { cron: '* * * * * *' });
    expect(s2.status).toBe(201);
    expect((await call('DELETE', `/api/v1/workflows/${w2.body.id}`)).status).toBe(204);
    expect(await fireDueSchedules(h.services, { now: inMs(1_100) })).toEqual([]);
    // …and it is paused, so later rounds do not keep finding it.
    const row = await h.services.db.selectFrom('platform.workflow_schedules').select('paused').where('id', '=', s2.body.id).executeTakeFirstOrThrow();
    expect(row.paused).toBe(true);
  });
});
