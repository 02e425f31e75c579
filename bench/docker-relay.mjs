// What the relay container (issue 17) adds to a docker STF run. Both sides run the same node program in the same
// image, against the same engine, alternating in blocks so both see the same machine load:
//
//   baseline  the run as it was before the relay: one container (NetworkMode none), the SQL callback over the Unix
//             socket only — create + attach + start + stdin + wait + remove, done here with the runtime's own
//             engine client and API socket;
//   relay     DockerRuntime.run: the relay container (created, started, ready line read), the STF container created
//             meanwhile and started in the relay's namespace, both removed after.
//
// Each without SQL and with one SELECT (baseline: POST /sql over the socket; relay: the origin form over TCP at
// api_url). Prints medians, p90 and the ratios; never an assertion.
//
//   pnpm --filter @wds/stf-runtime build && node bench/docker-relay.mjs      (BENCH_RUNS=30 by default)
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerRuntime, DEFAULT_LIMITS } from '@wds/stf-runtime';
import { openApiSocket } from '../packages/stf-runtime/dist/docker/api-socket.js';
import { EngineClient, parseDockerHost, StreamDemuxer } from '../packages/stf-runtime/dist/docker/engine.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const BLOCK = 5;

let dockerHost = process.env.DOCKER_HOST;
if (!dockerHost) {
  try {
    dockerHost = /DOCKER_HOST=(\S+)/.exec(execFileSync('bash', [new URL('../scripts/container-engine.sh', import.meta.url).pathname, 'status']).toString())?.[1];
  } catch {
    // no engine
  }
}
if (!dockerHost) {
  console.log('skipped: no container engine (DOCKER_HOST unset and scripts/container-engine.sh status failed)');
  process.exit(0);
}
const image = `localhost/wds-node:${process.versions.node}-2`;

// The STF: reads its document; with SQL, one SELECT — over the socket (/sql) or over TCP (the origin form).
const program = (mode) => `
let raw = '';
process.stdin.on('data', (d) => (raw += d)).on('end', async () => {
  const doc = JSON.parse(raw);
  let rows = null;
  if (${JSON.stringify(mode)} === 'socket') {
    rows = await new Promise((ok, fail) => {
      const req = require('node:http').request({ socketPath: doc.api_socket, path: '/sql', method: 'POST',
        headers: { authorization: 'Bearer ' + doc.api_token, 'content-type': 'application/json' } }, (res) => {
        let t = ''; res.on('data', (d) => (t += d)); res.on('end', () => ok(JSON.parse(t).rows));
      });
      req.on('error', fail);
      req.end(JSON.stringify({ query: 'SELECT 1 AS n' }));
    });
  } else if (${JSON.stringify(mode)} === 'tcp') {
    // node:http as above (fetch would add loading undici, ~100 ms, to this side only).
    rows = await new Promise((ok, fail) => {
      const req = require('node:http').request(doc.api_url + '/api/v1/workspaces/' + doc.workspace_id + '/sql', { method: 'POST',
        headers: { authorization: 'Bearer ' + doc.api_token, 'x-internal-bypass': 'true', 'x-workspace-id': doc.workspace_id,
          'x-stf-id': doc.stf_id, 'content-type': 'application/json' } }, (res) => {
        let t = ''; res.on('data', (d) => (t += d)); res.on('end', () => ok(JSON.parse(t).rows));
      });
      req.on('error', fail);
      req.end(JSON.stringify({ sql: 'SELECT 1 AS n' }));
    });
  }
  process.stdout.write(JSON.stringify({ output: { rows } }) + '\\n');
});`;
const sql = async () => [{ n: 1 }];
const limits = { ...DEFAULT_LIMITS, timeoutMs: 60_000, memoryBytes: 128 * 1024 * 1024 };
const request = (mode) => ({
  code: Buffer.from(JSON.stringify({ image, command: ['node', '-e', program(mode)] })),
  input: null,
  sources: {},
  caller: null,
  workspaceId: 'ws-bench',
  stfId: 'stf-bench',
  secrets: {},
  limits,
  sql,
});

