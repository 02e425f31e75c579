// Soak: the API under a steady mixed load for SOAK_MINUTES (default 60), then idle for SOAK_IDLE_MINUTES (default
// 10), its memory sampled every SOAK_SAMPLE_SECONDS (default 30) after a full collection (the API runs with
// --expose-gc). The mix, from SOAK_CLIENTS (default 4) clients: policy-filtered reads through /sql (changing
// literals), inserts and deletes (the table stays about the same size), instant STF runs, workflow runs STF →
// effect to a local sink, and requests with a bad token. Prints every sample, the growth per minute of the
// collected heap and of RSS over the load (a least-squares line from the end of the first tenth, the warm-up), and
// the last load sample and the last idle one against the first after warm-up. Never an assertion.
// SOAK_HEAP_SNAPSHOTS=<dir>: heap snapshots of the API at the end of warm-up and at the end of load, to compare with
// `node heap-diff.mjs <first> <second>` (what grew, by constructor).
import { fork } from 'node:child_process';
import { createDatabase, startTestPostgres } from '@wds/testkit';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 60);
const IDLE_MINUTES = Number(process.env.SOAK_IDLE_MINUTES ?? 10);
const SAMPLE_MS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 30) * 1000;
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 4);

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'soak' });
const child = fork(new URL('./soak-servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url }, execArgv: ['--expose-gc'] });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`servers exited with ${code}`)));
});
const sample = () =>
  new Promise((ok) => {
    const on = (m) => {
      if (!m.sample) return;
      child.off('message', on);
      ok(m.sample);
    };
    child.on('message', on);
    child.send('sample');
  });

const as = { authorization: `Bearer ${setup.token}`, 'x-workspace-id': setup.workspaceId, 'content-type': 'application/json' };
const post = async (path, body, headers = as) => {
  const r = await fetch(setup.apiUrl + path, { method: 'POST', headers, body: JSON.stringify(body) });
  await r.arrayBuffer();
  return r.status;
};
const sqlPath = `/api/v1/workspaces/${setup.workspaceId}/sql`;
let n = 0;
const mix = [
  () => post(sqlPath, { sql: `SELECT id, title FROM items WHERE total > ${n % 1000} ORDER BY total LIMIT 20` }),
  () => post(sqlPath, { sql: `INSERT INTO items (owner_id, title, total) VALUES ('${setup.userId}', 'item ${n}', ${n % 1000})` }),
  () => post(sqlPath, { sql: `DELETE FROM items WHERE title = 'item ${n - 200}'` }),
  () => post('/api/v1/stfs/instant-run', { stf_id: setup.stfId, input: { n } }),
  () => post(`/api/v1/workflows/${setup.workflowId}/execute`, { n }),
  () => post(sqlPath, { sql: 'SELECT 1' }, { ...as, authorization: `Bearer wds_not_a_token_${n}` }),
];
const counts = new Map();
let stopping = false;
async function client() {
  while (!stopping) {
    n++;
    let status;
    try {
      status = await mix[n % mix.length]();
    } catch {
      status = 'error';
    }
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
}

const MiB = (b) => (b / 1048576).toFixed(1);
const samples = [];
const t0 = Date.now();
async function record(phase) {
  const s = await sample();
  samples.push({ phase, minute: (Date.now() - t0) / 60000, ...s });
  const x = samples.at(-1);
  console.log(`${phase.padEnd(4)} ${x.minute.toFixed(1).padStart(6)} min  rss ${MiB(x.rss).padStart(7)}  heap ${MiB(x.heapUsed).padStart(6)}  external ${MiB(x.external).padStart(6)}  requests ${[...counts.values()].reduce((a, b) => a + b, 0)}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

console.log(`Soak: ${MINUTES} min of load (${CLIENTS} clients), ${IDLE_MINUTES} min idle, PostgreSQL ${server.kind}; memory after a full collection\n`);
await record('idle');
const clients = Array.from({ length: CLIENTS }, client);
const SNAPSHOTS = process.env.SOAK_HEAP_SNAPSHOTS;
const snapshot = (name) =>
  new Promise((ok) => {
    const on = (m) => {
      if (!m.snapshotted) return;
      child.off('message', on);
      console.log(`heap snapshot: ${m.snapshotted}`);
      ok();
    };
    child.on('message', on);
    child.send({ snapshot: `${SNAPSHOTS}/${name}.heapsnapshot` });
  });
let snapshotted = false;
while (Date.now() - t0 < MINUTES * 60000) {
  await sleep(SAMPLE_MS);
  await record('load');
  if (SNAPSHOTS && !snapshotted && Date.now() - t0 >= MINUTES * 6000) {
    snapshotted = true;
    await snapshot('warm');
  }
}
if (SNAPSHOTS) await snapshot('end');
stopping = true;
await Promise.all(clients);
const loadEnd = Date.now();
while (Date.now() - loadEnd < IDLE_MINUTES * 60000) {
  await sleep(SAMPLE_MS);
  await record('idle');
}

function slope(points, key) {
  const xs = points.map((p) => p.minute);
  const ys = points.map((p) => p[key]);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const num = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0);
  const den = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}
const load = samples.filter((s) => s.phase === 'load');
const steady = load.slice(Math.floor(load.length / 10));
const first = steady[0];
const lastLoad = load.at(-1);
const lastIdle = samples.at(-1);
console.log(`\nanswers: ${[...counts].map(([k, v]) => `${k}: ${v}`).join(', ')}`);
if (steady.length >= 2) {
  console.log(`growth under load (from minute ${first.minute.toFixed(1)}): heap ${MiB(slope(steady, 'heapUsed'))} MiB/min, rss ${MiB(slope(steady, 'rss'))} MiB/min, external ${MiB(slope(steady, 'external'))} MiB/min`);
  console.log(`heap: first ${MiB(first.heapUsed)}, end of load ${MiB(lastLoad.heapUsed)} (${(lastLoad.heapUsed / first.heapUsed).toFixed(2)}x), end of idle ${MiB(lastIdle.heapUsed)} (${(lastIdle.heapUsed / first.heapUsed).toFixed(2)}x)`);
  console.log(`rss:  first ${MiB(first.rss)}, end of load ${MiB(lastLoad.rss)} (${(lastLoad.rss / first.rss).toFixed(2)}x), end of idle ${MiB(lastIdle.rss)} (${(lastIdle.rss / first.rss).toFixed(2)}x)`);
}
child.send('stop');
await new Promise((r) => child.once('exit', r));
await server.stop?.();
