// Lighthouse's performance score of the console (desktop preset, Debian's chromium, simulated throttling) on the
// sign-in, SQL editor and dashboard pages, against a baseline measured in the same run: a static page of the same
// text with no script, served from the same machine by a bare node:http server. Each page is audited RUNS times
// (median). Prints the scores, the paint and blocking-time metrics and each page's ratio to the baseline.
import { createServer } from 'node:http';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { openLighthouse } from '@wds/testkit/lighthouse';
import { startApiWithUser } from './bootstrap.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const pgServer = await startTestPostgres();
const { running, call, user, token, auth, ws } = await startApiWithUser({ DATABASE_URL: await createDatabase(pgServer.url, { prefix: 'bench' }) });
const sql = (text) => call('POST', `/api/v1/workspaces/${ws.id}/sql`, { sql: text }, auth);
await sql('CREATE TABLE sales (region text, amount numeric)');
const inWs = { ...auth, 'x-workspace-id': ws.id };
const group = await call('POST', '/api/v1/policy-groups', { name: 'all', user_ids: [user.id] }, inWs);
for (const operation of ['select', 'insert']) {
  await call('POST', '/api/v1/policies', { name: operation, policy_group_id: group.id, table_name: 'sales', operation, mode: 'allow' }, inWs);
}
await sql("INSERT INTO sales (region, amount) SELECT 'region ' || g, g * 3 FROM generate_series(1, 12) g");
for (const chart_type of ['bar', 'line', 'pie', 'number']) {
  await call('POST', '/api/v1/pinned-charts', { title: `Sales (${chart_type})`, chart_type, sql_query: 'SELECT region, amount FROM sales ORDER BY region', x_axis_column: 'region', y_axis_columns: ['amount'] }, inWs);
}

const baseline = createServer((_, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end('<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Baseline</title></head><body><main><h1>Sign in</h1><p>Open the login link you were given, or paste an API key.</p></main></body></html>');
});
await new Promise((ok) => baseline.listen(0, '127.0.0.1', ok));
const baseUrl = `http://127.0.0.1:${baseline.address().port}`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function measure(base, path, withToken) {
  const lh = await openLighthouse(base);
  try {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await lh.audit(path, ['performance'], withToken ? token : undefined));
    const metric = (id) => median(runs.map((r) => r.metrics[id] ?? 0));
    return {
      score: median(runs.map((r) => r.scores.performance ?? 0)),
      fcp: metric('first-contentful-paint'),
      lcp: metric('largest-contentful-paint'),
      tbt: metric('total-blocking-time'),
      cls: metric('cumulative-layout-shift'),
    };
  } finally {
    await lh.close();
  }
}

const pages = [
  ['baseline (static page)', baseUrl, '/', false],
  ['sign-in', running.url, '/console/login', false],
  ['SQL editor', running.url, `/console/w/${ws.id}/sql`, true],
  ['dashboard (4 charts)', running.url, `/console/w/${ws.id}/dashboard`, true],
];
const results = [];
for (const [name, base, path, withToken] of pages) results.push([name, await measure(base, path, withToken)]);
const [, b] = results[0];
console.log(`Lighthouse performance, desktop preset, median of ${RUNS} runs per page`);
console.log('| page | score | FCP ms | LCP ms | TBT ms | CLS | LCP / baseline |');
console.log('|---|---|---|---|---|---|---|');
for (const [name, r] of results) {
  console.log(`| ${name} | ${r.score} | ${Math.round(r.fcp)} | ${Math.round(r.lcp)} | ${Math.round(r.tbt)} | ${r.cls.toFixed(3)} | ${(r.lcp / b.lcp).toFixed(2)} |`);
}
baseline.close();
await running.close();
await pgServer.stop?.();
process.exit(0);