// --- baseline: one container, the socket only (the runtime before the relay) -------------------------------------
const engine = new EngineClient(parseDockerHost(dockerHost));
const base = await mkdtemp(join(tmpdir(), 'wds-relay-bench-'));
let n = 0;
async function baselineRun(mode) {
  const dir = join(base, String(n++));
  await mkdir(dir, { mode: 0o755 });
  await chmod(dir, 0o755);
  const api = await openApiSocket(join(dir, 'api.sock'), sql, { workspaceId: 'ws-bench', stfId: 'stf-bench' });
  let id;
  try {
    const created = await engine.call('POST', '/containers/create', {
      Image: image,
      Cmd: ['node', '-e', program(mode)],
      User: '65534:65534',
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      NetworkDisabled: true,
      Labels: { 'wds.bench': 'true' },
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Memory: limits.memoryBytes,
        MemorySwap: limits.memoryBytes,
        PidsLimit: 64,
        Binds: [`${dir}:/stf:ro`],
        Tmpfs: { '/tmp': 'rw,noexec,nosuid,nodev,mode=1777,size=16777216' },
      },
    });
    id = created.Id;
    const stream = await engine.attach(id);
    let out = '';
    const demux = new StreamDemuxer((s, c) => {
      if (s === 'stdout') out += c.toString();
    });
    const ended = new Promise((r) => {
      stream.on('data', (d) => demux.push(d));
      stream.on('end', r);
      stream.on('close', r);
      stream.on('error', r);
    });
    await engine.call('POST', `/containers/${id}/start`);
    stream.end(`${JSON.stringify({ workspace_id: 'ws-bench', stf_id: 'stf-bench', api_socket: '/stf/api.sock', api_token: api.token })}\n`);
    const wait = await engine.call('POST', `/containers/${id}/wait`);
    await ended;
    if (wait.StatusCode !== 0 || !out.includes('"output"')) throw new Error(`baseline run failed: ${out}`);
    return JSON.parse(out.trim().split('\n').at(-1)).output;
  } finally {
    if (id) await engine.request('DELETE', `/containers/${id}?force=1&v=1`).catch(() => undefined);
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// --- with the relay ------------------------------------------------------------------------------------------------
const rt = createDockerRuntime({ dockerHost, concurrency: 1 });
const relayRun = async (mode) => (await rt.run(request(mode))).output;

const time = async (fn) => {
  const s = process.hrtime.bigint();
  const out = await fn();
  return { ms: Number(process.hrtime.bigint() - s) / 1e6, out };
};
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
const f = (x) => `${x.toFixed(0)} ms`;

const cases = [
  { name: 'no SQL', baseline: () => baselineRun('none'), relay: () => relayRun('none') },
  { name: 'one SELECT', baseline: () => baselineRun('socket'), relay: () => relayRun('tcp') },
];
// Warm-up: images in the page cache, the engine's first-container costs paid.
for (const c of cases) {
  const a = await c.baseline();
  const b = await c.relay();
  if (c.name !== 'no SQL' && (JSON.stringify(a.rows) !== '[{"n":1}]' || JSON.stringify(b.rows) !== '[{"n":1}]')) {
    throw new Error(`wrong answers: ${JSON.stringify([a, b])}`);
  }
}
console.log(`docker STF run, ${RUNS} runs each, one at a time (${image}; node -e in both containers)\n`);
console.log('| | baseline (one container, socket) | with relay (relay + STF container, TCP) | ratio | added |');
console.log('|---|---|---|---|---|');
for (const c of cases) {
  const a = [];
  const b = [];
  for (let k = 0; k < RUNS; k += BLOCK) {
    for (let i = 0; i < BLOCK; i++) a.push((await time(c.baseline)).ms);
    for (let i = 0; i < BLOCK; i++) b.push((await time(c.relay)).ms);
  }
  const ma = quantile(a, 0.5);
  const mb = quantile(b, 0.5);
  console.log(
    `| ${c.name} | median ${f(ma)}, p90 ${f(quantile(a, 0.9))} | median ${f(mb)}, p90 ${f(quantile(b, 0.9))} | ${(mb / ma).toFixed(2)}× | +${f(mb - ma)} |`,
  );
}
await rt.close();
await rm(base, { recursive: true, force: true });
