import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { metricsApp } from '../src/http/metrics.js';
import { Harness } from './support.js';

/** Prometheus metrics at /metrics (docs/metrics.md): guarded by METRICS_TOKEN, no tenant ids in labels. */
const TOKEN = 'metrics-token-0123456789abcdef';
const b64 = (s: string) => Buffer.from(s).toString('base64');

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string; name: string };

beforeAll(async () => {
  h = await Harness.create({ METRICS_TOKEN: TOKEN });
  owner = await h.user('metrics');
  ws = await h.workspace(owner.token, 'Metrics');
});
afterAll(() => h?.close());

/** A scrape with the metrics token, another bearer token, or (null) no Authorization header. */
const scrape = async (token: string | null = TOKEN) => {
  const res = await h.app.request('/metrics', { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};

describe('GET /metrics', () => {
  it('needs the metrics token: 401 without it or with another credential', async () => {
    expect((await scrape(null)).status).toBe(401);
    expect((await scrape('metrics-token-0123456789abcdeX')).status).toBe(401);
    // A user's session token is not the metrics token.
    expect((await scrape(owner.token)).status).toBe(401);
    const ok = await scrape();
    expect(ok.status).toBe(200);
    expect(ok.type).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('is 404 when METRICS_TOKEN is not set', async () => {
    const off = createApp({ ...h.services, config: { ...h.services.config, METRICS_TOKEN: undefined } });
    const res = await off.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(404);
  });

  it('counts requests by declared operation and status, SQL by kind and rejections by code', async () => {
    await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, { token: owner.token, body: { sql: 'CREATE TABLE notes (id int primary key, body text)' } });
    const ok = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, { token: owner.token, body: { sql: 'SELECT 1 AS one' } });
    expect(ok.status).toBe(200);
    const bad = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, { token: owner.token, body: { sql: 'SELEC 1' } });
    expect(bad.status).toBe(400);
    const code = bad.body.code as string;
    const { text } = await scrape();
    expect(text).toMatch(/^wds_http_requests_total\{operation="execute_sql",status="200"\} \d+$/m);
    expect(text).toMatch(/^wds_http_requests_total\{operation="execute_sql",status="400"\} \d+$/m);
    expect(text).toMatch(/^wds_http_request_duration_seconds_count\{operation="execute_sql"\} \d+$/m);
    expect(text).toMatch(/^wds_sql_statement_duration_seconds_count\{kind="read"\} [1-9]\d*$/m);
    expect(text).toMatch(/^wds_sql_statement_duration_seconds_count\{kind="ddl"\} [1-9]\d*$/m);
    expect(text).toMatch(new RegExp(`^wds_sql_rejections_total\\{code="${code}"\\} [1-9]\\d*$`, 'm'));
    // Scrapes themselves are not counted as requests.
    expect(text).not.toMatch(/operation="metrics"/);
  });

  it('counts STF runs by runtime and outcome', async () => {
    const run = (code: string) =>
      h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { runtime: 'js', code: b64(code), input: { n: 1 } } });
    expect((await run('return $input.n + 1')).body).toMatchObject({ success: true });
    expect((await run('throw new Error("boom")')).body).toMatchObject({ success: false, error: { kind: 'runtime' } });
    const { text } = await scrape();
    expect(text).toMatch(/^wds_stf_runs_total\{runtime="javascript",outcome="success"\} [1-9]\d*$/m);
    expect(text).toMatch(/^wds_stf_runs_total\{runtime="javascript",outcome="runtime"\} [1-9]\d*$/m);
    expect(text).toMatch(/^wds_stf_run_duration_seconds_count\{runtime="javascript",outcome="success"\} [1-9]\d*$/m);
    expect(text).toMatch(/^wds_http_requests_total\{operation="instant_run_stf",status="200"\} \d+$/m);
  });

  it('shows pool gauges, queue gauges and process metrics', async () => {
    const { text } = await scrape();
    expect(text).toMatch(/^wds_db_pool_connections\{pool="service",state="open"\} \d+$/m);
    expect(text).toMatch(/^wds_db_pool_connections\{pool="service",state="idle"\} \d+$/m);
    expect(text).toMatch(/^wds_db_pool_waiting_clients\{pool="service"\} \d+$/m);
    expect(text).toMatch(/^wds_db_pool_connections\{pool="workspace_sql",state="open"\} \d+$/m);
    expect(text).toContain('# TYPE wds_job_queue_depth gauge');
    expect(text).toContain('# TYPE wds_job_queue_oldest_age_seconds gauge');
    expect(text).toContain('process_resident_memory_bytes');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('names unknown paths `unmatched`, and no workspace or user id appears anywhere', async () => {
    await h.call('GET', `/api/v1/nowhere/${ws.id}`, { token: owner.token });
    await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token });
    const { text } = await scrape();
    expect(text).toMatch(/^wds_http_requests_total\{operation="unmatched",status="404"\} \d+$/m);
    expect(text).toMatch(/^wds_http_requests_total\{operation="get_workspace",status="200"\} \d+$/m);
    for (const id of [ws.id, owner.id, owner.email]) expect(text).not.toContain(id);
    expect(text).not.toContain('/api/v1');
    expect(text).not.toContain(TOKEN);
  });

  it('METRICS_PORT: the listener app serves /metrics without a token, nothing else', async () => {
    const app = metricsApp(h.services.metrics);
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('wds_http_requests_total');
    expect((await app.request('/api/v1/workspaces')).status).toBe(404);
  });
});
