// Issue 31: run step data. Each step of a recorded run keeps its input and its output (capped by
// WORKFLOW_STEP_DATA_MAX_BYTES, with a truncation marker); a run made of rows only the user it ran as may read keeps
// them from everyone else; no secret of an STF, and no credential an effect sends, is kept anywhere (canaries);
// `POST …/runs/{runId}/rerun` runs the same `$input` again as the caller, waiting or queued; nothing of another
// workspace is reachable through the run view, the run list or the rerun.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dispatchWorkflowEvents } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually } from './support.js';

/** A real HTTP server on 127.0.0.1 that records each request and answers it with what it received (an echo). */
interface Target {
  url: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}
async function echoTarget(): Promise<Target> {
  const t = { requests: [] as Target['requests'] } as Target;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      t.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const status = req.url?.startsWith('/rates') ? 200 : 201;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.url?.startsWith('/rates') ? { eur: 2 } : { url: req.url, headers: req.headers, body: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.close = () => new Promise((r) => server.close(() => r()));
  return t;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
type User = Awaited<ReturnType<Harness['user']>>;
let h: Harness;
let owner: User;
let peer: User;
let ws: { id: string };
let target: Target;

const as = (user: User, method: string, path: string, body?: unknown, opts: { workspace?: string; headers?: Record<string, string>; harness?: Harness } = {}) =>
  (opts.harness ?? h).call(method, path, { token: user.token, workspace: opts.workspace ?? ws.id, body, ...(opts.headers ? { headers: opts.headers } : {}) });
async function stf(code: string, name = 's'): Promise<{ id: string; versionId: string }> {
  const r = await as(owner, 'POST', '/api/v1/stfs', { name, version: '1', runtime: 'javascript', code: b64(code) });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.id, versionId: r.body.version.id };
}
async function workflow(body: Record<string, unknown>): Promise<string> {
  const r = await as(owner, 'POST', '/api/v1/workflows', { name: 'w', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}
const steps = (versionIds: string[]) => versionIds.map((id) => ({ stf_version_id: id, input_mappings: [] }));
const execute = (wf: string, input: unknown, user = owner, harness = h) => as(user, 'POST', `/api/v1/workflows/${wf}/execute`, input, { harness });
const runOf = (wf: string, runId: string, user = owner, harness = h) => as(user, 'GET', `/api/v1/workflows/${wf}/runs/${runId}`, undefined, { harness });
const rerun = (wf: string, runId: string, user = owner, opts: { query?: string; headers?: Record<string, string>; workspace?: string } = {}) =>
  as(user, 'POST', `/api/v1/workflows/${wf}/runs/${runId}/rerun${opts.query ?? ''}`, undefined, opts);
const runIdOf = (r: { headers: Headers }) => r.headers.get('x-workflow-run-id') as string;
/** Polls a run until it has ended; its view. */
async function ended(wf: string, runId: string, user = owner): Promise<any> {
  let last: any;
  await eventually(async () => {
    last = (await runOf(wf, runId, user)).body;
    return !['queued', 'running'].includes(last.status);
  }, 20_000);
  return last;
}

beforeAll(async () => {
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1' });
  owner = await h.user('owner');
  peer = await h.user('peer');
  ws = await h.workspace(owner.token, 'Steps');
  await h.addMember(owner.token, ws.id, peer.email, 'member');
  target = await echoTarget();
});
afterAll(async () => {
  await target?.close();
  await h?.close();
});

describe('step data', () => {
  it('each step keeps its input and its output: a Fetch source, two STFs, an effect; hostile text stays as it was; run lists have none', async () => {
    const price = await stf('return { total: $input.qty * $sources.rates.eur, note: $input.note };');
    const bump = await stf('return { total: $input.total + 1 };');
    const hook = await as(owner, 'POST', '/api/v1/effects', {
      name: 'notify',
      version: '1',
      url: `${target.url}/hook`,
      method: 'POST',
      header_mappings: [{ source: { type: 'Const', value: 'shown' }, target: 'X-Trace' }],
      body_mappings: [{ source: { type: 'Variable', value: '$.total' }, target: 'order.total' }],
    });
    const wf = await workflow({
      input_steps: [{ name: 'rates', source: { type: 'Fetch', url: `${target.url}/rates` } }],
      stf_steps: [steps([price.versionId])[0], { stf_version_id: bump.versionId, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].total' }, target: 'total' }] }],
      effect_steps: [{ effect_version_id: hook.body.version.id, input_mappings: [] }],
    });
    const note = `'; DROP TABLE platform.workflow_runs; -- $$ $1 /* "quoted" */ <!-- \\ é`;
    const r = await execute(wf, { qty: 3, note });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const run = (await runOf(wf, runIdOf(r))).body;
    expect(run.steps).toMatchObject([
      { kind: 'input', name: 'rates', input: { type: 'Fetch', method: 'GET', url: `${target.url}/rates`, headers: {} }, output: { eur: 2 } },
      { kind: 'stf', index: 0, input: { qty: 3, note }, output: { total: 6, note } },
      { kind: 'stf', index: 1, input: { total: 6 }, output: { total: 7 } },
      {
        kind: 'effect',
        index: 0,
        input: { method: 'POST', url: `${target.url}/hook`, headers: { 'x-trace': 'shown', 'content-type': 'application/json' }, body: { order: { total: 7 } } },
        output: { status: 201, body: { url: '/hook', body: { order: { total: 7 } } } },
      },
    ]);
    // The data is the run view's: the run list, and what it stores with the listed steps, have none of it.
    const list = (await as(owner, 'GET', `/api/v1/workflows/${wf}/runs`)).body;
    expect(list[0].id).toBe(runIdOf(r));
    expect(list[0].steps.some((s: object) => 'input' in s || 'output' in s)).toBe(false);
    const stored = await h.services.db.selectFrom('platform.workflow_runs').select(['steps', 'step_data']).where('id', '=', runIdOf(r)).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored.steps)).not.toContain('DROP TABLE');
    expect((stored.step_data as unknown[]).length).toBe(4);
    // The tables are as they were: the hostile text was data.
    expect((await h.services.db.selectFrom('platform.workflow_runs').select('id').where('id', '=', runIdOf(r)).execute()).length).toBe(1);
  });

  it('a failed step keeps its input, a skipped one nothing; a value over WORKFLOW_STEP_DATA_MAX_BYTES is the truncation marker; 0 keeps nothing', async () => {
    const big = await stf('if ($input.fail) throw new Error("no"); return { text: "é".repeat(2000) };');
    const after = await stf('return 1;');
    const wf = await workflow({ stf_steps: steps([big.versionId, after.versionId]) });
    const failed = await execute(wf, { fail: true });
    expect(failed.status).toBe(422);
    expect((await runOf(wf, runIdOf(failed))).body.steps).toMatchObject([
      { status: 'failed', input: { fail: true }, output: null },
      { status: 'skipped', input: null, output: null },
    ]);

    // Another process of the same deployment with a small cap, and one that keeps nothing.
    const small = await Harness.create({ WORKFLOW_STEP_DATA_MAX_BYTES: '300' }, h.url);
    const none = await Harness.create({ WORKFLOW_STEP_DATA_MAX_BYTES: '0' }, h.url);
    try {
      const r = await execute(wf, { n: 1 }, owner, small);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const [first] = (await runOf(wf, runIdOf(r))).body.steps;
      expect(first.input).toEqual({ n: 1 });
      const whole = JSON.stringify({ text: 'é'.repeat(2000) });
      expect(first.output).toMatchObject({ truncated: true, bytes: Buffer.byteLength(whole), preview: expect.stringMatching(/^\{"text":"éé/) });
      expect(whole.startsWith(first.output.preview)).toBe(true);
      expect(Buffer.byteLength(JSON.stringify(first.output))).toBeLessThanOrEqual(300);
      // The next step's input is that output: the same marker; its output fits, and is kept whole.
      expect((await runOf(wf, runIdOf(r))).body.steps[1]).toMatchObject({ input: first.output, output: 1 });
      const kept = await execute(wf, { n: 1 }, owner, none);
      expect((await runOf(wf, runIdOf(kept))).body.steps.map((s: any) => [s.input, s.output])).toEqual([
        [null, null],
        [null, null],
      ]);
    } finally {
      await small.close();
      await none.close();
    }
  });
});

describe('secrets and credentials (canaries)', () => {
  const STF_CANARY = 'canary-stf-secret-7b1e';
  const CONST_CANARY = 'canary-effect-key-44c0';
  const FETCH_CANARY = 'canary-fetch-token-9d2a';
  const canaries = [STF_CANARY, CONST_CANARY, FETCH_CANARY];
  const noCanary = (what: string, value: unknown) => {
    const text = JSON.stringify(value);
    for (const c of canaries) expect(text, `${what} holds ${c}`).not.toContain(c);
  };

  it('appear nowhere in the run view, the run list, the step data, the audit log, nor a rerun (waiting or queued)', async () => {
    // An STF reads its secret and hands it on (and, foolishly, returns it bare); the effect sends it as its
    // Authorization, with a credential of its own; the endpoint echoes every header and the body.
    const token = await stf('return { n: $input.n, auth: "Bearer " + $env.API_TOKEN, bare: $env.API_TOKEN };', 'token');
    const set = await as(owner, 'POST', `/api/v1/stfs/${token.id}/secrets`, { env_key: 'API_TOKEN', value: STF_CANARY });
    expect(set.status).toBeLessThan(300);
    const last = await stf('return { n: $input.n + 1 };', 'last');
    const call = await as(owner, 'POST', '/api/v1/effects', {
      name: 'auth',
      version: '1',
      url: `${target.url}/authed?token=${CONST_CANARY}&page=1`,
      method: 'POST',
      header_mappings: [
        { source: { type: 'Variable', value: '$.auth' }, target: 'Authorization' },
        { source: { type: 'Const', value: CONST_CANARY }, target: 'X-Api-Key' },
      ],
      body_mappings: [{ source: { type: 'Variable', value: '$.auth' }, target: 'forwarded' }],
    });
    expect(call.status, JSON.stringify(call.body)).toBe(201);
    const wf = await workflow({
      input_steps: [{ name: 'rates', source: { type: 'Fetch', url: `${target.url}/rates`, headers: { Authorization: `Bearer ${FETCH_CANARY}` } } }],
      stf_steps: [steps([token.versionId])[0], { stf_version_id: last.versionId, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].n' }, target: 'n' }] }],
      effect_steps: [{ effect_version_id: call.body.version.id, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].auth' }, target: 'auth' }] }],
    });
    target.requests.length = 0;
    const r = await execute(wf, { n: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ n: 2 });
    // The secrets did their work: the endpoint got them.
    const sent = target.requests.find((q) => q.url.startsWith('/authed'));
    expect(sent?.headers.authorization).toBe(`Bearer ${STF_CANARY}`);
    expect(sent?.headers['x-api-key']).toBe(CONST_CANARY);
    expect(target.requests.find((q) => q.url === '/rates')?.headers.authorization).toBe(`Bearer ${FETCH_CANARY}`);

    const view = (await runOf(wf, runIdOf(r))).body;
    noCanary('the run view', view);
    expect(view.steps[0]).toMatchObject({ input: { headers: { Authorization: '[redacted]' } } });
    expect(view.steps[1]).toMatchObject({ input: { n: 1 }, output: { n: 1, auth: 'Bearer ***', bare: '***' } });
    expect(view.steps[2]).toMatchObject({ input: { n: 1 }, output: { n: 2 } });
    expect(view.steps[3].input).toMatchObject({
      url: `${target.url}/authed?token=%5Bredacted%5D&page=1`,
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]' },
      body: { forwarded: 'Bearer ***' },
    });
    expect(view.steps[3].output).toMatchObject({ status: 201, body: { headers: { authorization: '***', 'x-api-key': '***' }, body: { forwarded: '***' } } });
    noCanary('the run view of another member', (await runOf(wf, runIdOf(r), peer)).body);
    noCanary('the run list', (await as(owner, 'GET', `/api/v1/workflows/${wf}/runs`)).body);
    const stored = await h.services.db.selectFrom('platform.workflow_runs').selectAll().where('workflow_id', '=', wf).execute();
    noCanary('the stored runs', stored.map(({ checkpoint: _c, ...row }) => row));

    // Rerun, waiting: the answer and the new run; queued: the answer, and the run once it has ended.
    const again = await rerun(wf, runIdOf(r));
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    noCanary('the rerun answer', again.body);
    noCanary('the rerun run', (await runOf(wf, runIdOf(again))).body);
    const queued = await rerun(wf, runIdOf(r), owner, { query: '?async=true' });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    noCanary('the queued rerun answer', queued.body);
    const done = await ended(wf, queued.body.run_id);
    expect(done).toMatchObject({ status: 'succeeded', trigger: 'async', rerun_of: runIdOf(r), output: { n: 2 } });
    noCanary('the queued rerun run', done);
    noCanary('the audit log', (await as(owner, 'GET', '/api/v1/audit-logs?limit=1000')).body);
    // Nor a credential of the callers.
    for (const answer of [view, (await runOf(wf, runIdOf(again))).body, done, again.body, queued.body]) {
      for (const t of [owner.token, peer.token]) expect(JSON.stringify(answer)).not.toContain(t);
    }
  });

  it("the run's own record masks a secret its last STF returns, as its steps do", async () => {
    const leaky = await stf('return { token: $env.API_TOKEN };', 'leaky');
    await as(owner, 'POST', `/api/v1/stfs/${leaky.id}/secrets`, { env_key: 'API_TOKEN', value: STF_CANARY });
    const wf = await workflow({ stf_steps: steps([leaky.versionId]) });
    const r = await execute(wf, {});
    expect(r.status).toBe(200);
    const view = (await runOf(wf, runIdOf(r))).body;
    expect(view.output).toEqual({ token: '***' });
    expect(view.steps[0].output).toEqual({ token: '***' });
    noCanary('the run view', view);
    noCanary('the run list', (await as(owner, 'GET', `/api/v1/workflows/${wf}/runs`)).body);
  });
});

describe('whose step data it is to read', () => {
  it("a run whose Table step read the owner's rows: the owner sees each step's data, another member none", async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE salaries (who text, amount int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['salaries']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO salaries (who, amount) VALUES ('Ada Lovelace', 100)");
    const sum = await stf('return { total: $sources.pay.reduce((n, r) => n + r.amount, 0), who: $sources.pay.map((r) => r.who) };');
    const wf = await workflow({ input_steps: [{ name: 'pay', source: { type: 'Table', name: 'salaries' } }], stf_steps: steps([sum.versionId]) });
    const r = await execute(wf, { month: 'May' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const mine = (await runOf(wf, runIdOf(r))).body;
    expect(mine.steps).toMatchObject([
      { kind: 'input', caller_rows: true, input: { type: 'Table', name: 'salaries' }, output: [{ who: 'Ada Lovelace', amount: 100 }] },
      { kind: 'stf', input: { month: 'May' }, output: { total: 100, who: ['Ada Lovelace'] } },
    ]);
    const theirs = (await runOf(wf, runIdOf(r), peer)).body;
    expect(theirs).toMatchObject({ output: null, input: { month: 'May' } });
    expect(theirs.steps.map((s: any) => [s.input, s.output])).toEqual([
      [null, null],
      [null, null],
    ]);
    expect(JSON.stringify(theirs)).not.toContain('Ada');
    expect(JSON.stringify((await as(peer, 'GET', `/api/v1/workflows/${wf}/runs`)).body)).not.toContain('Ada');
    // The peer may run it again, as themself: the Table step reads with their policies (they have none).
    const theirRerun = await rerun(wf, runIdOf(r), peer);
    expect(theirRerun.status).toBe(422);
    expect(JSON.parse(theirRerun.body.details)).toMatchObject({ step: 'input_steps[0]', kind: 'POLICY_DENIED' });
    expect(JSON.stringify(theirRerun.body)).not.toContain('Ada');
    expect((await runOf(wf, runIdOf(theirRerun), peer)).body).toMatchObject({ executed_by: peer.id, rerun_of: runIdOf(r), status: 'failed' });
  });

  it("a row trigger's run: only its owner sees its step data and may run it again; the rerun is theirs to read too", async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE tickets (title text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['tickets']);
    const echo = await stf('return { title: $input.row.title };');
    const wf = await workflow({ stf_steps: steps([echo.versionId]) });
    const trigger = (await as(owner, 'POST', `/api/v1/workflows/${wf}/triggers`, { event: 'row_inserted', table_name: 'tickets' })).body;
    await h.sqlOk(owner.token, ws.id, "INSERT INTO tickets (title) VALUES ('printer on fire')");
    let events: any[] = [];
    await eventually(async () => {
      await dispatchWorkflowEvents(h.services);
      events = (await as(owner, 'GET', `/api/v1/workflows/${wf}/triggers/${trigger.id}/events`)).body;
      return events.length === 1 && events[0].status === 'succeeded';
    }, 20_000);
    const runId = events[0].run_id as string;
    expect((await runOf(wf, runId)).body.steps[0]).toMatchObject({ input: { type: 'row_inserted', row: { title: 'printer on fire' } }, output: { title: 'printer on fire' } });
    const theirs = (await runOf(wf, runId, peer)).body;
    expect(theirs.steps[0]).toMatchObject({ input: null, output: null });
    expect(JSON.stringify(theirs)).not.toContain('printer');

    // Its input is the owner's rows: another member may not run it again; the owner may, and the new run is
    // whole only for them as well.
    const refused = await rerun(wf, runId, peer);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('FORBIDDEN');
    expect(JSON.stringify(refused.body)).not.toContain('printer');
    const again = await rerun(wf, runId);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual({ title: 'printer on fire' });
    const repeated = (await runOf(wf, runIdOf(again))).body;
    expect(repeated).toMatchObject({ trigger: 'request', executed_by: owner.id, rerun_of: runId, input: { row: { title: 'printer on fire' } } });
    const repeatedForPeer = (await runOf(wf, runIdOf(again), peer)).body;
    expect(repeatedForPeer).toMatchObject({ output: null, input: { row: null, redacted: true }, steps: [{ input: null, output: null }] });
    expect(JSON.stringify(repeatedForPeer)).not.toContain('printer');
  });
});

describe('rerun', () => {
  it("runs the recorded $input again as the caller, waiting or queued, and is audited as rerun_workflow_run", async () => {
    const who = await stf('return { caller: $caller, n: $input.n };');
    const wf = await workflow({ stf_steps: steps([who.versionId]) });
    const first = await execute(wf, { n: 41 });
    expect(first.body).toEqual({ caller: owner.id, n: 41 });
    const again = await rerun(wf, runIdOf(first), peer);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual({ caller: peer.id, n: 41 });
    expect((await runOf(wf, runIdOf(again))).body).toMatchObject({ executed_by: peer.id, trigger: 'request', rerun_of: runIdOf(first), input: { n: 41 } });
    expect((await runOf(wf, runIdOf(first))).body.rerun_of).toBeNull();

    const queued = await rerun(wf, runIdOf(first), peer, { headers: { prefer: 'respond-async' } });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    expect(queued.body).toEqual({ run_id: expect.any(String), workflow_id: wf, status: 'queued' });
    expect(queued.headers.get('location')).toBe(`/api/v1/workflows/${wf}/runs/${queued.body.run_id}`);
    expect(queued.headers.get('preference-applied')).toBe('respond-async');
    expect(await ended(wf, queued.body.run_id)).toMatchObject({ status: 'succeeded', trigger: 'async', executed_by: peer.id, rerun_of: runIdOf(first), output: { caller: peer.id, n: 41 } });

    const audit = (await as(owner, 'GET', '/api/v1/audit-logs?action=rerun_workflow_run')).body;
    expect(audit.map((e: any) => [e.user_id, e.resource_id, e.details.rerun_of])).toEqual(
      expect.arrayContaining([
        [peer.id, wf, runIdOf(first)],
        [peer.id, wf, runIdOf(first)],
      ]),
    );
    expect(audit.find((e: any) => e.details.run_id === runIdOf(again))).toMatchObject({ details: { status: 'succeeded', rerun_of: runIdOf(first) } });
  });

  it('answers as execute does when the run fails, and refuses a run that has not ended, and bad queries', async () => {
    const failing = await stf('throw new Error("always " + $input.n);');
    const wf = await workflow({ stf_steps: steps([failing.versionId]) });
    const first = await execute(wf, { n: 1 });
    expect(first.status).toBe(422);
    const again = await rerun(wf, runIdOf(first));
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('RUNTIME_ERROR');
    expect(JSON.parse(again.body.details)).toMatchObject({ run_id: runIdOf(again), step: 'stf_steps[0]', message: expect.stringContaining('always 1') });

    const slow = await stf('const until = Date.now() + 700; while (Date.now() < until) {} return 1;');
    const slowWf = await workflow({ stf_steps: steps([slow.versionId]) });
    const pending = execute(slowWf, {});
    let running: string | undefined;
    await eventually(async () => {
      running = (await as(owner, 'GET', `/api/v1/workflows/${slowWf}/runs?status=running`)).body[0]?.id;
      return running !== undefined;
    });
    const early = await rerun(slowWf, running as string);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'CONFLICT', error: 'The run has not ended (running)' });
    expect((await pending).status).toBe(200);
    expect((await rerun(slowWf, running as string)).status).toBe(200);

    expect((await rerun(wf, runIdOf(first), owner, { query: '?async=maybe' })).status).toBe(400);
  });

  it("nothing of another workspace: its runs are 404 through the run view, the run list and the rerun; strangers and anonymous callers are refused", async () => {
    const secretive = await stf('return { plan: "other-workspace-canary" };');
    const wf = await workflow({ stf_steps: steps([secretive.versionId]) });
    const r = await execute(wf, {});
    const runId = runIdOf(r);
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    const inTheirs = { workspace: theirs.id };
    const answers = [
      await as(stranger, 'GET', `/api/v1/workflows/${wf}/runs/${runId}`, undefined, inTheirs),
      await as(stranger, 'GET', `/api/v1/workflows/${wf}/runs`, undefined, inTheirs),
      await as(stranger, 'POST', `/api/v1/workflows/${wf}/runs/${runId}/rerun`, undefined, inTheirs),
    ];
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404]);
    // Their own workflow's path with our run id: still nothing.
    const own = await h.call('POST', '/api/v1/workflows', { token: stranger.token, workspace: theirs.id, body: { name: 'mine' } });
    const crossed = [
      await as(stranger, 'GET', `/api/v1/workflows/${own.body.id}/runs/${runId}`, undefined, inTheirs),
      await as(stranger, 'POST', `/api/v1/workflows/${own.body.id}/runs/${runId}/rerun`, undefined, inTheirs),
    ];
    expect(crossed.map((a) => a.status)).toEqual([404, 404]);
    // Naming our workspace: not a member.
    expect((await rerun(wf, runId, stranger)).status).toBe(403);
    expect((await as(stranger, 'GET', `/api/v1/workflows/${wf}/runs/${runId}`)).status).toBe(403);
    // Another workflow of ours, an unknown run, no credential.
    const otherWf = await workflow({ stf_steps: steps([secretive.versionId]) });
    expect((await rerun(otherWf, runId)).status).toBe(404);
    expect((await rerun(wf, '01a2083a-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await h.call('POST', `/api/v1/workflows/${wf}/runs/${runId}/rerun`, { workspace: ws.id })).status).toBe(401);
    for (const a of [...answers, ...crossed]) expect(JSON.stringify(a.body)).not.toContain('other-workspace-canary');
    // Nothing ran for any of them.
    expect((await as(owner, 'GET', `/api/v1/workflows/${wf}/runs`)).body).toHaveLength(1);
  });
});
