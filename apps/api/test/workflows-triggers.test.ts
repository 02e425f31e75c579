// Issue 19: event triggers. An upload or a document change writes an event per trigger in its own transaction; the
// dispatcher (asked here the way every process's ticker asks) turns due events into runs as the trigger's creator,
// retries a failing one with a growing delay, dead-letters it after the last attempt, and a dead event replays; a
// trigger cannot run away (the loop guard); another workspace reaches nothing. Row events: a statement's captured rows
// (the SQL endpoint, an STF's sql()) become one event per row the trigger's owner may select.
import { sql as kysql } from '@wds/db';
import { dispatchRowChanges, dispatchWorkflowEvents, pruneRowChanges } from '@wds/workflows';
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

  it('an upload that fails leaves no event; editors only; another workspace sees nothing', async () => {
    const wf = await workflowOf('return 1;');
    const t = (await call('POST', triggers(wf), { event: 'file_uploaded' })).body;
    const bad = await call('POST', `/api/v1/workspaces/${ws.id}/files`, { filename: '', content: b64('x') });
    expect(bad.status).toBe(400);
    expect((await call('GET', `${triggers(wf)}/${t.id}/events`)).body).toEqual([]);

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

describe('row event triggers', () => {
  const instantRun = async (code: string) => {
    const stf = await call('POST', '/api/v1/stfs', { name: 'writer', version: '1', runtime: 'javascript', code: b64(code) });
    const r = await call('POST', '/api/v1/stfs/instant-run', { stf_version_id: stf.body.version.id, input: {} });
    expect(r.body, JSON.stringify(r.body)).toMatchObject({ success: true });
  };
  const output = async (wf: string, runId: string) => (await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body.output;

  it('validation: row events need a table, other events take none', async () => {
    const wf = await workflowOf('return 1;');
    for (const body of [
      { event: 'row_inserted' },
      { event: 'row_deleted', table_name: 'Not-A-Table' },
      { event: 'row_updated', table_name: 'x'.repeat(24) },
      { event: 'file_uploaded', table_name: 'items' },
      { event: 'document_changed', table_name: 'items' },
    ]) {
      const r = await call('POST', triggers(wf), body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
    const ok = await call('POST', triggers(wf), { event: 'row_updated', table_name: 'items' });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ event: 'row_updated', table_name: 'items', name: 'row_updated items' });
    expect((await call('GET', `${triggers(wf)}/${ok.body.id}`)).body.table_name).toBe('items');
  });

  it('an INSERT through the SQL endpoint and one through an STF\'s sql() each run the workflow with the row', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE items (owner_id uuid, title text, amount numeric)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['items']);
    const wf = await workflowOf('return { type: $input.type, table: $input.table_name, title: $input.row.title, has_old: "old" in $input };');
    const t = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'items' })).body;
    await h.sqlOk(owner.token, ws.id, `INSERT INTO items (owner_id, title, amount) VALUES ('${owner.id}', 'by sql', 12345678901234567890.125)`);
    await instantRun(`sql("INSERT INTO items (owner_id, title) VALUES ('" + $caller + "', 'by stf')"); return 1;`);
    const events = await settle(wf, t.id, (e) => e.length === 2 && e.every((x: any) => x.status === 'succeeded'));
    const bySql = events.find((e: any) => e.event.row.title === 'by sql');
    expect(bySql.event).toMatchObject({ type: 'row_inserted', workspace_id: ws.id, table_name: 'items', row: { owner_id: owner.id, title: 'by sql' } });
    expect(typeof bySql.event.occurred_at).toBe('string');
    expect(bySql.event).not.toHaveProperty('old');
    // The row as a read of the table shows it: the numeric keeps its digits.
    const read = (await h.sqlOk(owner.token, ws.id, "SELECT * FROM items WHERE title = 'by sql'")).rows[0];
    expect(bySql.event.row).toEqual(read);
    expect(String(bySql.event.row.amount)).toBe('12345678901234567890.125');
    expect(events.map((e: any) => e.event.row.title).sort()).toEqual(['by sql', 'by stf']);
    for (const e of events) {
      const run = (await call('GET', `/api/v1/workflows/${wf}/runs/${e.run_id}`)).body;
      expect(run).toMatchObject({ trigger: 'event', trigger_id: t.id, executed_by: owner.id, output: { type: 'row_inserted', table: 'items', title: e.event.row.title, has_old: false } });
    }
  });

  it('an update has the row and the old row; a DELETE (a soft delete) has the row as it was', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE stock (sku text, qty int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['stock']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO stock (sku, qty) VALUES ('a', 1)");
    const wf = await workflowOf('return { type: $input.type, qty: $input.row.qty, old: $input.old ? $input.old.qty : null };');
    const updated = (await call('POST', triggers(wf), { event: 'row_updated', table_name: 'stock' })).body;
    const deleted = (await call('POST', triggers(wf), { event: 'row_deleted', table_name: 'stock' })).body;
    await h.sqlOk(owner.token, ws.id, "UPDATE stock SET qty = 2 WHERE sku = 'a'");
    await h.sqlOk(owner.token, ws.id, "DELETE FROM stock WHERE sku = 'a'");
    const [u] = await settle(wf, updated.id, (e) => e.length === 1 && e[0].status === 'succeeded');
    expect(u.event).toMatchObject({ type: 'row_updated', table_name: 'stock', row: { sku: 'a', qty: 2 }, old: { sku: 'a', qty: 1 } });
    expect(await output(wf, u.run_id)).toEqual({ type: 'row_updated', qty: 2, old: 1 });
    const [d] = await settle(wf, deleted.id, (e) => e.length === 1 && e[0].status === 'succeeded');
    expect(d.event).toMatchObject({ type: 'row_deleted', table_name: 'stock', row: { sku: 'a', qty: 2, deleted_at: null } });
    expect(d.event).not.toHaveProperty('old');
    // The soft delete was a delete, not another update.
    expect((await call('GET', `${triggers(wf)}/${updated.id}/events`)).body.length).toBe(1);
  });

  it("only rows the trigger's owner may select are events; another workspace's table of the same name is not theirs", async () => {
    const boss = await h.user('boss');
    const theirs = await h.workspace(boss.token, 'Policies');
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, boss.token, theirs.id);
    await h.sqlOk(boss.token, theirs.id, 'CREATE TABLE tickets (owner_id uuid, title text)');
    const g = await h.group(boss.token, theirs.id, { name: 'own', user_ids: [boss.id] });
    await h.policy(boss.token, theirs.id, { policy_group_id: g, table_name: 'tickets', operation: 'select', condition: { owner_id: '$user_id' } });
    await h.policy(boss.token, theirs.id, { policy_group_id: g, table_name: 'tickets', operation: 'insert' });
    const stf = await as('POST', '/api/v1/stfs', { name: 's', version: '1', runtime: 'javascript', code: b64('return $input.row.title;') });
    const wf = (await as('POST', '/api/v1/workflows', { name: 'w', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] })).body.id;
    const t = (await as('POST', triggers(wf), { event: 'row_inserted', table_name: 'tickets' })).body;
    const other = '00000000-0000-4000-8000-000000000001';
    await h.sqlOk(boss.token, theirs.id, `INSERT INTO tickets (owner_id, title) VALUES ('${boss.id}', 'mine'), ('${other}', 'not mine')`);
    // The same logical name in our workspace (the owner's, with a trigger of its own there): never the boss's events.
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE tickets (owner_id uuid, title text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['tickets']);
    const ours = await workflowOf('return 1;');
    const ourTrigger = (await call('POST', triggers(ours), { event: 'row_inserted', table_name: 'tickets' })).body;
    await h.sqlOk(owner.token, ws.id, `INSERT INTO tickets (owner_id, title) VALUES ('${boss.id}', 'elsewhere')`);

    let events: any[] = [];
    await eventually(async () => {
      await dispatch();
      events = (await as('GET', `${triggers(wf)}/${t.id}/events`)).body;
      const left = await h.services.db
        .selectFrom('platform.row_changes')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('needs_dispatch', '=', true)
        .executeTakeFirstOrThrow();
      return Number(left.n) === 0 && events.length === 1 && events[0].status === 'succeeded';
    }, 20_000);
    expect(events[0].event).toMatchObject({ type: 'row_inserted', workspace_id: theirs.id, table_name: 'tickets', row: { owner_id: boss.id, title: 'mine' } });
    expect((await as('GET', `/api/v1/workflows/${wf}/runs/${events[0].run_id}`)).body.output).toBe('mine');
    const oursEvents = (await call('GET', `${triggers(ours)}/${ourTrigger.id}/events`)).body;
    expect(oursEvents.map((e: any) => e.event.row.title)).toEqual(['elsewhere']);

    // Another member of the boss's workspace, who may select none of it: the event and the run's input without rows.
    const peer = await h.user('peer');
    await h.addMember(boss.token, theirs.id, peer.email);
    const seen = (await call('GET', `${triggers(wf)}/${t.id}/events`, undefined, peer.token, theirs.id)).body;
    expect(seen[0].event).toMatchObject({ type: 'row_inserted', table_name: 'tickets', row: null, redacted: true });
    expect(JSON.stringify(seen)).not.toContain('mine');
    const run = (await call('GET', `/api/v1/workflows/${wf}/runs/${events[0].run_id}`, undefined, peer.token, theirs.id)).body;
    expect(run.input).toMatchObject({ row: null, redacted: true });
    expect((await as('GET', `/api/v1/workflows/${wf}/runs/${events[0].run_id}`)).body.input.row.title).toBe('mine');
  });

  it("what a row run made of its rows is its owner's too; whoever changes the workflow's steps takes its row triggers over", async () => {
    const boss = await h.user('boss');
    const theirs = await h.workspace(boss.token, 'Outputs');
    const as = (method: string, path: string, body?: unknown, token = boss.token) => call(method, path, body, token, theirs.id);
    await h.sqlOk(boss.token, theirs.id, 'CREATE TABLE salaries (owner_id uuid, who text)');
    const g = await h.group(boss.token, theirs.id, { name: 'own', user_ids: [boss.id] });
    await h.policy(boss.token, theirs.id, { policy_group_id: g, table_name: 'salaries', operation: 'select', condition: { owner_id: '$user_id' } });
    await h.policy(boss.token, theirs.id, { policy_group_id: g, table_name: 'salaries', operation: 'insert' });
    // A workspace admin who may select none of the table, and may change workflows.
    const peer = await h.user('peer');
    await h.addMember(boss.token, theirs.id, peer.email, 'admin');
    const stfOf = async (code: string) => (await as('POST', '/api/v1/stfs', { name: `s${Math.random()}`, version: '1', runtime: 'javascript', code: b64(code) })).body.version.id;
    const echo = (await as('POST', '/api/v1/workflows', { name: 'echo', stf_steps: [{ stf_version_id: await stfOf('return $input.row;'), input_mappings: [] }] })).body.id;
    const leak = (await as('POST', '/api/v1/workflows', { name: 'leak', stf_steps: [{ stf_version_id: await stfOf('throw new Error("salary of " + $input.row.who);'), input_mappings: [] }] })).body.id;
    const te = (await as('POST', triggers(echo), { event: 'row_inserted', table_name: 'salaries' })).body;
    const tl = (await as('POST', triggers(leak), { event: 'row_inserted', table_name: 'salaries' })).body;
    await h.sqlOk(boss.token, theirs.id, `INSERT INTO salaries (owner_id, who) VALUES ('${boss.id}', 'Ada Lovelace')`);
    const settleAs = async (wf: string, id: string, done: (e: any[]) => boolean) => {
      let events: any[] = [];
      await eventually(async () => {
        await dispatch();
        events = (await as('GET', `${triggers(wf)}/${id}/events`)).body;
        return done(events);
      }, 20_000);
      return events;
    };
    const [ok] = await settleAs(echo, te.id, (e) => e.length === 1 && e[0].status === 'succeeded');
    const [bad] = await settleAs(leak, tl.id, (e) => e.length === 1 && e[0].status === 'dead');
    // The owner sees it all.
    expect((await as('GET', `/api/v1/workflows/${echo}/runs/${ok.run_id}`)).body.output).toMatchObject({ who: 'Ada Lovelace' });
    expect(JSON.stringify((await as('GET', `/api/v1/workflows/${leak}/runs`)).body)).toContain('Ada Lovelace');
    expect(JSON.stringify(bad.last_error)).toContain('Ada Lovelace');
    // Another member: no output, and errors that say where and what kind, not their words — run, run list, events.
    const seenOk = (await as('GET', `/api/v1/workflows/${echo}/runs/${ok.run_id}`, undefined, peer.token)).body;
    expect(seenOk).toMatchObject({ status: 'succeeded', output: null, input: { row: null, redacted: true } });
    const seen = [
      (await as('GET', `/api/v1/workflows/${leak}/runs/${bad.run_id}`, undefined, peer.token)).body,
      (await as('GET', `/api/v1/workflows/${leak}/runs`, undefined, peer.token)).body,
      (await as('GET', `/api/v1/workflows/${echo}/runs`, undefined, peer.token)).body,
      (await as('GET', `${triggers(leak)}/${tl.id}/events`, undefined, peer.token)).body,
      (await as('GET', `${triggers(echo)}/${te.id}/events`, undefined, peer.token)).body,
    ];
    expect(JSON.stringify(seen)).not.toContain('Ada');
    expect(seen[0]).toMatchObject({ status: 'failed', output: null, error: { kind: expect.any(String), message: expect.stringMatching(/^redacted/) } });
    expect(seen[3][0].last_error).toMatchObject({ message: expect.stringMatching(/^redacted/) });

    // The peer changes the echo workflow's steps: its row trigger is theirs from then on, so the boss's rows no longer
    // flow into steps the peer wrote — an event recorded for the boss dies, new rows are chosen by the peer's policy.
    await h.sqlOk(boss.token, theirs.id, `INSERT INTO salaries (owner_id, who) VALUES ('${boss.id}', 'Grace Hopper')`);
    await dispatchRowChanges(h.services); // the event is written for the boss, pending
    // Its schedule and hook run as their owner too (a table input step reads with their policies): handed over alike.
    const schedule = (await as('POST', `/api/v1/workflows/${echo}/schedules`, { cron: '0 0 1 1 *', paused: true })).body;
    const hook = (await as('POST', `/api/v1/workflows/${echo}/hooks`, { paused: true })).body;
    const patched = await as('PATCH', `/api/v1/workflows/${echo}`, { stf_steps: [{ stf_version_id: await stfOf('return $input;'), input_mappings: [] }] }, peer.token);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const handed = (await as('GET', `${triggers(echo)}/${te.id}`)).body;
    expect(handed.created_by).toBe(peer.id);
    expect((await as('GET', `/api/v1/workflows/${echo}/schedules/${schedule.id}`)).body.created_by).toBe(peer.id);
    expect((await as('GET', `/api/v1/workflows/${echo}/hooks/${hook.id}`)).body.created_by).toBe(peer.id);
    // A rename of the workflow alone changes no hands.
    await as('PATCH', `/api/v1/workflows/${leak}`, { name: 'leak, renamed' }, peer.token);
    expect((await as('GET', `${triggers(leak)}/${tl.id}`)).body.created_by).toBe(boss.id);
    const events = await settleAs(echo, te.id, (e) => e.length === 2 && e.every((x: any) => x.status !== 'pending' && x.status !== 'running'));
    expect(events[0]).toMatchObject({ status: 'dead', run_id: null, last_error: { kind: 'owner_changed' } });
    await h.sqlOk(boss.token, theirs.id, `INSERT INTO salaries (owner_id, who) VALUES ('${boss.id}', 'Katherine Johnson')`);
    await dispatchRowChanges(h.services);
    expect((await as('GET', `${triggers(echo)}/${te.id}/events`)).body.length).toBe(2);
  });

  it("a row trigger's run runs each step at the version its workflow names, not a newer one another editor added", async () => {
    const editor = await h.user('stf-editor');
    await h.addMember(owner.token, ws.id, editor.email, 'admin');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE pinned (title text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['pinned']);
    const stf = (await call('POST', '/api/v1/stfs', { name: 'pin-me', version: '1', runtime: 'javascript', code: b64('return { v: 1, title: $input.row.title };') })).body;
    const wf = (await call('POST', '/api/v1/workflows', { name: 'pinned', stf_steps: [{ stf_version_id: stf.version.id, input_mappings: [] }] })).body.id;
    const t = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'pinned' })).body;
    // Another editor adds a version of the STF (not changing the workflow, so not taking its trigger over).
    const v2 = await call('POST', `/api/v1/stfs/${stf.id}/versions`, { version: '2', runtime: 'javascript', code: b64('return { v: 2, leaked: $input.row };') }, editor.token);
    expect(v2.status, JSON.stringify(v2.body)).toBe(201);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO pinned (title) VALUES ('owner only')");
    const [e] = await settle(wf, t.id, (x) => x.length === 1 && x[0].status === 'succeeded');
    const run = (await call('GET', `/api/v1/workflows/${wf}/runs/${e.run_id}`)).body;
    expect(run.output).toEqual({ v: 1, title: 'owner only' });
    expect(run.steps.find((s: any) => s.kind === 'stf')).toMatchObject({ stf_version_id: stf.version.id });
    // By hand too the owner runs what the workflow's last save accepted (issue 28); the other editor, their own version.
    expect((await call('POST', `/api/v1/workflows/${wf}/execute`, { row: { title: 'by hand' } })).body).toMatchObject({ v: 1 });
    expect((await call('POST', `/api/v1/workflows/${wf}/execute`, { row: { title: 'by hand' } }, editor.token)).body).toMatchObject({ v: 2 });
  });

  it("an event whose trigger changed hands is dead, never run as the new owner; a bulk statement's loop-guarded rows are one dead event", async () => {
    const editor = await h.user('editor');
    await h.addMember(owner.token, ws.id, editor.email, 'admin');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE handed (v int)');
    await h.allowAll(owner.token, ws.id, [owner.id, editor.id], ['handed']);
    const wf = await workflowOf('return $input.row.v;');
    const t = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'handed' })).body;
    await call('PATCH', `${triggers(wf)}/${t.id}`, { paused: true }); // still the owner's
    await h.services.db.updateTable('platform.workflow_triggers').set({ paused: false }).where('id', '=', t.id).execute();
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO handed (v) VALUES (1)');
    await dispatchRowChanges(h.services); // the event is written for the owner, pending
    // The editor takes the trigger over (whoever changes a trigger runs it from then on).
    expect((await call('PATCH', `${triggers(wf)}/${t.id}`, { name: 'mine now' }, editor.token)).body.created_by).toBe(editor.id);
    const events = await settle(wf, t.id, (e) => e.length === 1 && e[0].status === 'dead');
    expect(events[0].last_error.kind).toBe('owner_changed');
    expect(events[0].run_id).toBeNull();

    // 5 events a minute: a statement of 12 rows is 5 pending events and one dead one standing for the other 7.
    const bulk = await workflowOf('return 1;');
    const tb = (await call('POST', triggers(bulk), { event: 'row_inserted', table_name: 'handed' })).body;
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO handed (v) SELECT g FROM generate_series(1, 12) g');
    await dispatchRowChanges(h.services);
    const all = (await call('GET', `${triggers(bulk)}/${tb.id}/events?limit=100`)).body;
    const dead = all.filter((e: any) => e.status === 'dead');
    expect(all.length - dead.length).toBe(5);
    expect(dead).toEqual([expect.objectContaining({ event: expect.objectContaining({ row: null, dropped: 7 }), last_error: expect.objectContaining({ kind: 'loop_guard' }) })]);
  });

  it('a failing run of a row event is retried, dead after the last attempt, and replays', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE jobs (name text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['jobs']);
    const wf = await workflowOf('throw new Error("cannot handle " + $input.row.name);');
    const t = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'jobs' })).body;
    await h.sqlOk(owner.token, ws.id, "INSERT INTO jobs (name) VALUES ('j1')");
    const [dead] = await settle(wf, t.id, (e) => e.length === 1 && e[0].status === 'dead');
    expect(dead).toMatchObject({ attempts: 3, event: { row: { name: 'j1' } }, last_error: { kind: 'runtime' } });
    expect((await call('POST', `${triggers(wf)}/${t.id}/events/${dead.id}/replay`)).body).toMatchObject({ status: 'pending', attempts: 0 });
    await settle(wf, t.id, (e) => e[0].status === 'dead' && e[0].attempts === 3);
  });

  it('changes whose policies cannot be read now are tried again later (dead after an hour), without holding back the others', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE flaky (v int)');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE steady (v int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['flaky', 'steady']);
    const wf = await workflowOf('return $input.row.v;');
    const onFlaky = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'flaky' })).body;
    const onSteady = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'steady' })).body;
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO flaky (v) VALUES (1)');
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO steady (v) VALUES (2)');
    const real = h.services.sql;
    const warnings: object[] = [];
    const deps = { db: h.services.db, config: h.services.config, logger: { warn: (o: object) => warnings.push(o) } };
    await dispatchRowChanges({
      ...deps,
      sql: {
        visibleRows: async (caller, table, images) => {
          if (table === 'flaky') throw new Error('database away');
          return real.visibleRows(caller, table, images);
        },
      },
    });
    expect(warnings).toEqual([expect.objectContaining({ table: 'flaky', err: 'database away' })]);
    expect((await call('GET', `${triggers(wf)}/${onSteady.id}/events`)).body.map((e: any) => e.event.row.v)).toEqual([2]);
    expect((await call('GET', `${triggers(wf)}/${onFlaky.id}/events`)).body).toEqual([]);
    // Not tried again at once (30 s later): the next round passes it by.
    const flakyChange = () => h.services.pool.query("SELECT needs_dispatch, dispatch_after FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'flaky'", [ws.id]);
    expect((await flakyChange()).rows).toEqual([{ needs_dispatch: true, dispatch_after: expect.any(Date) }]);
    await dispatchRowChanges({ ...deps, sql: real });
    expect((await call('GET', `${triggers(wf)}/${onFlaky.id}/events`)).body).toEqual([]);
    // Its time comes (moved here by hand): dispatched.
    await h.services.pool.query("UPDATE platform.row_changes SET dispatch_after = now() WHERE workspace_id = $1 AND table_name = 'flaky'", [ws.id]);
    await dispatchRowChanges({ ...deps, sql: real });
    expect((await call('GET', `${triggers(wf)}/${onFlaky.id}/events`)).body.map((e: any) => e.event.row.v)).toEqual([1]);
    expect((await call('GET', `${triggers(wf)}/${onSteady.id}/events`)).body.length).toBe(1);

    // A change still failing after an hour: its trigger gets a dead event without the row (nobody could check it).
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO flaky (v) VALUES (3)');
    await h.services.pool.query(
      "UPDATE platform.row_changes SET created_at = now() - interval '2 hours' WHERE workspace_id = $1 AND table_name = 'flaky' AND needs_dispatch",
      [ws.id],
    );
    await dispatchRowChanges({ ...deps, sql: { visibleRows: async () => Promise.reject(new Error('still away')) } });
    const events = (await call('GET', `${triggers(wf)}/${onFlaky.id}/events?status=dead`)).body;
    expect(events).toEqual([expect.objectContaining({ event: expect.objectContaining({ type: 'row_inserted', table_name: 'flaky', row: null }), last_error: { kind: 'policy_check', message: expect.not.stringContaining('still away') } })]);
    expect((await flakyChange()).rows.every((r) => r.needs_dispatch === false)).toBe(true);
  });

  it("a trigger whose owner's policy fails over the rows gets a dead event at once; the table's other triggers go on", async () => {
    const other = await h.user('other');
    await h.addMember(owner.token, ws.id, other.email, 'admin');
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE counts (v int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['counts']);
    // A condition PostgreSQL cannot evaluate over an int column ('abc' is no integer): every read of theirs fails.
    const g = await h.group(owner.token, ws.id, { name: 'broken', user_ids: [other.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'counts', operation: 'select', condition: { v: { $gt: 'abc' } } });
    const wf = await workflowOf('return $input.row.v;');
    const mine = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'counts' })).body;
    const theirs = (await call('POST', triggers(wf), { event: 'row_inserted', table_name: 'counts' }, other.token)).body;
    expect(theirs.created_by).toBe(other.id);
    await h.sqlOk(owner.token, ws.id, 'INSERT INTO counts (v) VALUES (7)');
    await dispatchRowChanges(h.services);
    expect((await call('GET', `${triggers(wf)}/${mine.id}/events`)).body.map((e: any) => [e.status, e.event.row.v])).toEqual([['pending', 7]]);
    const dead = (await call('GET', `${triggers(wf)}/${theirs.id}/events`, undefined, other.token)).body;
    expect(dead).toEqual([expect.objectContaining({ status: 'dead', event: expect.objectContaining({ row: null }), last_error: expect.objectContaining({ kind: 'policy_check' }) })]);
    const left = await h.services.pool.query("SELECT count(*)::int AS n FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'counts' AND needs_dispatch", [ws.id]);
    expect(left.rows[0].n).toBe(0);
  });

  it('pruneRowChanges removes old changes no trigger waits for, and keeps the rest', async () => {
    const db = h.services.db;
    const workspace = '00000000-0000-4000-8000-0000000000aa';
    const add = async (needs: boolean, ageMs: number) =>
      (
        await db
          .insertInto('platform.row_changes')
          .values({ batch: '1', workspace_id: workspace, table_name: 'gone', op: 'insert', row: JSON.stringify({ a: 1 }), old: null, needs_dispatch: needs, created_at: kysql<Date>`now() - ${ageMs} * interval '1 millisecond'` })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const oldFlagged = await add(true, 3_600_000);
    const oldDone = await add(false, 3_600_000);
    const fresh = await add(false, 0);
    expect(await pruneRowChanges(db, 60_000)).toBeGreaterThanOrEqual(1);
    const left = (await db.selectFrom('platform.row_changes').select('id').where('workspace_id', '=', workspace).execute()).map((r) => r.id);
    expect(left.sort()).toEqual([oldFlagged, fresh].sort());
    expect(left).not.toContain(oldDone);
    // A flagged change of a table without triggers is marked dispatched by the next round (no event), then pruned.
    await dispatch();
    expect((await db.selectFrom('platform.row_changes').select('needs_dispatch').where('id', '=', oldFlagged).executeTakeFirstOrThrow()).needs_dispatch).toBe(false);
    await pruneRowChanges(db, 60_000);
    expect((await db.selectFrom('platform.row_changes').select('id').where('workspace_id', '=', workspace).execute()).map((r) => r.id)).toEqual([fresh]);
  });
});
