// Noisy neighbour: a victim tenant's latency quiet and while another user abuses the service, one abuse at a
// time, spread over BENCH_WORKSPACES (default 10) workspaces of that one user (client i uses workspace i mod N).
// The victim runs a policy-free SELECT over /sql and an instant STF run, one after the other, from 127.0.0.1;
// the abuser sends from 127.0.0.2 (so per-address limits hit the abuser, not the victim). Prints the victim's
// p50/p99 per phase and the ratio to the quiet phase (the goal is within 2x). Never an assertion.
// BENCH_ONLY=<regex> runs only the abuses whose name matches.
import { fork } from 'node:child_process';
import http from 'node:http';
import { createDatabase, startTestPostgres } from '@wds/testkit';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench' });
const child = fork(new URL('./noisy-servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url } });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`servers exited with ${code}`)));
});
const api = new URL(setup.apiUrl);

const agents = {
  victim: new http.Agent({ keepAlive: true, localAddress: '127.0.0.1' }),
  abuser: new http.Agent({ keepAlive: true, localAddress: '127.0.0.2', maxSockets: 256 }),
};
function request(who, method, path, body, headers = {}) {
  return new Promise((ok, fail) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: api.hostname,
        port: api.port,
        method,
        path,
        agent: agents[who],
        headers: { ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => ok(res.statusCode));
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(data);
  });
}

const { victim, abusers } = setup;
const N = abusers.length;
const asVictim = { authorization: `Bearer ${victim.token}`, 'x-workspace-id': victim.workspaceId };
const asAbuser = (a) => ({ authorization: `Bearer ${a.token}`, 'x-workspace-id': a.workspaceId });
const sqlPath = (ws) => `/api/v1/workspaces/${ws}/sql`;

const probes = {
  sql: () => request('victim', 'POST', sqlPath(victim.workspaceId), { sql: 'SELECT count(*) FROM items WHERE total < 500' }, asVictim),
  stf: () => request('victim', 'POST', '/api/v1/stfs/instant-run', { stf_id: victim.stfs.quick, input: { n: 1 } }, asVictim),
};

/** An abuse: `clients` loops sending one kind of request until stopped; client i abuses workspace a = i mod N. */
const abuses = {
  'runaway SQL (32 clients, long statements)': {
    clients: Math.max(32, 2 * N),
    send: (a) => request('abuser', 'POST', sqlPath(a.workspaceId), { sql: 'SELECT count(*) FROM generate_series(1, 100000000)' }, asAbuser(a)),
  },
  'infinite-loop STFs (8)': { clients: Math.max(8, N), send: (a) => request('abuser', 'POST', '/api/v1/stfs/instant-run', { stf_id: a.stfs.loop, input: {} }, asAbuser(a)) },
  'memory-bomb STFs (4)': { clients: Math.max(4, N), send: (a) => request('abuser', 'POST', '/api/v1/stfs/instant-run', { stf_id: a.stfs.bomb, input: {} }, asAbuser(a)) },
  'bad-token flood (64 clients)': { clients: 64, send: () => request('abuser', 'GET', '/api/v1/workspaces', undefined, { authorization: 'Bearer wds_not_a_token' }) },
  'valid-token flood (64 clients)': { clients: 64, send: (a) => request('abuser', 'GET', `/api/v1/workspaces/${a.workspaceId}`, undefined, asAbuser(a)) },
};
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];

async function measure() {
  const lat = { sql: [], stf: [] };
  const failures = { sql: 0, stf: 0 };
  const end = Date.now() + SECONDS * 1000;
  while (Date.now() < end) {
    for (const kind of ['sql', 'stf']) {
      const s = process.hrtime.bigint();
      const status = await probes[kind]();
      lat[kind].push(Number(process.hrtime.bigint() - s) / 1e6);
      if (status !== 200) failures[kind]++;
    }
  }
  for (const k of Object.keys(lat)) lat[k].sort((a, b) => a - b);
  return { lat, failures };
}

async function underAbuse(abuse) {
  let stop = false;
  const statuses = new Map();
  const loops = Array.from({ length: abuse.clients }, async (_, i) => {
    while (!stop) {
      const status = await abuse.send(abusers[i % N]).catch(() => 'error');
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  await new Promise((r) => setTimeout(r, 1000));
  const result = await measure();
  stop = true;
  await Promise.all(loops);
  return { ...result, statuses };
}

for (let i = 0; i < 20; i++) await Promise.all([probes.sql(), probes.stf()]);
const quiet = await measure();
const fmt = (xs) => `${pct(xs, 0.5).toFixed(1)}/${pct(xs, 0.99).toFixed(1)}`;
const ratio = (xs, base) => `${(pct(xs, 0.5) / pct(base, 0.5)).toFixed(2)}x/${(pct(xs, 0.99) / pct(base, 0.99)).toFixed(2)}x`;

const budgets = process.env.BENCH_BUDGETS === '1' ? 'request-rate budgets on (12000/min per caller, 24000/min per workspace)' : 'default settings';
console.log(
  `Victim latency (ms, p50/p99) quiet and under each abuse spread over ${N} workspace(s) of one user, ${SECONDS} s per phase, ${budgets}, PostgreSQL ${server.kind}\n`,
);
console.log(`${'phase'.padEnd(38)} ${'SQL p50/p99'.padStart(14)} ${'vs quiet'.padStart(12)} ${'STF p50/p99'.padStart(14)} ${'vs quiet'.padStart(12)}  victim non-200  abuser statuses`);
console.log(`${'quiet'.padEnd(38)} ${fmt(quiet.lat.sql).padStart(14)} ${''.padStart(12)} ${fmt(quiet.lat.stf).padStart(14)} ${''.padStart(12)}  ${quiet.failures.sql + quiet.failures.stf}`);
for (const [name, abuse] of Object.entries(abuses)) {
  if (only && !only.test(name)) continue;
  const r = await underAbuse(abuse);
  const statuses = [...r.statuses].map(([s, n]) => `${s}:${n}`).join(' ');
  console.log(
    `${name.padEnd(38)} ${fmt(r.lat.sql).padStart(14)} ${ratio(r.lat.sql, quiet.lat.sql).padStart(12)} ${fmt(r.lat.stf).padStart(14)} ${ratio(r.lat.stf, quiet.lat.stf).padStart(12)}  ${String(r.failures.sql + r.failures.stf).padStart(14)}  ${statuses}`,
  );
  // Let runs in flight end before the next phase.
  await new Promise((r) => setTimeout(r, 2000));
}

child.send('stop');
await new Promise((ok) => child.once('exit', ok));
await server.stop();
