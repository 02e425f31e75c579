// Issue 29, point 2, through the real endpoints in-process: the run view shows each effect's Idempotency-Key and
// whether it was delivered; a queued run whose process stopped beating is resumed — the STF step and the effect it
// had finished are not run again, the effect under way is sent again with the same key — and the attempt that was
// only slow changes nothing when it ends; a run out of attempts fails and its event is not retried; another
// workspace reads none of it. (The crash itself, kill -9 of a server process: effects-once.test.ts.)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from '@wds/db';
import { createHmac } from 'node:crypto';
import { dispatchWorkflowEvents, effectIdempotencyKey, fireDueSchedules, resumeInterruptedRuns, runOrigin } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, Harness } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A sink on 127.0.0.1: answers 200, except `/fail` (500) and the requests `hold` keeps until released. */
interface Sink {
  url: string;
  requests: { url: string; key: string | undefined; body: string }[];
  /** Paths whose next request is held; `release` answers the held ones 200. */
  hold: Set<string>;
  held: http.ServerResponse[];
  release(): void;
  close(): Promise<void>;
}
async function sink(): Promise<Sink> {
  const s = { requests: [], hold: new Set<string>(), held: [] } as unknown as Sink;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      s.requests.push({ url: req.url ?? '', key: req.headers['idempotency-key'] as string | undefined, body });
      if (s.hold.delete(req.url ?? '')) {
        s.held.push(res);
        return;
      }
      res.writeHead(req.url === '/fail' ? 500 : 200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.release = () => {
    for (const res of s.held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  };
  s.close = () => {
    s.release();
    return new Promise((r) => server.close(() => r()));
  };
  return s;
}

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let member: Awaited<ReturnType<Harness['user']>>;
let stranger: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let other: { id: string };
let target: Sink;
const call = (method: string, path: string, body?: unknown, token = owner.token, workspace = ws.id) => h.call(method, path, { token, workspace, body });

async function effect(path: string): Promise<string> {
  const r = await call('POST', '/api/v1/effects', {
    name: path,
    version: '1',
    url: `${target.url}${path}`,
    method: 'POST',
    header_mappings: [],
    body_mappings: [{ source: { type: 'Variable', value: '$.tag' }, target: 'tag' }],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.version.id;
}
async function workflow(effectPaths: string[], stfCode = 'return { tag: $input.row ? $input.row.tag : $input.tag };'): Promise<{ id: string; effects: string[] }> {
  const stf = await call('POST', '/api/v1/stfs', { name: 'tag', version: '1', runtime: 'javascript', code: b64(stfCode) });
  const versions = [];
  for (const p of effectPaths) versions.push(await effect(p));
  const w = await call('POST', '/api/v1/workflows', {
    name: 'deliver',
    stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }],
    effect_steps: versions.map((id) => ({ effect_version_id: id, input_mappings: [] })),
  });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  const effects = [];
  for (const id of versions) {
    const row = await h.services.db.selectFrom('platform.effect_versions').select('effect_id').where('id', '=', id).executeTakeFirstOrThrow();
    effects.push(row.effect_id);
  }
  return { id: w.body.id, effects };
}
const run = async (wf: string, runId: string, token = owner.token, workspace = ws.id) => (await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`, undefined, token, workspace)).body;
/** As if the process running it had stopped beating ten minutes ago. */
const stale = (runId: string) => sql`UPDATE platform.workflow_runs SET heartbeat_at = now() - interval '10 minutes' WHERE id = ${runId}`.execute(h.services.db);

beforeAll(async () => {
  // The heartbeat never beats in these tests (a minute apart): a run is stale only when a test says so.
  h = await Harness.create({
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    RUN_HEARTBEAT_INTERVAL_MS: '60000',
    RUN_STALE_AFTER_MS: '120000',
    RUN_MAX_ATTEMPTS: '3',
    TRIGGER_RETRY_DELAY_MS: '100',
  });
  target = await sink();
  owner = await h.user('owner');
  member = await h.user('member');
  stranger = await h.user('stranger');
  ws = await h.workspace(owner.token, 'Once');
  other = await h.workspace(stranger.token, 'Elsewhere');
  await h.addMember(owner.token, ws.id, member.email, 'member');
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE orders (tag text)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['orders']);
});
afterAll(async () => {
  await target?.close();
  await h?.close();
});

describe('the run view says which effects were delivered, with which key', () => {
  it('each effect step records its key, its status and whether it was delivered; the key is the one sent, and says nothing of the input', async () => {
    const wf = await workflow(['/ok', '/fail']);
    target.requests.length = 0;
    const r = await call('POST', `/api/v1/workflows/${wf.id}/execute`, { tag: 'secret-tag-4711' });
    expect(r.status).toBe(422);
    const runId = r.headers.get('x-workflow-run-id') as string;
    const view = await run(wf.id, runId);
    const sent = (path: string) => target.requests.find((q) => q.url === path)?.key;
    expect(view.attempts).toBe(1);
    expect(view.steps.slice(1)).toEqual([
      expect.objectContaining({ kind: 'effect', index: 0, status: 'succeeded', status_code: 200, delivered: true, idempotency_key: sent('/ok') }),
      expect.objectContaining({ kind: 'effect', index: 1, status: 'failed', status_code: 500, delivered: false, idempotency_key: sent('/fail') }),
    ]);
    // A run asked for by hand is its own delivery: the key is derived from it and the step, nothing else.
    expect(sent('/ok')).toBe(effectIdempotencyKey({ workspaceId: ws.id, workflowId: wf.id, origin: runOrigin.run('request', runId), step: 0, effectId: wf.effects[0] as string }));
    expect(sent('/ok')).not.toBe(sent('/fail'));
    // The records say nothing of the input but in the step data the run view keeps of each step (issue 31).
    expect(JSON.stringify(view.steps.map(({ input: _i, output: _o, ...record }: any) => record))).not.toContain('4711');
    expect(view.steps[1].input).toMatchObject({ body: { tag: 'secret-tag-4711' } });
    // A second execution is another delivery: other keys.
    await call('POST', `/api/v1/workflows/${wf.id}/execute`, { tag: 'again' });
    expect(new Set(target.requests.map((q) => q.key)).size).toBe(4);
    // The same record over MCP's run list and the run list; nothing of it for another workspace.
    const list = (await call('GET', `/api/v1/workflows/${wf.id}/runs`)).body as any[];
    expect(list.find((x) => x.id === runId)).toMatchObject({ attempts: 1, steps: view.steps.map(({ input: _i, output: _o, ...record }: any) => record) });
    expect((await call('GET', `/api/v1/workflows/${wf.id}/runs/${runId}`, undefined, stranger.token, other.id)).status).toBe(404);
    expect((await call('GET', `/api/v1/workflows/${wf.id}/runs/${runId}`, undefined, stranger.token, ws.id)).status).toBe(403);
  });
});

describe('the key of a queued run is its delivery\'s', () => {
  const ended = async (wf: string, runId: string) => {
    let last: any;
    await eventually(async () => {
      last = await run(wf, runId);
      return !['queued', 'running'].includes(last.status);
    }, 15_000);
    return last;
  };
  const keyOf = (wf: { id: string; effects: string[] }, origin: string) =>
    effectIdempotencyKey({ workspaceId: ws.id, workflowId: wf.id, origin, step: 0, effectId: wf.effects[0] as string });

  it('a row event: the same key in its retry after a failed run (a new run); another event on the same row, another key', async () => {
    const wf = await workflow(['/fail'], 'return { tag: $input.row.tag };');
    const trigger = (await call('POST', `/api/v1/workflows/${wf.id}/triggers`, { event: 'row_updated', table_name: 'orders' })).body;
    await h.sqlOk(owner.token, ws.id, "INSERT INTO orders (tag) VALUES ('twice')");
    target.requests.length = 0;
    await h.sqlOk(owner.token, ws.id, "UPDATE orders SET tag = 'twice' WHERE tag = 'twice'");
    const [first] = await dispatchWorkflowEvents(h.services);
    expect((await ended(wf.id, first as string)).status).toBe('failed');
    // Settled (pending again after 100 ms), then retried as a new run.
    await dispatchWorkflowEvents(h.services);
    let second: string | undefined;
    await eventually(async () => {
      [second] = await dispatchWorkflowEvents(h.services);
      return second !== undefined;
    }, 10_000);
    expect(second).not.toBe(first);
    await ended(wf.id, second as string);
    const events = (await call('GET', `/api/v1/workflows/${wf.id}/triggers/${trigger.id}/events`)).body as any[];
    expect(events).toHaveLength(1);
    const keys = target.requests.filter((q) => q.url === '/fail').map((q) => q.key);
    expect(keys).toEqual([keyOf(wf, runOrigin.event(events[0].id)), keyOf(wf, runOrigin.event(events[0].id))]);
    // A second update of the same row is another event: another key.
    await h.sqlOk(owner.token, ws.id, "UPDATE orders SET tag = 'twice' WHERE tag = 'twice'");
    const [third] = await dispatchWorkflowEvents(h.services);
    await ended(wf.id, third as string);
    const all = target.requests.filter((q) => q.url === '/fail').map((q) => q.key);
    expect(new Set(all).size).toBe(2);
    await call('PATCH', `/api/v1/workflows/${wf.id}/triggers/${trigger.id}`, { paused: true });
  });

  it('a schedule: its tick; a hook: its delivery (the sender\'s delivery id)', async () => {
    const wf = await workflow(['/ok'], 'return { tag: "tick" };');
    const schedule = (await call('POST', `/api/v1/workflows/${wf.id}/schedules`, { cron: '0 0 1 1 *' })).body;
    await sql`UPDATE platform.workflow_schedules SET next_run_at = date_trunc('second', now()) WHERE id = ${schedule.id}`.execute(h.services.db);
    target.requests.length = 0;
    const [ticked] = await fireDueSchedules(h.services);
    const done = await ended(wf.id, ticked as string);
    const tick = new Date((await call('GET', `/api/v1/workflows/${wf.id}/schedules/${schedule.id}`)).body.last_run_at);
    expect(done.steps[1].idempotency_key).toBe(keyOf(wf, runOrigin.schedule(schedule.id, tick)));
    expect(target.requests.map((q) => q.key)).toEqual([done.steps[1].idempotency_key]);

    const hook = (await call('POST', `/api/v1/workflows/${wf.id}/hooks`, {})).body;
    const body = JSON.stringify({ tag: 'hooked' });
    const headers = { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', hook.secret).update(body).digest('hex')}`, 'x-github-delivery': 'gh-1' };
    const delivered = await h.app.request(hook.path, { method: 'POST', body, headers });
    const runId = ((await delivered.json()) as { run_id: string }).run_id;
    const hooked = await ended(wf.id, runId);
    expect(hooked.steps[1].idempotency_key).toBe(keyOf(wf, runOrigin.webhook(hook.id, 'id:gh-1')));
    // The key says nothing of the hook's secret or the body.
    expect(hooked.steps[1].idempotency_key).not.toContain('gh-1');
  });
});

