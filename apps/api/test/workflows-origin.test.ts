/**
 * Definitions written for the origin platform run here unchanged (docs/workflows.md, "Coming from d6e"): a daily
 * sales summary in the origin's style — a Fetch input step with a hyphenated name, legacy dotted variables, a
 * Slack-style effect with object mappings whose body reads `$.input.message` — against local HTTP servers on
 * 127.0.0.1 (allowed by OUTBOUND_ALLOWLIST). The fixtures are this test's own.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

interface Sink {
  url: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}
async function sink(answer: (url: string) => unknown): Promise<Sink> {
  const s = { requests: [] as Sink['requests'] } as Sink;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      s.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer(req.url ?? '')));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.close = () => new Promise((r) => server.close(() => r()));
  return s;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let salesApi: Sink;
let slack: Sink;
const call = (method: string, path: string, body?: unknown) => h.call(method, path, { token: owner.token, workspace: ws.id, body });
const variable = (value: string, target: string) => ({ source: { type: 'Variable', value }, target });
const constant = (value: unknown, target: string) => ({ source: { type: 'Const', value }, target });

async function created(path: string, body: unknown): Promise<any> {
  const r = await call('POST', path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}
async function stf(code: string): Promise<string> {
  // `js` is the origin's name of the javascript runtime; the code is top-level with a final return, as there.
  return (await created('/api/v1/stfs', { name: 'kpis', version: '1.0.0', runtime: 'js', code: b64(code) })).version.id;
}
async function run(workflowId: string, input: unknown = {}) {
  const r = await h.call('POST', `/api/v1/workflows/${workflowId}/execute`, { token: owner.token, workspace: ws.id, body: input });
  const record = await call('GET', `/api/v1/workflows/${workflowId}/runs/${r.headers.get('x-workflow-run-id')}`);
  return { status: r.status, body: r.body, record: record.body };
}

beforeAll(async () => {
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Origin');
  salesApi = await sink(() => ({
    currency: 'EUR',
    records: [
      { date: '2026-11-24', amount: 700, product: 'desk' },
      { date: '2026-11-24', amount: 300, product: 'lamp' },
      { date: '2026-11-24', amount: 200, product: 'desk' },
    ],
  }));
  slack = await sink(() => ({ ok: true }));
});
afterAll(async () => {
  await Promise.all([salesApi?.close(), slack?.close()]);
  await h?.close();
});

describe('the daily sales summary, as written for the origin', () => {
  const aggregate = `
const { records, group_by } = $input;
const groups = {};
for (const r of records) groups[r[group_by]] = (groups[r[group_by]] || 0) + r.amount;
return { revenue: records.reduce((s, r) => s + r.amount, 0), by: groups, group_by };`;
  const summary = { revenue: 1200, by: { desk: 900, lamp: 300 }, group_by: 'product' };
  let workflowId: string;
  let effect: any;

  beforeAll(async () => {
    const kpis = await stf(aggregate);
    effect = await created('/api/v1/effects', {
      name: 'notify-slack',
      description: 'Posts the sales summary to a channel',
      version: '1.0.0',
      url: `${slack.url}/services/T000/B000/XXXX`,
      method: 'POST',
      header_mappings: { 'Content-Type': 'application/json' },
      body_mappings: { text: '$.input.message' },
    });
    workflowId = (
      await created('/api/v1/workflows', {
        name: 'daily-sales-summary',
        description: 'Fetches the day, aggregates it, tells Slack',
        input_steps: [{ name: 'sales-data', source: { type: 'Fetch', url: `${salesApi.url}/sales/today`, method: 'GET' } }],
        stf_steps: [{ stf_version_id: kpis, input_mappings: [variable('sources.sales-data.records', 'records'), constant('product', 'group_by')] }],
        effect_steps: [{ effect_version_id: effect.version.id, input_mappings: [variable('steps.0.output', 'message')] }],
      })
    ).id;
  });

  it('object mappings are stored and answered as FieldMapping arrays', () => {
    expect(effect.version.header_mappings).toEqual([constant('application/json', 'Content-Type')]);
    expect(effect.version.body_mappings).toEqual([variable('$.input.message', 'text')]);
  });

  it('runs: the STF gets the fetched records, the hook receives its output as text, and the run record notes each legacy form', async () => {
    slack.requests.length = 0;
    const r = await run(workflowId);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual(summary);
    expect(slack.requests).toHaveLength(1);
    expect(slack.requests[0]).toMatchObject({ method: 'POST', url: '/services/T000/B000/XXXX' });
    expect(slack.requests[0]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(slack.requests[0]?.body ?? '')).toEqual({ text: summary });

    expect(r.record.status).toBe('succeeded');
    const [input, kpis, notify] = r.record.steps;
    expect(input).toMatchObject({ kind: 'input', name: 'sales-data', status: 'succeeded' });
    expect(input).not.toHaveProperty('deprecations');
    expect(kpis.deprecations).toEqual([{ at: 'stf_steps[0].input_mappings[0]', found: 'sources.sales-data.records', use: '$sources.sales-data.records' }]);
    expect(notify.deprecations).toEqual([
      { at: 'effect_steps[0].input_mappings[0]', found: 'steps.0.output', use: '$steps[0]' },
      { at: 'effect_steps[0].effect.body_mappings[0]', found: '$.input.message', use: '$.message' },
    ]);
  });

  it('the documented forms ($sources.sales-data, $steps[0], "$.message") do the same without notes', async () => {
    const kpis = await stf(aggregate);
    const plain = await created(`/api/v1/effects/${effect.id}/versions`, {
      version: '1.1.0',
      url: `${slack.url}/services/T000/B000/XXXX`,
      method: 'POST',
      header_mappings: { 'Content-Type': 'application/json' },
      body_mappings: { text: '$.message', username: 'sales-bot', blocks: [{ type: 'divider' }] },
    });
    const id = (
      await created('/api/v1/workflows', {
        name: 'daily-sales-summary-2',
        input_steps: [{ name: 'sales-data', source: { type: 'Fetch', url: `${salesApi.url}/sales/today` } }],
        stf_steps: [{ stf_version_id: kpis, input_mappings: [variable('$sources.sales-data.records', 'records'), constant('product', 'group_by')] }],
        effect_steps: [{ effect_version_id: plain.id, pin_version: true, input_mappings: [variable('$steps[0]', 'message')] }],
      })
    ).id;
    slack.requests.length = 0;
    const r = await run(id);
    expect(r.status).toBe(200);
    expect(JSON.parse(slack.requests[0]?.body ?? '')).toEqual({ text: summary, username: 'sales-bot', blocks: [{ type: 'divider' }] });
    expect(r.record.steps.filter((s: any) => s.deprecations)).toEqual([]);
  });
});

describe('Const values, Library and Table sources', () => {
  it('an object-valued Const reaches the STF as it is, and the workflow answers it back unchanged', async () => {
    const echo = await stf('return $input;');
    const body = await created('/api/v1/workflows', {
      name: 'consts',
      stf_steps: [
        {
          stf_version_id: echo,
          input_mappings: [constant({ mode: 'strict', levels: [1, 2] }, 'options'), constant(10, 'limit'), constant(true, 'dry_run'), constant(null, 'cursor')],
        },
      ],
    });
    expect(body.stf_steps[0].input_mappings[0]).toEqual(constant({ mode: 'strict', levels: [1, 2] }, 'options'));
    const r = await run(body.id);
    expect(r.body).toEqual({ options: { mode: 'strict', levels: [1, 2] }, limit: 10, dry_run: true, cursor: null });
  });

  it('Library is the bundled library { code, types, version }; Table is rows; Library naming a table is rows with a note', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE targets (product text, amount int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['targets']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO targets (product, amount) VALUES ('desk', 1000)");
    const libs = await call('GET', '/api/v1/stf-libraries');
    const pdf = libs.body.find((l: any) => l.name === 'pdf-lib');
    const look = await stf(`
const lib = $sources['pdf-lib'];
return { version: lib.version, code: typeof lib.code, declares: lib.types.includes('declare module'), keys: Object.keys(lib).sort(),
         rows: $sources.targets, old: $sources['old-targets'] };`);
    const id = (
      await created('/api/v1/workflows', {
        name: 'sources',
        input_steps: [
          { name: 'pdf-lib', source: { type: 'Library', name: '@d6e-ai/pdf-lib' } },
          { name: 'targets', source: { type: 'Table', name: 'targets' } },
          { name: 'old-targets', source: { type: 'Library', name: 'targets' } },
        ],
        stf_steps: [{ stf_version_id: look, input_mappings: [] }],
      })
    ).id;
    const r = await run(id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const rows = [expect.objectContaining({ product: 'desk', amount: 1000 })];
    expect(r.body).toEqual({ version: pdf.version, code: 'string', declares: true, keys: ['code', 'types', 'version'], rows, old: rows });
    expect(r.record.steps[2].deprecations).toEqual([
      { at: 'input_steps[2].source', found: '{"type":"Library","name":"targets"}', use: '{"type":"Table","name":"targets"}' },
    ]);
    expect(r.record.steps[0]).not.toHaveProperty('deprecations');
  });

  it('a Library name that is also a table of the workspace stays the table it read before (noted)', async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE xlsx (sheet text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['xlsx']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO xlsx (sheet) VALUES ('q3')");
    const look = await stf('return { old: $sources.old, lib: typeof $sources.lib.code };');
    const id = (
      await created('/api/v1/workflows', {
        name: 'ambiguous',
        input_steps: [
          { name: 'old', source: { type: 'Library', name: 'xlsx' } },
          { name: 'lib', source: { type: 'Library', name: '@d6e-ai/xlsx' } },
        ],
        stf_steps: [{ stf_version_id: look, input_mappings: [] }],
      })
    ).id;
    const r = await run(id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ old: [expect.objectContaining({ sheet: 'q3' })], lib: 'string' });
    expect(r.record.steps[0].deprecations).toEqual([
      { at: 'input_steps[0].source', found: '{"type":"Library","name":"xlsx"}', use: '{"type":"Table","name":"xlsx"}' },
    ]);
  });

  it('garbage is still refused when saved: unknown libraries, roots and sources', async () => {
    const echo = await stf('return 1;');
    const r = await call('POST', '/api/v1/workflows', {
      name: 'bad',
      input_steps: [{ name: 'lib', source: { type: 'Library', name: '@d6e-ai/left-pad' } }],
      stf_steps: [{ stf_version_id: echo, input_mappings: [variable('secrets.key', 'a'), variable('sources.nope', 'b'), variable('steps.0.output', 'c')] }],
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('VALIDATION_ERROR');
    expect(r.body.details).toContain('input_steps[0].source.name: "@d6e-ai/left-pad" is not a bundled library');
    expect(r.body.details).toContain('stf_steps[0].input_mappings[0]: unknown variable root');
    expect(r.body.details).toContain('stf_steps[0].input_mappings[1]: no input step is named "nope"');
    expect(r.body.details).toContain('stf_steps[0].input_mappings[2]: $steps[0] is not an earlier STF step');
    const shape = await call('POST', '/api/v1/workflows', { name: 'bad', input_steps: [{ name: '-x', source: { type: 'Table', name: 'Bad-Name' } }] });
    expect(shape.status).toBe(400);
  });
});

describe('effects in the object form', () => {
  it('are judged like arrays: bad header names, GET with a body, non-objects', async () => {
    const base = { name: 'e', version: '1', url: `${slack.url}/x`, method: 'POST', header_mappings: {}, body_mappings: {} };
    const ok = await call('POST', '/api/v1/effects', base);
    expect(ok.status).toBe(201);
    expect(ok.body.version).toMatchObject({ header_mappings: [], body_mappings: [], query_mappings: [] });
    const withQuery = await call('POST', '/api/v1/effects', { ...base, query_mappings: { channel: '$.channel', limit: 5 } });
    expect(withQuery.body.version.query_mappings).toEqual([variable('$.channel', 'channel'), constant(5, 'limit')]);
    for (const [over, problem] of [
      [{ header_mappings: { 'Bad Header': 'x' } }, 'header_mappings[0].target'],
      [{ method: 'GET', body_mappings: { text: '$.message' } }, 'carries no body'],
      [{ body_mappings: 'text=$.message' }, 'body_mappings'],
      [{ body_mappings: null }, 'body_mappings'],
      [{ body_mappings: { text: '$.a..b' } }, 'not a valid path'],
    ] as const) {
      const r = await call('POST', '/api/v1/effects', { ...base, ...over });
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.body.details, JSON.stringify(over)).toContain(problem);
    }
  });
});
