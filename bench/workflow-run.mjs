// Execute latency (p50/p99) and throughput at 8 clients of a 3-step workflow (STF → STF → local effect), side by
// side with the sum of its parts run directly in this process (the javascript runtime twice, the effect runner
// once) plus one bare HTTP round trip. Prints figures and the engine's overhead per step; never an assertion.
import { fork } from 'node:child_process';
import { OutboundGuard, runEffect } from '@wds/effect-runner';
import { createJavascriptRuntime, DEFAULT_LIMITS } from '@wds/stf-runtime';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import autocannon from 'autocannon';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const STF_A = 'let total = 0; for (const x of $input.items) total += x.price * x.qty; return { total, count: $input.items.length };';
const STF_B = 'return { total: Math.round($input.total * 1.2 * 100) / 100, count: $input.count };';
const INPUT = { items: Array.from({ length: 20 }, (_, i) => ({ price: i + 0.5, qty: (i % 3) + 1 })) };

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const f = (x) => `${x.toFixed(2)} ms`;
async function timed(fn) {
  const s = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - s) / 1e6;
}
async function repeat(n, fn) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await timed(fn));
  return out;
}

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench' });
const child = fork(new URL('./workflow-servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url, STF_A, STF_B } });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`servers exited with ${code}`)));
});

const execute = {
  url: `${setup.apiUrl}/api/v1/workflows/${setup.workflowId}/execute`,
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.token}`, 'x-workspace-id': setup.workspaceId },
  body: JSON.stringify(INPUT),
};
const probe = await fetch(execute.url, execute);
const probeBody = await probe.json();
if (probe.status !== 200) throw new Error(`probe failed: ${probe.status} ${JSON.stringify(probeBody)}`);

// The parts, run directly: the same two STFs in a javascript runtime with as many workers as the server's
// (STF_JS_WORKERS=2, so the second STF finds a worker whose engine is made, as it does in the server), the same
// effect call, one bare HTTP round trip.
const js = createJavascriptRuntime({ workers: 2 });
const guard = new OutboundGuard({ allowlist: ['127.0.0.1'] });
const limits = { ...DEFAULT_LIMITS, timeoutMs: 10_000 };
const req = (code, input) => ({ code, input, sources: {}, caller: null, secrets: {}, limits });
const spec = { url: setup.hookUrl, method: 'POST', header_mappings: [], body_mappings: [{ source: { type: 'Variable', value: '$.total' }, target: 'total' }] };
const parts = async () => {
  const a = await js.run(req(STF_A, INPUT));
  const b = await js.run(req(STF_B, a.output));
  await runEffect(spec, b.output, { guard });
};
const bare = async () => {
  const r = await fetch(`${setup.bareUrl}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: execute.body });
  await r.arrayBuffer();
};
const ours = async () => {
  const r = await fetch(execute.url, execute);
  await r.arrayBuffer();
};
for (let i = 0; i < 30; i++) {
  await parts();
  await ours();
  await bare();
}
// Alternating blocks: on a shared machine the load of others changes by the second; this puts all three under it.
const partsLat = [];
const bareLat = [];
const oursLat = [];
for (let k = 0; k < 6; k++) {
  partsLat.push(...(await repeat(50, parts)));
  bareLat.push(...(await repeat(50, bare)));
  oursLat.push(...(await repeat(50, ours)));
}
await js.close();

const load = async (opts, connections) => {
  const r = await autocannon({ ...opts, connections, duration: SECONDS, pipelining: 1 });
  if (r.non2xx || r.errors) throw new Error(`${opts.url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r;
};
const at8 = await load(execute, 8);

const p50 = { parts: pct(partsLat, 0.5), bare: pct(bareLat, 0.5), ours: pct(oursLat, 0.5) };
console.log(`3-step workflow (STF → STF → local effect), PostgreSQL ${server.kind}\n`);
console.log('                                   p50        p99');
console.log(`parts run directly            ${f(p50.parts).padStart(10)} ${f(pct(partsLat, 0.99)).padStart(10)}`);
console.log(`bare HTTP round trip          ${f(p50.bare).padStart(10)} ${f(pct(bareLat, 0.99)).padStart(10)}`);
console.log(`execute over HTTP             ${f(p50.ours).padStart(10)} ${f(pct(oursLat, 0.99)).padStart(10)}`);
const overhead = p50.ours - p50.parts - p50.bare;
console.log(`\nengine and service overhead: ${f(overhead)} per execution, ${f(overhead / 3)} per step (aim: under 2 ms per step)`);
console.log(`throughput at 8 clients: ${at8.requests.average.toFixed(0)} req/s (p50 ${at8.latency.p50} ms, p99 ${at8.latency.p99} ms)`);
child.send('stop');
await new Promise((ok) => child.once('exit', ok));
await server.stop();
