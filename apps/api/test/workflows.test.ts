import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

/** A real HTTP server on a loopback address that records what it receives. */
interface Target {
  url: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  connections: number;
  close(): Promise<void>;
}
async function target(host: string, answer: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void): Promise<Target> {
  const t = { requests: [] as Target['requests'], connections: 0 } as Target;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      t.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, body, res);
    });
  });
  server.on('connection', () => t.connections++);
  await new Promise<void>((r) => server.listen(0, host, r));
  t.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  t.close = () => new Promise((r) => server.close(() => r()));
  return t;
}
const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let rates: Target;
let hooks: Target;
let outside: Target;
const editorCall = (method: string, path: string, body?: unknown) => h.call(method, path, { token: owner.token, workspace: ws.id, body });

async function stf(code: string): Promise<{ id: string; versionId: string }> {
  const r = await editorCall('POST', '/api/v1/stfs', { name: 's', version: '1', runtime: 'javascript', code: b64(code) });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.id, versionId: r.body.version.id };
}
async function effect(body: Record<string, unknown>): Promise<{ id: string; versionId: string }> {
  const r = await editorCall('POST', '/api/v1/effects', { name: 'e', version: '1', method: 'POST', header_mappings: [], body_mappings: [], ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.id, versionId: r.body.version.id };
}
async function workflow(body: Record<string, unknown>): Promise<string> {
  const r = await editorCall('POST', '/api/v1/workflows', { name: 'w', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}
const execute = (id: string, body: unknown, opts: { token?: string | null; workspace?: string } = {}) =>
  h.call('POST', `/api/v1/workflows/${id}/execute`, {
    ...(opts.token === null ? {} : { token: opts.token ?? owner.token }),
    workspace: opts.workspace ?? ws.id,
    body,
  });

beforeAll(async () => {
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Flows');
  rates = await target('127.0.0.1', (req, _body, res) => (req.url === '/broken' ? json(res, 500, { error: 'down' }) : json(res, 200, { eur: 2 })));
  hooks = await target('127.0.0.1', (req, _body, res) => (req.url?.startsWith('/fail') ? json(res, 500, { error: 'nope' }) : json(res, 201, { ok: true })));
  outside = await target('127.0.0.2', (_req, _body, res) => json(res, 200, { leaked: true }));
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE orders (owner_id uuid, total numeric, note text)');
});
afterAll(async () => {
  await Promise.all([rates?.close(), hooks?.close(), outside?.close()]);
  await h?.close();
});

describe('a workflow end to end: Fetch → two STFs (one with SQL under an STF-only policy) → two effects', () => {
  let wf: string;
  let saver: { id: string; versionId: string };

  beforeAll(async () => {
    const pricer = await stf('if ($input.fail === "pricer") throw new Error("cannot price"); return { total: $input.qty * $sources.rates.eur, note: $input.note };');
    saver = await stf(`
      sql("INSERT INTO orders (owner_id, total, note) VALUES (" + ($caller ? "'" + $caller + "'" : "NULL") + ", " + Number($input.total) + ", 'saved')");
      const mine = sql("SELECT count(*)::int AS n FROM orders");
      return { total: $input.total, saved: mine[0].n, caller: $caller };`);
    // Only the saver STF may touch orders, and only the executing user's rows; users have no policy at all.
    const g = await h.group(owner.token, ws.id, { name: 'saver', stf_ids: [saver.id] });
    for (const operation of ['select', 'insert']) {
      await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'orders', operation, condition: { owner_id: '$user_id' } });
    }
    const notify = await effect({
      url: `${hooks.url}/orders`,
      header_mappings: [
        { source: { type: 'Const', value: 'Bearer hook-token' }, target: 'Authorization' },
        { source: { type: 'Variable', value: '$.total' }, target: 'X-Total' },
      ],
      body_mappings: [
        { source: { type: 'Variable', value: 'total' }, target: 'order.total' },
        { source: { type: 'Const', value: 'created' }, target: 'event' },
      ],
      query_mappings: [{ source: { type: 'Variable', value: '$.ref' }, target: 'ref' }],
    });
    const audit = await effect({ url: `${hooks.url}/audit`, body_mappings: [{ source: { type: 'Variable', value: '$.who' }, target: 'who' }] });
    wf = await workflow({
      name: 'orders',
      input_steps: [{ name: 'rates', source: { type: 'Fetch', url: `${rates.url}/rates` } }],
      stf_steps: [
        { stf_version_id: pricer.versionId, input_mappings: [] },
        { stf_version_id: saver.versionId, input_mappings: [{ source: { type: 'Variable', value: '$steps[0].total' }, target: 'total' }] },
      ],
      effect_steps: [
        {
          effect_version_id: notify.versionId,
          input_mappings: [
            { source: { type: 'Variable', value: '$steps[1].total' }, target: 'total' },
            { source: { type: 'Variable', value: '$input.ref' }, target: 'ref' },
          ],
        },
        { effect_version_id: audit.versionId, input_mappings: [{ source: { type: 'Variable', value: '$steps[1].caller' }, target: 'who' }] },
      ],
    });
  });

  it('answers the last STF output, calls both effects with the mapped request, and records the run', async () => {
    hooks.requests.length = 0;
    const r = await execute(wf, { qty: 3, ref: 'A-1' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ total: 6, saved: 1, caller: owner.id });
    const runId = r.headers.get('x-workflow-run-id');
    expect(runId).toBeTruthy();

    const notify = hooks.requests.find((q) => q.url.startsWith('/orders'));
    expect(notify).toMatchObject({ method: 'POST', url: '/orders?ref=A-1' });
    expect(notify?.headers.authorization).toBe('Bearer hook-token');
    expect(notify?.headers['x-total']).toBe('6');
    expect(notify?.headers['idempotency-key']).toBeTruthy();
    expect(JSON.parse(notify?.body ?? '{}')).toEqual({ order: { total: 6 }, event: 'created' });
    expect(JSON.parse(hooks.requests.find((q) => q.url === '/audit')?.body ?? '{}')).toEqual({ who: owner.id });

    const run = await editorCall('GET', `/api/v1/workflows/${wf}/runs/${runId}`);
    expect(run.body).toMatchObject({ id: runId, status: 'succeeded', input: { qty: 3, ref: 'A-1' }, output: { total: 6 }, error: null, executed_by: owner.id });
    expect(run.body.steps.map((s: any) => `${s.kind}[${s.index}]:${s.status}`)).toEqual([
      'input[0]:succeeded',
      'stf[0]:succeeded',
      'stf[1]:succeeded',
      'effect[0]:succeeded',
      'effect[1]:succeeded',
    ]);
    expect(run.body.steps[3]).toMatchObject({ status_code: 201, attempts: 1 });
    expect(typeof run.body.duration_ms).toBe('number');
    const runs = await editorCall('GET', `/api/v1/workflows/${wf}/runs`);
    expect(runs.body[0]).toMatchObject({ id: runId, status: 'succeeded' });
    expect(runs.body[0]).not.toHaveProperty('input');
  });

  it('the SQL of the STF step runs under the STF policy: users of the workspace still see nothing', async () => {
    const direct = await h.sql(owner.token, ws.id, 'SELECT * FROM orders');
    expect(direct.status).toBe(403);
  });

  it('fails with 422 RUNTIME_ERROR naming the step, in each position, and records the failure', async () => {
    const failedSource = await target('127.0.0.1', (_q, _b, res) => json(res, 500, { error: 'down' }));
    await failedSource.close();
    // input step: the rates server answers 500
    const brokenRates = await workflow({
      input_steps: [{ name: 'rates', source: { type: 'Fetch', url: `${rates.url}/broken` } }],
      stf_steps: [],
    });
    const r0 = await execute(brokenRates, {});
    expect(r0.status).toBe(422);
    expect(r0.body.code).toBe('RUNTIME_ERROR');
    expect(JSON.parse(r0.body.details)).toMatchObject({ step: 'input_steps[0]', kind: 'http_status' });

    // first STF throws
    const r1 = await execute(wf, { qty: 1, fail: 'pricer' });
    expect(r1.status).toBe(422);
    expect(r1.body.error).toContain('stf_steps[0]');
    expect(JSON.parse(r1.body.details)).toMatchObject({ step: 'stf_steps[0]', kind: 'runtime', message: expect.stringContaining('cannot price') });
    const run1 = await editorCall('GET', `/api/v1/workflows/${wf}/runs/${r1.headers.get('x-workflow-run-id')}`);
    expect(run1.body.status).toBe('failed');
    expect(run1.body.steps.map((s: any) => s.status)).toEqual(['succeeded', 'failed', 'skipped', 'skipped', 'skipped']);

    // second STF: its SQL is refused when the STF has no policy (a workflow using it without the group's grant)
    const unprivileged = await stf('sql("INSERT INTO orders (total) VALUES (1)"); return 1;');
    const noGrant = await workflow({ stf_steps: [{ stf_version_id: unprivileged.versionId, input_mappings: [] }] });
    const r2 = await execute(noGrant, {});
    expect(r2.status).toBe(422);
    expect(JSON.parse(r2.body.details)).toMatchObject({ step: 'stf_steps[0]', kind: 'runtime', message: expect.stringMatching(/denied|policy/i) });

    // an effect answers 500: the run fails, the other effect was still called
    hooks.requests.length = 0;
    const good = await effect({ url: `${hooks.url}/ok` });
    const bad = await effect({ url: `${hooks.url}/fail` });
    const effects = await workflow({
      effect_steps: [
        { effect_version_id: good.versionId, input_mappings: [] },
        { effect_version_id: bad.versionId, input_mappings: [] },
      ],
    });
    const r3 = await execute(effects, { x: 1 });
    expect(r3.status).toBe(422);
    expect(JSON.parse(r3.body.details)).toMatchObject({ step: 'effect_steps[1]', kind: 'http_status' });
    expect(hooks.requests.map((q) => q.url).sort()).toEqual(['/fail', '/ok']);
    const run3 = await editorCall('GET', `/api/v1/workflows/${effects}/runs/${r3.headers.get('x-workflow-run-id')}`);
    expect(run3.body.steps.map((s: any) => [s.status, s.status_code])).toEqual([
      ['succeeded', 201],
      ['failed', 500],
    ]);
  });
});

describe('execute: who may run it', () => {
  it('anonymous execution only for workflows that allow it; $user_id is then NULL', async () => {
    const s = await stf('return { caller: $caller, n: $input.n };');
    const closed = await workflow({ stf_steps: [{ stf_version_id: s.versionId, input_mappings: [] }] });
    const open = await workflow({ allow_anonymous_execute: true, stf_steps: [{ stf_version_id: s.versionId, input_mappings: [] }] });
    expect((await execute(closed, { n: 1 }, { token: null })).status).toBe(401);
    const anon = await execute(open, { n: 1 }, { token: null });
    expect(anon.status).toBe(200);
    expect(anon.body).toEqual({ caller: null, n: 1 });
    // Anonymous callers learn nothing: an unknown workflow or workspace is the same 401.
    expect((await execute('01a2083a-0000-7000-8000-000000000000', {}, { token: null })).status).toBe(401);
    expect((await execute(open, {}, { token: null, workspace: '01a2083a-0000-7000-8000-000000000000' })).status).toBe(401);
    // A bad token is 401 even for an open workflow; no X-Workspace-ID is 400.
    expect((await execute(open, {}, { token: 'ses_not-a-token' })).status).toBe(401);
    const noHeader = await h.call('POST', `/api/v1/workflows/${open}/execute`, { body: {} });
    expect(noHeader.status).toBe(400);
  });

  it("members run workflows; editors change them; another workspace's members get 403", async () => {
    const s = await stf('return 7;');
    const wf = await workflow({ stf_steps: [{ stf_version_id: s.versionId, input_mappings: [] }] });
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    expect((await execute(wf, {}, { token: member.token })).body).toBe(7);
    const editors = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [owner.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: editors } });
    const denied = await h.call('POST', '/api/v1/workflows', { token: member.token, workspace: ws.id, body: { name: 'x' } });
    expect(denied.status).toBe(403);
    expect((await h.call('DELETE', `/api/v1/workflows/${wf}`, { token: member.token, workspace: ws.id })).status).toBe(403);
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: null } });

    const stranger = await h.user('stranger');
    expect((await execute(wf, {}, { token: stranger.token })).status).toBe(403);
    const theirs = await h.workspace(stranger.token, 'Theirs');
    expect((await h.call('GET', `/api/v1/workflows/${wf}`, { token: stranger.token, workspace: theirs.id })).status).toBe(404);
    expect((await h.call('GET', `/api/v1/workflows/${wf}/runs`, { token: stranger.token, workspace: theirs.id })).status).toBe(404);
    expect((await execute(wf, {}, { token: stranger.token, workspace: theirs.id })).status).toBe(404);
  });
});