describe('a queued run whose process stopped is resumed', () => {
  it('reuses the STF step and the effect it finished, sends the effect under way again with the same key; the slow attempt changes nothing', async () => {
    const wf = await workflow(['/first', '/second']);
    target.requests.length = 0;
    target.hold.add('/second');
    const queued = await call('POST', `/api/v1/workflows/${wf.id}/execute?async=true`, { tag: 'resume-me' });
    expect(queued.status).toBe(202);
    const runId = queued.body.run_id as string;
    // Attempt 1 delivered /first and waits on /second; its progress says so.
    await eventually(async () => target.held.length === 1 && (await run(wf.id, runId)).steps.some((s: any) => s.kind === 'effect' && s.delivered), 10_000);
    const during = await run(wf.id, runId);
    expect(during).toMatchObject({ status: 'running', attempts: 1 });
    // The checkpoint (the STF's output, made of the run's input) is never shown.
    expect(JSON.stringify(during)).not.toContain('checkpoint');

    // Its process looks dead: the sweep gives it back to the queue, and a second attempt resumes it.
    await stale(runId);
    expect(await resumeInterruptedRuns(h.services)).toBeGreaterThanOrEqual(1);
    let done: any;
    await eventually(async () => {
      done = await run(wf.id, runId);
      return done.status === 'succeeded';
    }, 15_000);
    expect(done.attempts).toBe(2);
    expect(done.steps).toEqual([
      expect.objectContaining({ kind: 'stf', index: 0, status: 'succeeded', attempt: 1 }),
      expect.objectContaining({ kind: 'effect', index: 0, status: 'succeeded', delivered: true, attempt: 1 }),
      expect.objectContaining({ kind: 'effect', index: 1, status: 'succeeded', delivered: true, attempt: 2 }),
    ]);
    const first = target.requests.filter((q) => q.url === '/first');
    const second = target.requests.filter((q) => q.url === '/second');
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(2);
    expect(second[1]?.key).toBe(second[0]?.key);
    expect(second[0]?.key).toBe(done.steps[2].idempotency_key);

    // The first attempt was only slow: its call ends now, and its end is not the run's.
    target.release();
    const audit = async () => ((await call('GET', '/api/v1/audit-logs?action=execute_workflow')).body as any[]).filter((e) => e.details?.run_id === runId);
    await eventually(async () => (await audit()).length >= 3, 10_000);
    expect(await run(wf.id, runId)).toMatchObject({ status: 'succeeded', attempts: 2, steps: done.steps });
    const row = await h.services.db.selectFrom('platform.workflow_runs').select(['checkpoint']).where('id', '=', runId).executeTakeFirstOrThrow();
    expect(row.checkpoint).toBeNull();
  });

  it('a row event whose run was cut RUN_MAX_ATTEMPTS times fails interrupted and goes dead, not retried as a new run', async () => {
    const wf = await workflow(['/crashy']);
    const trigger = (await call('POST', `/api/v1/workflows/${wf.id}/triggers`, { event: 'row_inserted', table_name: 'orders' })).body;
    target.hold.add('/crashy');
    await h.sqlOk(owner.token, ws.id, "INSERT INTO orders (tag) VALUES ('crashy')");
    const [runId] = await dispatchWorkflowEvents(h.services);
    expect(runId).toBeDefined();
    await eventually(async () => target.held.length === 1, 10_000);
    // Its third attempt's process stopped too (as if it crashed the process every time).
    await sql`UPDATE platform.workflow_runs SET attempts = 3, heartbeat_at = now() - interval '10 minutes' WHERE id = ${runId}`.execute(h.services.db);
    await resumeInterruptedRuns(h.services);
    const failed = await run(wf.id, runId as string);
    expect(failed).toMatchObject({ status: 'failed', attempts: 3, error: { step: 'run', kind: 'interrupted', message: expect.stringContaining('attempt 3 of at most 3') } });
    await dispatchWorkflowEvents(h.services);
    const events = (await call('GET', `/api/v1/workflows/${wf.id}/triggers/${trigger.id}/events`)).body as any[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ status: 'dead', attempts: 1, run_id: runId, last_error: { kind: 'interrupted' } });
    // The attempt still in this process ends later: the run stays as the sweep left it; no new run was queued.
    target.release();
    const ends = async () => ((await call('GET', '/api/v1/audit-logs?action=execute_workflow')).body as any[]).filter((e) => e.details?.run_id === runId);
    await eventually(async () => (await ends()).length === 1, 10_000);
    expect(await run(wf.id, runId as string)).toMatchObject({ status: 'failed', attempts: 3, error: { kind: 'interrupted' } });
    await dispatchWorkflowEvents(h.services);
    expect(((await call('GET', `/api/v1/workflows/${wf.id}/runs`)).body as any[]).map((r) => r.id)).toEqual([runId]);
    // Another member reads the run's keys and attempts, not the rows.
    const seen = await run(wf.id, runId as string, member.token);
    expect(seen.input).toMatchObject({ row: null, redacted: true });
    expect(JSON.stringify(seen)).not.toContain('crashy');
  });
});
