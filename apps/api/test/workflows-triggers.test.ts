// Issue 19: event triggers. An upload or a document change writes an event per trigger in its own transaction; the
// dispatcher (asked here the way every process's ticker asks) turns due events into runs as the trigger's creator,
// retries a failing one with a growing delay, dead-letters it after the last attempt, and a dead event replays; a
// trigger cannot run away (the loop guard); another workspace reaches nothing.
import { dispatchWorkflowEvents } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };

const call = (method: string, path: string, body?: unknown, token = owner.token, workspace = ws.id) => h.call(method, path, { token, workspace, body });
const dispatch = () => dispatchWorkflowEvents(h.services);
const triggers = (wf: string) => `/api/v1/workflows/${wf}/triggers`;
async function workflowOf(code: string): Promise<string> {
  const stf = await call('POST', '/api/v1/stfs', { name: 's', version: '1', runtime: 'javascript', code: b64(code) });
  const w = await call('POST', '/api/v1/workflows', { name: 'w', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  return w.body.id;
}
/** Dispatches until the trigger's events are all in one of `states`; its events. */
async function settle(wf: string, triggerId: string, done: (events: any[]) => boolean, ms = 20_000): Promise<any[]> {
  let events: any[] = [];
  await eventually(async () => {
    await dispatch();
    events = (await call('GET', `${triggers(wf)}/${triggerId}/events`)).body;
    return done(events);
  }, ms);
  return events;
}
const upload = (name: string) =>
  call('POST', `/api/v1/workspaces/${ws.id}/files`, { filename: name, content_type: 'text/plain', content: b64(`hello ${name}`) });

beforeAll(async () => {
  // Retries 200 ms apart (doubling), three attempts; at most five events per trigger and minute.
  h = await Harness.create({ TRIGGER_RETRY_DELAY_MS: '200', TRIGGER_MAX_ATTEMPTS: '3', TRIGGER_MAX_EVENTS_PER_MINUTE: '5' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Triggered');
});
afterAll(async () => {
  await h?.close();
});

describe('event triggers', () => {
  it('an upload runs the workflow as the trigger creator with the event as $input', async () => {
    const wf = await workflowOf('return { saw: $input.file.filename, type: $input.type };');
    const t = await call('POST', triggers(wf), { event: 'file_uploaded', name: 'on upload' });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    expect(t.body).toMatchObject({ event: 'file_uploaded', paused: false, created_by: owner.id, table_name: null });
    const up = await upload('notes.txt');
    expect(up.status).toBe(201);
    const events = await settle(wf, t.body.id, (e) => e.length === 1 && e[0].status === 'succeeded');
    expect(events[0]).toMatchObject({ status: 'succeeded', attempts: 1, event: { type: 'file_uploaded', workspace_id: ws.id, file: { id: up.body.id, filename: 'notes.txt', size: 15 } } });
    const run = (await call('GET', `/api/v1/workflows/${wf}/runs/${events[0].run_id}`)).body;
    expect(run).toMatchObject({ status: 'succeeded', trigger: 'event', trigger_id: t.body.id, executed_by: owner.id, output: { saw: 'notes.txt', type: 'file_uploaded' } });
  });

  it('document changes are events with the action; a paused trigger records none', async () => {
    const wf = await workflowOf('return { action: $input.action, title: $input.document.title };');
    const t = (await call('POST', triggers(wf), { event: 'document_changed' })).body;
    const doc = (await call('POST', `/api/v1/workspaces/${ws.id}/documents`, { title: 'Runbook', doc_type: 'guide', status: 'draft', content: '# Runbook' })).body;
    await call('PATCH', `/api/v1/workspaces/${ws.id}/documents/${doc.id}`, { status: 'final' });
    await call('DELETE', `/api/v1/workspaces/${ws.id}/documents/${doc.id}`);
    const events = await settle(wf, t.id, (e) => e.length === 3 && e.every((x: any) => x.status === 'succeeded'));
    expect(events.map((e: any) => e.event.action).sort()).toEqual(['created', 'deleted', 'updated']);
    expect(events.find((e: any) => e.event.action === 'updated').event.document).toMatchObject({ id: doc.id, status: 'final' });

    await call('PATCH', `${triggers(wf)}/${t.id}`, { paused: true });
    await call('POST', `/api/v1/workspaces/${ws.id}/documents`, { title: 'Quiet', doc_type: 'guide', status: 'draft', content: 'x' });
    expect((await call('GET', `${triggers(wf)}/${t.id}/events`)).body.length).toBe(3);
  });

  it('a failing run is retried with a growing delay, then dead-lettered with its error; a dead event replays', async () => {
    const wf = await workflowOf('throw new Error("downstream is down");');
    const t = (await call('POST', triggers(wf), { event: 'file_uploaded' })).body;
    await upload('will-fail.txt');
    const events = await settle(wf, t.id, (e) => e.length === 1 && e[0].status === 'dead');
    expect(events[0]).toMatchObject({ status: 'dead', attempts: 3, last_error: { step: 'stf_steps[0]', kind: 'runtime' } });
    const runs = (await call('GET', `/api/v1/workflows/${wf}/runs?limit=100`)).body.filter((r: any) => r.trigger === 'event');
    expect(runs.length).toBe(3);
    expect((await call('GET', `${triggers(wf)}/${t.id}/events?status=dead`)).body.map((e: any) => e.id)).toEqual([events[0].id]);

    // Replayed: pending with fresh attempts (and dead again here, as the workflow still fails).
    const replayed = await call('POST', `${triggers(wf)}/${t.id}/events/${events[0].id}/replay`);
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ status: 'pending', attempts: 0 });
    expect((await call('POST', `${triggers(wf)}/${t.id}/events/${events[0].id}/replay`)).status).toBe(409);
    await settle(wf, t.id, (e) => e[0].status === 'dead' && e[0].attempts === 3);
    const audit = (await call('GET', '/api/v1/audit-logs?action=replay_workflow_trigger_event')).body;
    expect(audit.length).toBe(1);
  });

  it('an event whose run someone cancelled is dead at once, not retried', async () => {
    const wf = await workflowOf('const until = Date.now() + 800; while (Date.now() < until) {} return 1;');
    const t = (await call('POST', triggers(wf), { event: 'file_uploaded' })).body;
    await upload('cancel-me.txt');
    let runId: string | undefined;
    await eventually(async () => {
      await dispatch();
      runId = (await call('GET', `${triggers(wf)}/${t.id}/events`)).body[0]?.run_id ?? undefined;
      return runId !== undefined;
    }, 10_000);
    await eventually(async () => ['running', 'queued'].includes((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body.status), 10_000);
    expect((await call('POST', `/api/v1/workflows/${wf}/runs/${runId}/cancel`)).status).toBe(200);
    const events = await settle(wf, t.id, (e) => e[0].status === 'dead');
    expect(events[0]).toMatchObject({ status: 'dead', attempts: 1, last_error: { kind: 'cancelled' } });
  });

  it('the loop guard: beyond TRIGGER_MAX_EVENTS_PER_MINUTE a trigger\'s events are dead at once', async () => {
    const wf = await workflowOf('return 1;');
    const t = (await call('POST', triggers(wf), { event: 'document_changed' })).body;
    for (let i = 0; i < 7; i++) await call('POST', `/api/v1/workspaces/${ws.id}/documents`, { title: `d${i}`, doc_type: 'guide', status: 'draft', content: 'x' });
    const events = (await call('GET', `${triggers(wf)}/${t.id}/events?limit=100`)).body;
    expect(events.length).toBe(7);
    const guarded = events.filter((e: any) => e.status === 'dead');
    expect(guarded.length).toBe(2);
    for (const e of guarded) expect(e.last_error.kind).toBe('loop_guard');
  });

  it('an upload that fails leaves no event; row events are not offered yet; editors only; another workspace sees nothing', async () => {
    const wf = await workflowOf('return 1;');
    const t = (await call('POST', triggers(wf), { event: 'file_uploaded' })).body;
    const bad = await call('POST', `/api/v1/workspaces/${ws.id}/files`, { filename: '', content: b64('x') });
    expect(bad.status).toBe(400);
    expect((await call('GET', `${triggers(wf)}/${t.id}/events`)).body).toEqual([]);
    expect((await call('POST', triggers(wf), { event: 'row_inserted' })).status).toBe(400);

    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    expect((await call('POST', triggers(wf), { event: 'file_uploaded' }, member.token)).status).toBe(403);
    expect((await call('GET', `${triggers(wf)}/${t.id}/events`, undefined, member.token)).status).toBe(200);

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    for (const [method, path] of [
      ['GET', triggers(wf)],
      ['GET', `${triggers(wf)}/${t.id}`],
      ['GET', `${triggers(wf)}/${t.id}/events`],
      ['DELETE', `${triggers(wf)}/${t.id}`],
    ] as const) {
      const r = await call(method, path, undefined, stranger.token, theirs.id);
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    // Their uploads are not our events.
    await h.call('POST', `/api/v1/workspaces/${theirs.id}/files`, { token: stranger.token, workspace: theirs.id, body: { filename: 'x.txt', content: b64('x') } });
    await dispatch();
    expect((await call('GET', `${triggers(wf)}/${t.id}/events`)).body).toEqual([]);
  });
});
