// HTTP throughput and latency of a policy-filtered single-row SELECT by id, at 1, 8 and 32 concurrent clients,
// side by side with (a) raw pg running the same query in-process and (b) a bare Hono + pg route. Prints ratios.
import { fork } from 'node:child_process';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import autocannon from 'autocannon';
import pg from 'pg';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = [1, 8, 32];

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench' });
const child = fork(new URL('./servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url } });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`servers exited with ${code}`)));
});

async function rawPg(connections) {
  const pool = new pg.Pool({ connectionString: url, max: connections });
  const text = `SELECT * FROM ${setup.physical} WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL`;
  const latencies = [];
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        const s = process.hrtime.bigint();
        await pool.query(text, [setup.rowId, setup.userId]);
        latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
    }),
  );
  await pool.end();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / SECONDS, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

async function http(connections, opts) {
  const r = await autocannon({ ...opts, connections, duration: SECONDS, pipelining: 1 });
  if (r.non2xx || r.errors) throw new Error(`${opts.url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

// Sanity: our endpoint returns exactly the row.
const probe = await fetch(`${setup.apiUrl}/api/v1/workspaces/${setup.workspaceId}/sql`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.token}` },
  body: JSON.stringify({ sql: `SELECT * FROM items WHERE id = '${setup.rowId}'` }),
});
const probeBody = await probe.json();
if (probeBody.rows?.length !== 1) throw new Error(`probe failed: ${JSON.stringify(probeBody)}`);

console.log(`Policy-filtered SELECT by id, ${SECONDS} s per run, PostgreSQL ${server.kind}\n`);
console.log('clients  raw pg req/s  bare Hono req/s (p50/p99 ms)  ours req/s (p50/p99 ms)  ours/bare  ours/raw');
for (const c of CONNECTIONS) {
  const raw = await rawPg(c);
  const bare = await http(c, { url: `${setup.bareUrl}/items/${setup.rowId}` });
  const ours = await http(c, {
    url: `${setup.apiUrl}/api/v1/workspaces/${setup.workspaceId}/sql`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.token}` },
    body: JSON.stringify({ sql: `SELECT * FROM items WHERE id = '${setup.rowId}'` }),
  });
  console.log(
    String(c).padStart(7),
    raw.rps.toFixed(0).padStart(13),
    `${bare.rps.toFixed(0)} (${bare.p50}/${bare.p99})`.padStart(29),
    `${ours.rps.toFixed(0)} (${ours.p50}/${ours.p99})`.padStart(24),
    `${(ours.rps / bare.rps).toFixed(2)}x`.padStart(10),
    `${(ours.rps / raw.rps).toFixed(2)}x`.padStart(9),
  );
}
child.send('stop');
await new Promise((ok) => child.once('exit', ok));
await server.stop();