describe('CRUD, validation and audit', () => {
  it('create, get, list by name, patch, soft delete, each audited', async () => {
    const s = await stf('return 1;');
    const id = await workflow({ name: 'billing', description: 'monthly', stf_steps: [{ stf_version_id: s.versionId, input_mappings: [] }] });
    expect((await editorCall('GET', `/api/v1/workflows/${id}`)).body).toMatchObject({ name: 'billing', allow_anonymous_execute: false, stf_steps: [{ stf_version_id: s.versionId, pin_version: false }] });
    expect((await editorCall('GET', '/api/v1/workflows?name=billing')).body.map((w: any) => w.id)).toEqual([id]);
    const p = await editorCall('PATCH', `/api/v1/workflows/${id}`, { description: 'weekly', stf_steps: [{ stf_version_id: s.versionId, pin_version: true }] });
    expect(p.body).toMatchObject({ description: 'weekly', stf_steps: [{ pin_version: true }] });
    await execute(id, {});
    expect((await editorCall('DELETE', `/api/v1/workflows/${id}`)).status).toBe(204);
    expect((await editorCall('GET', `/api/v1/workflows/${id}`)).status).toBe(404);
    expect((await execute(id, {})).status).toBe(404);
    const audit = await editorCall('GET', '/api/v1/audit-logs?limit=1000');
    const actions = audit.body.filter((e: any) => e.resource_id === id).map((e: any) => e.action);
    expect(actions.sort()).toEqual(['create_workflow', 'delete_workflow', 'execute_workflow', 'update_workflow']);
  });

  it('refuses a definition with bad references or variables, with details', async () => {
    const s = await stf('return 1;');
    const r = await editorCall('POST', '/api/v1/workflows', {
      name: 'bad',
      stf_steps: [
        { stf_version_id: s.versionId, input_mappings: [{ source: { type: 'Variable', value: '$secrets.x' }, target: 'x' }] },
        { stf_version_id: '01a2083a-0000-7000-8000-000000000000', input_mappings: [] },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('VALIDATION_ERROR');
    expect(r.body.details).toContain('stf_steps[0].input_mappings[0]: unknown variable root');
    expect(r.body.details).toContain('stf_steps[1].stf_version_id: no STF version');
    const shape = await editorCall('POST', '/api/v1/workflows', { name: 'bad', stf_steps: [{ stf_version_id: 'nope' }] });
    expect(shape.status).toBe(400);
  });
});

describe('the SSRF guard in workflows', () => {
  it('an effect to a loopback address outside the allowlist is refused before connecting', async () => {
    const e = await effect({ url: `${outside.url}/steal` });
    const wf = await workflow({ effect_steps: [{ effect_version_id: e.versionId, input_mappings: [] }] });
    const r = await execute(wf, {});
    expect(r.status).toBe(422);
    expect(JSON.parse(r.body.details)).toMatchObject({ step: 'effect_steps[0]', kind: 'refused' });
    expect(outside.connections).toBe(0);
  });

  it('a Fetch source is refused the same way, and a redirect from an allowed server is not followed', async () => {
    const direct = await workflow({ input_steps: [{ name: 'x', source: { type: 'Fetch', url: `${outside.url}/data` } }] });
    expect(JSON.parse((await execute(direct, {})).body.details)).toMatchObject({ step: 'input_steps[0]', kind: 'refused' });
    const redirector = await target('127.0.0.1', (_q, _b, res) => {
      res.writeHead(302, { location: `${outside.url}/data` });
      res.end();
    });
    try {
      const viaRedirect = await workflow({ input_steps: [{ name: 'x', source: { type: 'Fetch', url: `${redirector.url}/go` } }] });
      const r = await execute(viaRedirect, {});
      expect(r.status).toBe(422);
      expect(redirector.requests).toHaveLength(1);
    } finally {
      await redirector.close();
    }
    expect(outside.connections).toBe(0);
  });
});

describe('File and Table input sources', () => {
  it('a File source is the parsed file; a Table source is the rows the executing user may see', async () => {
    const up = await h.call('POST', `/api/v1/workspaces/${ws.id}/files`, {
      token: owner.token,
      workspace: ws.id,
      body: { filename: 'config.json', content_type: 'application/json', content: Buffer.from('{"rate":3}').toString('base64') },
    });
    expect(up.status).toBe(201);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE prices (sku text, amount numeric)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['prices']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO prices (sku, amount) VALUES ('a', 2)");
    const s = await stf('return { rate: $sources.cfg.rate, skus: $sources.prices.map((p) => p.sku) };');
    const wf = await workflow({
      allow_anonymous_execute: true,
      input_steps: [
        { name: 'cfg', source: { type: 'File', id: up.body.id } },
        { name: 'prices', source: { type: 'Table', name: 'prices' } },
      ],
      stf_steps: [{ stf_version_id: s.versionId, input_mappings: [] }],
    });
    const r = await execute(wf, {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ rate: 3, skus: ['a'] });
    // The rows were the owner's to read: so is the run made of them. Another member (who may select none of the
    // table) reads it without its output; its input step says why.
    const runId = r.headers.get('x-workflow-run-id') as string;
    const peer = await h.user('peer');
    await h.addMember(owner.token, ws.id, peer.email, 'member');
    const mine = await h.call('GET', `/api/v1/workflows/${wf}/runs/${runId}`, { token: owner.token, workspace: ws.id });
    expect(mine.body.output).toEqual({ rate: 3, skus: ['a'] });
    expect(mine.body.steps.find((x: { name?: string }) => x.name === 'prices')).toMatchObject({ kind: 'input', caller_rows: true });
    expect(mine.body.steps.find((x: { name?: string }) => x.name === 'cfg')).not.toHaveProperty('caller_rows');
    const theirs = await h.call('GET', `/api/v1/workflows/${wf}/runs/${runId}`, { token: peer.token, workspace: ws.id });
    expect(theirs.body).toMatchObject({ status: 'succeeded', output: null });
    // Anonymous: the Table source has no user whose policies could apply.
    const anon = await execute(wf, {}, { token: null });
    expect(anon.status).toBe(422);
    expect(JSON.parse(anon.body.details)).toMatchObject({ step: 'input_steps[1]' });
    // A file of another workspace, or none, is refused when saved.
    const bad = await editorCall('POST', '/api/v1/workflows', { name: 'x', input_steps: [{ name: 'f', source: { type: 'File', id: '01a2083a-0000-7000-8000-000000000000' } }] });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toContain('input_steps[0].source.id: no file');
  });
});
