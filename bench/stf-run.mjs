// The cost of running an STF: each runtime's start (cold) and per-run (warm) time against running the same
// function directly in Node, then instant-run over HTTP (latency and throughput) against a bare Hono route that
// runs the function in Node. Prints figures and ratios; never an assertion.
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createDockerRuntime, createJavascriptRuntime, createWasmRuntime, DEFAULT_LIMITS } from '@wds/stf-runtime';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import autocannon from 'autocannon';
import wabtInit from 'wabt';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const BODY = 'const items = $input.items; let total = 0; for (const x of items) total += x.price * x.qty; return { total, count: items.length };';
const INPUT = { items: Array.from({ length: 20 }, (_, i) => ({ price: i + 0.5, qty: (i % 3) + 1 })) };
const limits = { ...DEFAULT_LIMITS, timeoutMs: 30_000 };
const request = (code) => ({ code, input: INPUT, sources: {}, caller: null, secrets: {}, limits });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(x < 1 ? 3 : 1)} ms`;
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

// --- Runtimes, in-process -------------------------------------------------------------------------------------
const AsyncFunction = (async () => {}).constructor;
const nodeCold = await timed(async () => new AsyncFunction('$input', BODY)(INPUT));
const fn = new AsyncFunction('$input', BODY);
const nodeWarm = median(await repeat(2000, () => fn(INPUT)));

const js = createJavascriptRuntime({ workers: 1 });
const jsCold = await timed(() => js.run(request(BODY)));
const jsWarm = median(await repeat(300, () => js.run(request(BODY))));
// A run that finds its worker's next engine made (worker.ts makes it between runs): what a request pays when runs
// do not come back to back on one worker.
const jsMadeAhead = [];
for (let i = 0; i < 300; i++) {
  while (js.stats().warm < 1) await new Promise((r) => setTimeout(r, 1));
  jsMadeAhead.push(await timed(() => js.run(request(BODY))));
}
await js.close();

const wabt = await wabtInit();
const wat = readFileSync(new URL('../packages/stf-runtime/test/fixtures/wasm/echo.wat', import.meta.url), 'utf8');
const parsed = wabt.parseWat('echo.wat', wat);
const wasmCode = new Uint8Array(parsed.toBinary({}).buffer);
parsed.destroy();
const wasm = createWasmRuntime();
const wasmCold = await timed(() => wasm.run(request(wasmCode)));
const wasmWarm = median(await repeat(30, () => wasm.run(request(wasmCode))));
await wasm.close();

let docker = 'skipped: no container engine (DOCKER_HOST unset and scripts/container-engine.sh status failed)';
let dockerHost = process.env.DOCKER_HOST;
if (!dockerHost) {
  try {
    dockerHost = /DOCKER_HOST=(\S+)/.exec(execFileSync('bash', [new URL('../scripts/container-engine.sh', import.meta.url).pathname, 'status']).toString())?.[1];
  } catch {
    // no engine running
  }
}
if (dockerHost) {
  const rt = createDockerRuntime({ dockerHost });
  const code = Buffer.from(JSON.stringify({ image: 'localhost/wds-busybox:2', command: ['sh', '-c', 'cat >/dev/null; echo \'{"output":1}\''] }));
  const cold = await timed(() => rt.run(request(code)));
  const warm = median(await repeat(10, () => rt.run(request(code))));
  await rt.close();
  docker = `cold ${ms(cold)}, warm median ${ms(warm)} (busybox sh; create + attach + start + wait + remove)`;
}

console.log('STF runtimes, in-process (a 20-item total in javascript; an echo plugin in wasm)\n');
console.log(`node, direct          cold ${ms(nodeCold)}, warm median ${ms(nodeWarm)}`);
console.log(`javascript (QuickJS)  cold ${ms(jsCold)} (worker + module start), warm median ${ms(jsWarm)}  → adds ${ms(jsWarm - nodeWarm)} per run`);
console.log(`                      back to back on one worker; with the next engine made ahead: median ${ms(median(jsMadeAhead))}`);
console.log(`wasm (Extism)         cold ${ms(wasmCold)}, warm median ${ms(wasmWarm)}`);
console.log(`docker                ${docker}`);

// --- instant-run over HTTP ------------------------------------------------------------------------------------
const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench' });
const child = fork(new URL('./stf-servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url, STF_BODY: BODY } });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`servers exited with ${code}`)));
});
const ours = {
  url: `${setup.apiUrl}/api/v1/stfs/instant-run`,
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.token}`, 'x-workspace-id': setup.workspaceId },
  body: JSON.stringify({ stf_id: setup.stfId, input: INPUT }),
};
const bare = { url: `${setup.bareUrl}/run`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: INPUT }) };

const probe = await (await fetch(ours.url, ours)).json();
if (!probe.success) throw new Error(`probe failed: ${JSON.stringify(probe)}`);
const expected = await fn(INPUT);
if (JSON.stringify(probe.output) !== JSON.stringify(expected)) throw new Error(`wrong output: ${JSON.stringify(probe.output)}`);

const call = async (opts) => {
  const r = await fetch(opts.url, opts);
  await r.arrayBuffer();
};
/**
 * Sequential medians of two routes, warmed up, then measured in alternating blocks: on a shared machine the load of
 * others changes by the second, and alternating puts both routes under the same load.
 */
async function sequentialPair(a, b, blocks = 10, perBlock = 100) {
  for (let i = 0; i < 100; i++) {
    await call(a);
    await call(b);
  }
  const la = [];
  const lb = [];
  for (let k = 0; k < blocks; k++) {
    la.push(...(await repeat(perBlock, () => call(a))));
    lb.push(...(await repeat(perBlock, () => call(b))));
  }
  return [median(la), median(lb)];
}
async function load(opts, connections) {
  const r = await autocannon({ ...opts, connections, duration: SECONDS, pipelining: 1 });
  if (r.non2xx || r.errors) throw new Error(`${opts.url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const [oursSeq, bareSeq] = await sequentialPair(ours, bare);
console.log(`\ninstant-run over HTTP, PostgreSQL ${server.kind}, ${SECONDS} s per load run\n`);
console.log(`sequential median: ours ${ms(oursSeq)}, bare Node route ${ms(bareSeq)} → ours adds ${ms(oursSeq - bareSeq)}`);
console.log('clients  bare req/s (p50/p99 ms)  ours req/s (p50/p99 ms)  ours/bare');
for (const c of [1, 8]) {
  const b = await load(bare, c);
  const o = await load(ours, c);
  console.log(
    String(c).padStart(7),
    `${b.rps.toFixed(0)} (${b.p50}/${b.p99})`.padStart(24),
    `${o.rps.toFixed(0)} (${o.p50}/${o.p99})`.padStart(24),
    `${(o.rps / b.rps).toFixed(2)}x`.padStart(10),
  );
}
child.send('stop');
await new Promise((ok) => child.once('exit', ok));
await server.stop();
