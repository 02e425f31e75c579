// Issue 28 (1): another editor's new STF or effect version never runs with the owner's rows. A schedule, hook or
// trigger runs each unpinned step at the version that was newest when its workflow was last saved, not at one another
// editor added since (whoever saves it with newer versions takes its automation over); an async run runs the
// versions of the moment it was asked for, and not at all when someone changed the workflow's steps meanwhile. A run
// asked for by hand runs what the last save accepted or a newer version its own user wrote. Every run's step records
// name the versions that ran.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dispatchWorkflowEvents, fireDueSchedules, queueRun } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let editor: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };

/** What reached the loopback endpoint: the path and the JSON body of each request. A `/gate` request waits for `open()`. */
const received: { path: string; body: any }[] = [];
let gateOpen: () => void = () => undefined;
const gate = new Promise<void>((r) => (gateOpen = r));
let sink: http.Server;
let sinkUrl = '';

const call = (method: string, path: string, body?: unknown, token = owner.token) => h.call(method, path, { token, workspace: ws.id, body });
const sign = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const leaks = () => received.filter((r) => r.path === '/leak');

/** The run's record once it has ended. */
async function ended(wf: string, runId: string): Promise<any> {
  let last: any;
  await eventually(async () => {
    last = (await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body;
    return !['queued', 'running'].includes(last.status);
  }, 20_000);
  return last;
}
/** Asks `tick` until the workflow has a run started by `trigger`; that run once it has ended. */
async function firstRun(wf: string, trigger: string, tick: () => Promise<unknown>): Promise<any> {
  let id: string | undefined;
  await eventually(async () => {
    await tick();
    id = (await call('GET', `/api/v1/workflows/${wf}/runs?trigger=${trigger}&limit=1`)).body[0]?.id;
    return id !== undefined;
  }, 20_000);
  return ended(wf, id as string);
}
const versionsRun = (run: any) => run.steps.filter((s: any) => s.kind !== 'input').map((s: any) => (s.kind === 'stf' ? s.stf_version_id : s.effect_version_id));

let stf: { id: string; v1: string };
let effect: { id: string; v1: string };
/** A's workflow: the ledger (read with its runner's policies) → the STF → the effect, both unpinned. */
async function ledgerFlow(name: string): Promise<string> {
  const r = await call('POST', '/api/v1/workflows', {
    name,
    input_steps: [{ name: 'ledger', source: { type: 'Table', name: 'ledger' } }],
    stf_steps: [{ stf_version_id: stf.v1, input_mappings: [] }],
    effect_steps: [{ effect_version_id: effect.v1, input_mappings: [] }],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

beforeAll(async () => {
  sink = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
      received.push({ path: req.url ?? '', body: body ? JSON.parse(body) : null });
      if (req.url === '/gate') await gate;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  // One queued run at a time: a run waiting at the gate keeps the next ones queued until the test opens it.
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1', WORKFLOW_JOB_CONCURRENCY: '1', SCHEDULE_MIN_INTERVAL_MS: '1000' });
  owner = await h.user('owner');
  editor = await h.user('editor');
  ws = await h.workspace(owner.token, 'Versions');
  // Both are workflow editors (admins); only the owner may read the ledger.
  await h.addMember(owner.token, ws.id, editor.email, 'admin');
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE ledger (who text, salary int)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['ledger']);
  await h.sqlOk(owner.token, ws.id, "INSERT INTO ledger (who, salary) VALUES ('alice', 123456)");
  const s = await call('POST', '/api/v1/stfs', { name: 'count', version: '1', runtime: 'javascript', code: b64('return { v: 1, rows: $sources.ledger.length };') });
  expect(s.status, JSON.stringify(s.body)).toBe(201);
  stf = { id: s.body.id, v1: s.body.version.id };
  const e = await call('POST', '/api/v1/effects', {
    name: 'notify',
    version: '1',
    method: 'POST',
    url: `${sinkUrl}/a`,
    header_mappings: [],
    body_mappings: [{ source: { type: 'Variable', value: '$.v' }, target: 'v' }],
  });
  expect(e.status, JSON.stringify(e.body)).toBe(201);
  effect = { id: e.body.id, v1: e.body.version.id };
});
afterAll(async () => {
  gateOpen();
  await h?.close();
  await new Promise((r) => sink?.close(r));
});

describe("another editor's new version", () => {
  it("never runs with the owner's rows: schedules, hooks, file and row triggers and async runs run what their workflow's last save accepted", async () => {
    const scheduled = await ledgerFlow('scheduled');
    const hooked = await ledgerFlow('hooked');
    const onUpload = await ledgerFlow('on upload');
    const onRow = await ledgerFlow('on row');
    const queued = await ledgerFlow('queued');
    const changed = await ledgerFlow('changed');
    // A sets up the automation: all of it runs as A, with A's rows.
    expect((await call('POST', `/api/v1/workflows/${scheduled}/schedules`, { cron: '* * * * * *' })).status).toBe(201);
    const hook = (await call('POST', `/api/v1/workflows/${hooked}/hooks`, {})).body;
    expect((await call('POST', `/api/v1/workflows/${onUpload}/triggers`, { event: 'file_uploaded' })).status).toBe(201);
    expect((await call('POST', `/api/v1/workflows/${onRow}/triggers`, { event: 'row_inserted', table_name: 'ledger' })).status).toBe(201);

    // A run waits at the gate, holding the one place for queued runs; A's async runs wait behind it.
    const gateFlow = (await call('POST', '/api/v1/workflows', { name: 'gate', input_steps: [{ name: 'g', source: { type: 'Fetch', url: `${sinkUrl}/gate`, timeout_secs: 30 } }] })).body.id;
    const gated = (await call('POST', `/api/v1/workflows/${gateFlow}/execute?async=true`, {})).body.run_id;
    await eventually(async () => received.some((r) => r.path === '/gate'), 20_000);
    const asked = (await call('POST', `/api/v1/workflows/${queued}/execute?async=true`, {})).body.run_id;
    const askedChanged = (await call('POST', `/api/v1/workflows/${changed}/execute?async=true`, {})).body.run_id;
    expect((await call('GET', `/api/v1/workflows/${queued}/runs/${asked}`)).body.status).toBe('queued');

    // Another editor adds versions that would hand A's rows to them, changing no workflow...
    const s2 = await call('POST', `/api/v1/stfs/${stf.id}/versions`, { version: '2', runtime: 'javascript', code: b64('return { v: 2, leaked: $sources.ledger };') }, editor.token);
    expect(s2.status, JSON.stringify(s2.body)).toBe(201);
    const e2 = await call(
      'POST',
      `/api/v1/effects/${effect.id}/versions`,
      { version: '2', method: 'POST', url: `${sinkUrl}/leak`, header_mappings: [], body_mappings: [{ source: { type: 'Variable', value: '$.leaked' }, target: 'leaked' }] },
      editor.token,
    );
    expect(e2.status, JSON.stringify(e2.body)).toBe(201);
    // ...and changes the steps of one with a run A asked for still queued.
    const patched = await call('PATCH', `/api/v1/workflows/${changed}`, { stf_steps: [{ stf_version_id: s2.body.id, pin_version: true, input_mappings: [] }] }, editor.token);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    gateOpen();
    expect((await ended(gateFlow, gated)).status).toBe('succeeded');

    // The async run runs the versions of the moment A asked for it.
    const asyncRun = await ended(queued, asked);
    expect(asyncRun).toMatchObject({ status: 'succeeded', executed_by: owner.id, output: { v: 1, rows: 1 } });
    expect(versionsRun(asyncRun)).toEqual([stf.v1, effect.v1]);
    // The one whose steps another editor changed after A asked does not run at all.
    const changedRun = await ended(changed, askedChanged);
    expect(changedRun).toMatchObject({ status: 'failed', error: { step: 'run', kind: 'workflow_changed' }, steps: [] });

    // The schedule's next tick, a signed delivery, an upload (by the other editor), a row A writes: each runs as A, at v1.
    const tick = await firstRun(scheduled, 'schedule', () => fireDueSchedules(h.services));
    const body = JSON.stringify({ ref: 'main' });
    const delivered = await h.app.request(hook.path, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(hook.secret, body) } });
    expect(delivered.status).toBe(202);
    const delivery = await ended(hooked, ((await delivered.json()) as any).run_id);
    // A hook A makes now, after those versions were added, runs what the workflow's last save accepted too.
    const lateHook = (await call('POST', `/api/v1/workflows/${hooked}/hooks`, {})).body;
    const late = await h.app.request(lateHook.path, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(lateHook.secret, body) } });
    const lateDelivery = await ended(hooked, ((await late.json()) as any).run_id);
    const up = await call('POST', `/api/v1/workspaces/${ws.id}/files`, { filename: 'n.txt', content_type: 'text/plain', content: b64('hi') }, editor.token);
    expect(up.status).toBe(201);
    const uploaded = await firstRun(onUpload, 'event', () => dispatchWorkflowEvents(h.services));
    await h.sqlOk(owner.token, ws.id, "INSERT INTO ledger (who, salary) VALUES ('bob', 99)");
    const rowRun = await firstRun(onRow, 'event', () => dispatchWorkflowEvents(h.services));
    for (const run of [tick, delivery, lateDelivery, uploaded, rowRun]) {
      expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', executed_by: owner.id, output: { v: 1 } });
      expect(versionsRun(run)).toEqual([stf.v1, effect.v1]);
    }
    // The other editor's code never saw A's rows: nothing reached their endpoint.
    expect(leaks()).toEqual([]);
    expect(received.filter((r) => r.path === '/a').length).toBeGreaterThanOrEqual(6);
    // What its automation runs is on the workflow: each unpinned step's referenced version → the version accepted.
    expect((await call('GET', `/api/v1/workflows/${hooked}`)).body.accepted_versions).toEqual({ stf: { [stf.v1]: stf.v1 }, effect: { [effect.v1]: effect.v1 } });

    // By hand too, a run carries its user's rows: A runs what the workflow's last save accepted, not B's versions.
    const handRun = async (token: string) => {
      const r = await call('POST', `/api/v1/workflows/${queued}/execute`, {}, token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return { output: r.body, run: (await call('GET', `/api/v1/workflows/${queued}/runs/${r.headers.get('x-workflow-run-id')}`, undefined, token)).body };
    };
    const byOwner = await handRun(owner.token);
    expect(byOwner.output).toEqual({ v: 1, rows: 2 });
    expect(versionsRun(byOwner.run)).toEqual([stf.v1, effect.v1]);
    expect(leaks()).toEqual([]);
    // A version A writes runs in A's runs at once, without a save.
    const s3 = await call('POST', `/api/v1/stfs/${stf.id}/versions`, { version: 'own', runtime: 'javascript', code: b64('return { v: 3, rows: $sources.ledger.length };') });
    expect(s3.status, JSON.stringify(s3.body)).toBe(201);
    const own = await handRun(owner.token);
    expect(own.output).toEqual({ v: 3, rows: 2 });
    expect(versionsRun(own.run)).toEqual([s3.body.id, effect.v1]);
    // An async run A asks for now runs the same.
    const later = (await call('POST', `/api/v1/workflows/${queued}/execute?async=true`, {})).body.run_id;
    const laterRun = await ended(queued, later);
    expect(laterRun).toMatchObject({ status: 'succeeded', output: { v: 3, rows: 2 } });
    expect(versionsRun(laterRun)).toEqual([s3.body.id, effect.v1]);
    expect(leaks()).toEqual([]);
  });

  it("saving the workflow accepts the newest versions: by its automation's owner, or by another editor who then takes it over", async () => {
    const wf = await ledgerFlow('accepted');
    const hook = (await call('POST', `/api/v1/workflows/${wf}/hooks`, {})).body;
    const schedule = (await call('POST', `/api/v1/workflows/${wf}/schedules`, { cron: '* * * * * *', paused: true })).body;
    const s3 = await call('POST', `/api/v1/stfs/${stf.id}/versions`, { version: '3', runtime: 'javascript', code: b64('return { v: 3 };') }, editor.token);
    expect(s3.status).toBe(201);
    const deliver = async (n: number) => {
      const body = JSON.stringify({ n });
      const res = await h.app.request(hook.path, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(hook.secret, body) } });
      expect(res.status).toBe(202);
      return ended(wf, ((await res.json()) as any).run_id);
    };
    const scheduleRuns = async () => (await call('GET', `/api/v1/workflows/${wf}/runs?trigger=schedule&limit=100`)).body as any[];
    const nextTick = async () => {
      const before = (await scheduleRuns()).length;
      let id: string | undefined;
      await eventually(async () => {
        await fireDueSchedules(h.services);
        const runs = await scheduleRuns();
        id = runs.length > before ? runs[0].id : undefined;
        return id !== undefined;
      }, 20_000);
      return ended(wf, id as string);
    };
    // The owner's own changes of the hook and the schedule (rename, resume) accept no code.
    expect((await call('PATCH', `/api/v1/workflows/${wf}/hooks/${hook.id}`, { name: 'renamed' })).status).toBe(200);
    expect((await call('PATCH', `/api/v1/workflows/${wf}/schedules/${schedule.id}`, { paused: false })).body.created_by).toBe(owner.id);
    for (const run of [await deliver(1), await nextTick()]) expect(versionsRun(run)[0]).not.toBe(s3.body.id);
    // The owner saves the workflow (nothing changed in it): its hook and schedule run the newest from then on.
    expect((await call('PATCH', `/api/v1/workflows/${wf}`, {})).body.accepted_versions.stf).toEqual({ [stf.v1]: s3.body.id });
    for (const run of [await deliver(2), await nextTick()]) {
      expect(run).toMatchObject({ status: 'succeeded', executed_by: owner.id, output: { v: 3 } });
      expect(versionsRun(run)[0]).toBe(s3.body.id);
    }
    expect((await call('PATCH', `/api/v1/workflows/${wf}/schedules/${schedule.id}`, { paused: true })).status).toBe(200);

    // Another editor adds a version that posts the rows, then saves the workflow (only a rename): they take its hook
    // over, so the version they chose runs as them, with their rows (none of the ledger), never as the owner.
    const s5 = await call('POST', `/api/v1/stfs/${stf.id}/versions`, { version: '5', runtime: 'javascript', code: b64('return { v: 5, leaked: $sources.ledger };') }, editor.token);
    expect(s5.status).toBe(201);
    const renamed = await call('PATCH', `/api/v1/workflows/${wf}`, { name: 'mine now' }, editor.token);
    expect(renamed.status).toBe(200);
    expect((await call('GET', `/api/v1/workflows/${wf}/hooks/${hook.id}`)).body.created_by).toBe(editor.id);
    const seen = received.length;
    const taken = await deliver(3);
    expect(taken).toMatchObject({ executed_by: editor.id });
    expect(versionsRun(taken)[0]).toBe(s5.body.id);
    expect(JSON.stringify(received.slice(seen))).not.toContain('123456');
    // A rename with no newer version since the last save (and no change of steps) hands nothing over.
    expect((await call('PATCH', `/api/v1/workflows/${wf}`, { name: 'renamed again' })).status).toBe(200);
    expect((await call('GET', `/api/v1/workflows/${wf}/schedules/${schedule.id}`)).body.created_by).toBe(editor.id);
  });

  it('a queued run whose schedule was deleted before it started runs nothing: it can no longer be taken over, so it does not run as its last owner', async () => {
    const wf = await ledgerFlow('deleted');
    const schedule = (await call('POST', `/api/v1/workflows/${wf}/schedules`, { cron: '0 0 1 1 *' })).body;
    const runId = await queueRun(h.services.db, { workflow: { id: wf, workspace_id: ws.id }, input: null, executedBy: owner.id, trigger: 'schedule', triggerId: schedule.id });
    expect((await call('DELETE', `/api/v1/workflows/${wf}/schedules/${schedule.id}`)).status).toBe(204);
    expect(await h.services.executions.runQueued(runId, { action: 'execute_workflow', transport: null })).toBeUndefined();
    expect((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body).toMatchObject({ status: 'failed', error: { step: 'run', kind: 'not_found' }, steps: [] });
  });
});
