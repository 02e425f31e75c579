/**
 * Issue 14, fair sharing and limits, through the service: STF runs queue per workspace (one workspace's burst does
 * not delay another's run behind all of it), a workspace's full queue answers 429, wasm plugins reach the network
 * only through the outbound guard, and workflow executions have a per-workspace cap.
 *
 * Orderings and counts are asserted, never durations: the harness's single JavaScript worker makes "who ran first"
 * well defined, and the tests wait for the runtime's own queue statistics instead of sleeping.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DEFAULT_LIMITS, type StfRuntime } from '@wds/stf-runtime';
import { WorkflowConcurrency } from '@wds/workflows';
import { afterAll, beforeAll, test } from 'vitest';
import wabtInit from 'wabt';
import { loadConfig } from '../src/config.js';
import { guardedFetch, OutboundGuard } from '@wds/effect-runner';
import { createRuntimes } from '../src/runtimes.js';
import { describe, expect, Harness, until, waitForStfQueue } from './support.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

type User = Awaited<ReturnType<Harness['user']>>;

async function saveStf(h: Harness, user: User, ws: string, code: string | Buffer, runtime = 'javascript'): Promise<string> {
  const r = await h.call('POST', '/api/v1/stfs', { token: user.token, workspace: ws, body: { name: 's', version: '1', runtime, code: b64(code) } });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.id;
}
const instantRun = (h: Harness, user: User, ws: string, stfId: string, input: unknown = null) =>
  h.call('POST', '/api/v1/stfs/instant-run', { token: user.token, workspace: ws, body: { stf_id: stfId, input } });


/**
 * An STF that notes when it started (its first statement), waits until the test opens its workspace's gate (a row in
 * table `gate`, polled through sql()), then keeps the worker 20 ms more, so that on the single worker every start
 * comes strictly after the one before.
 */
const GATED = [
  'const started = Date.now();',
  'while (sql("SELECT count(*)::int AS n FROM gate")[0].n === 0) {}',
  'const until = Date.now() + 20;',
  'while (Date.now() < until) {}',
  'return { who: $input, started };',
].join('\n');
const STAMPED = 'const started = Date.now();\nconst until = started + 20;\nwhile (Date.now() < until) {}\nreturn { who: $input, started };';

/** A user, their workspace, and an STF there; with `gated`, the workspace's gate table (closed) and the GATED STF. */
async function tenant(h: Harness, name: string, gated: boolean) {
  const user = await h.user(name);
  const ws = (await h.workspace(user.token, name)).id;
  if (gated) {
    await h.sqlOk(user.token, ws, 'CREATE TABLE gate (x int)');
    await h.allowAll(user.token, ws, [user.id], ['gate']);
  }
  const stf = await saveStf(h, user, ws, gated ? GATED : STAMPED);
  return { user, ws, stf, open: () => h.sqlOk(user.token, ws, 'INSERT INTO gate (x) VALUES (1)') };
}

describe('STF runs queue per workspace (javascript, one worker)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ STF_TIMEOUT_MS: '20000', STF_WORKSPACE_QUEUE: '3' });
  }, 120_000);
  afterAll(() => h?.close());

  test("another workspace's run starts right after the run in progress, ahead of the burst queued before it", async () => {
    const a = await tenant(h, 'a', true);
    const b = await tenant(h, 'b', false);

    // A's burst: one run holding the worker (until A's gate opens), three waiting (its queue's limit); then B asks.
    const burst = [0, 1, 2, 3].map((i) => instantRun(h, a.user, a.ws, a.stf, `a${i}`));
    await waitForStfQueue(h, (q) => q.workspaces[a.ws]?.running === 1 && q.workspaces[a.ws]?.waiting === 3);
    const single = instantRun(h, b.user, b.ws, b.stf, 'b0');
    await waitForStfQueue(h, (q) => q.workspaces[b.ws]?.waiting === 1);
    await a.open();

    const answers = await Promise.all([...burst, single]);
    for (const r of answers) expect(r.body).toMatchObject({ success: true });
    const order = answers
      .map((r) => r.body.output as { who: string; started: number })
      .sort((x, y) => x.started - y.started)
      .map((o) => o.who);
    // First-come would have put b0 last; the fair queue runs it as soon as the worker frees up.
    expect(order.indexOf('b0')).toBe(1);
  });

  test('a workspace whose queue is full gets 429 TOO_MANY_REQUESTS at once; other workspaces are not refused', async () => {
    const a = await tenant(h, 'a', true);
    const b = await tenant(h, 'b', false);

    const admitted = [0, 1, 2, 3].map((i) => instantRun(h, a.user, a.ws, a.stf, `a${i}`));
    await waitForStfQueue(h, (q) => q.workspaces[a.ws]?.running === 1 && q.workspaces[a.ws]?.waiting === 3);
    const refused = await instantRun(h, a.user, a.ws, a.stf, 'a4');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', error: expect.stringContaining('STF runs waiting') });
    // B's queue is its own: admitted (it waits its turn), not refused.
    const other = instantRun(h, b.user, b.ws, b.stf, 'b0');
    await waitForStfQueue(h, (q) => q.workspaces[b.ws]?.waiting === 1);
    await a.open();
    expect((await other).body).toMatchObject({ success: true, output: { who: 'b0' } });
    for (const r of await Promise.all(admitted)) expect(r.body).toMatchObject({ success: true });
  });
});

/** A plugin that makes one Extism HTTP request ({{REQUEST}}: its JSON, {{REQUEST_LEN}}: its length) and outputs the body. */
const HTTP_WAT = `(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (memory (export "memory") 1 1)
  (data (i32.const 0) "{{REQUEST}}")
  (func (export "run") (result i32)
    (local $req i64) (local $resp i64) (local $i i32)
    (local.set $req (call $alloc (i64.const {{REQUEST_LEN}})))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (i32.const {{REQUEST_LEN}})))
        (call $store_u8 (i64.add (local.get $req) (i64.extend_i32_u (local.get $i))) (i32.load8_u (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.set $resp (call $http_request (local.get $req) (i64.const 0)))
    (call $output_set (local.get $resp) (call $length (local.get $resp)))
    (i32.const 0)))`;

const wabt = await wabtInit();
function httpPlugin(url: string): Buffer {
  const request = JSON.stringify({ url, method: 'GET' });
  const escaped = request.replace(/"/g, '\\"');
  const m = wabt.parseWat('http.wat', HTTP_WAT.replace('{{REQUEST}}', escaped).replaceAll('{{REQUEST_LEN}}', String(Buffer.byteLength(request))));
  try {
    return Buffer.from(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
}

/** A listener on 127.0.0.2 that counts the connections it accepts: a refused call must leave it at 0. */
async function listener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"reached":true}');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('wasm plugins reach the network only through the outbound guard', () => {
  let target: Awaited<ReturnType<typeof listener>>;
  beforeAll(async () => {
    target = await listener();
  });
  afterAll(() => target.close());

  const runPlugin = (runtime: StfRuntime, code: Buffer) =>
    runtime.run({ code, input: null, sources: {}, caller: null, secrets: {}, workspaceId: 'ws', limits: { ...DEFAULT_LIMITS, timeoutMs: 10_000 } });

  test('a host in STF_WASM_ALLOWED_HOSTS that is a private address is refused by the guard, and nothing connects', async () => {
    const runtimes = createRuntimes(loadConfig({ STF_WASM_ALLOWED_HOSTS: '127.0.0.2' }), { jsWorkers: 1, prewarm: false });
    try {
      const err = await runPlugin(runtimes.wasm!, httpPlugin(`http://127.0.0.2:${target.port}/x`)).then(
        () => undefined,
        (e: Error & { kind?: string }) => e,
      );
      expect(err?.kind).toBe('runtime');
      expect(err?.message).toContain('outbound calls may not reach 127.0.0.2');
      expect(target.connections()).toBe(0);
    } finally {
      await Promise.all(Object.values(runtimes).map((r) => r?.close()));
    }
  });

  test('a name resolving to a private address is refused (stub resolver), and nothing connects', async () => {
    const resolved: string[] = [];
    const outbound = new OutboundGuard({
      resolver: async (host) => {
        resolved.push(host);
        return [{ address: '127.0.0.2', family: 4 }];
      },
    });
    const runtimes = createRuntimes(loadConfig({ STF_WASM_ALLOWED_HOSTS: 'hooks.internal.test' }), { jsWorkers: 1, prewarm: false, outbound });
    try {
      const err = await runPlugin(runtimes.wasm!, httpPlugin(`http://hooks.internal.test:${target.port}/x`)).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toContain('outbound calls may not reach hooks.internal.test');
      expect(resolved).toEqual(['hooks.internal.test']);
      expect(target.connections()).toBe(0);
    } finally {
      await Promise.all(Object.values(runtimes).map((r) => r?.close()));
    }
  });

  test('with the address in OUTBOUND_ALLOWLIST the same plugin reaches it (the guard is what refused it)', async () => {
    const runtimes = createRuntimes(loadConfig({ STF_WASM_ALLOWED_HOSTS: '127.0.0.2', OUTBOUND_ALLOWLIST: '127.0.0.2' }), { jsWorkers: 1, prewarm: false });
    try {
      const result = await runPlugin(runtimes.wasm!, httpPlugin(`http://127.0.0.2:${target.port}/x`));
      expect(result.output).toEqual({ reached: true });
      expect(target.connections()).toBe(1);
    } finally {
      await Promise.all(Object.values(runtimes).map((r) => r?.close()));
    }
  });

  test('through instant-run the refusal is the run\'s failure', async () => {
    const h = await Harness.create({ STF_WASM_ALLOWED_HOSTS: '127.0.0.2' });
    try {
      const before = target.connections();
      const owner = await h.user('owner');
      const ws = (await h.workspace(owner.token, 'W')).id;
      const stf = await saveStf(h, owner, ws, httpPlugin(`http://127.0.0.2:${target.port}/x`), 'wasm');
      const r = await instantRun(h, owner, ws, stf);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: false, error: { kind: 'runtime', message: expect.stringContaining('outbound calls may not reach 127.0.0.2') } });
      expect(target.connections()).toBe(before);
    } finally {
      await h.close();
    }
  });
});

describe('workflow executions: a per-workspace cap', () => {
  test('at most maxRunning at once per workspace, a bounded queue, then 429; other workspaces unaffected', async () => {
    const gate = new WorkflowConcurrency({ maxRunning: 2, maxQueued: 1, maxWaitMs: 60_000 });
    const first = await gate.acquire('A');
    const second = await gate.acquire('A');
    let thirdAdmitted = false;
    const third = gate.acquire('A').then((release) => {
      thirdAdmitted = true;
      return release;
    });
    expect(gate.stats('A')).toEqual({ running: 2, waiting: 1 });
    await expect(gate.acquire('A')).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS', status: 429 });
    const other = await gate.acquire('B');
    expect(gate.stats('B')).toEqual({ running: 1, waiting: 0 });
    expect(thirdAdmitted).toBe(false);
    first();
    const release = await third;
    expect(gate.stats('A')).toEqual({ running: 2, waiting: 0 });
    for (const r of [second, release, other]) r();
    expect(gate.stats('A')).toEqual({ running: 0, waiting: 0 });
  });

  test('a wait past maxWaitMs is refused with 429, before the executions ahead of it end', async () => {
    const gate = new WorkflowConcurrency({ maxRunning: 1, maxQueued: 5, maxWaitMs: 50 });
    const holder = await gate.acquire('A');
    await expect(gate.acquire('A')).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(gate.stats('A')).toEqual({ running: 1, waiting: 0 });
    holder();
  });
});

describe('workflow executions through the API: the per-workspace cap engages', () => {
  let h: Harness;
  let held: http.Server;
  let heldUrl: string;
  const waiting: http.ServerResponse[] = [];
  beforeAll(async () => {
    h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1', WORKFLOW_WORKSPACE_CONCURRENCY: '1', WORKFLOW_WORKSPACE_QUEUE: '0' });
    // A Fetch source that answers `/hold` only when the test lets it, anything else at once.
    held = http.createServer((req, res) => {
      if (req.url === '/hold') waiting.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"n":1}');
    });
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    heldUrl = `http://127.0.0.1:${(held.address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(async () => {
    for (const res of waiting) res.end('{}');
    await new Promise((r) => held?.close(r));
    await h?.close();
  });

  async function flow(user: User, ws: string, path: string): Promise<string> {
    const saved = await h.call('POST', '/api/v1/stfs', { token: user.token, workspace: ws, body: { name: 's', version: '1', runtime: 'javascript', code: b64('return $input;') } });
    const versionId = saved.body.version.id;
    const r = await h.call('POST', '/api/v1/workflows', {
      token: user.token,
      workspace: ws,
      body: { name: 'w', input_steps: [{ name: 'src', source: { type: 'Fetch', url: `${heldUrl}${path}` } }], stf_steps: [{ stf_version_id: versionId, input_mappings: [] }] },
    });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
    return r.body.id;
  }
  const execute = (user: User, ws: string, id: string) => h.call('POST', `/api/v1/workflows/${id}/execute`, { token: user.token, workspace: ws, body: {} });

  test('a second execution of a busy workspace is 429 with the error envelope; another workspace runs', async () => {
    const a = await h.user('wa');
    const wsA = (await h.workspace(a.token, 'wa')).id;
    const b = await h.user('wb');
    const wsB = (await h.workspace(b.token, 'wb')).id;
    const slow = await flow(a, wsA, '/hold');
    const quick = await flow(b, wsB, '/now');

    const first = execute(a, wsA, slow);
    await until(async () => (waiting.length === 1 ? true : undefined), 20_000);
    const second = await execute(a, wsA, slow);
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(typeof second.body.error).toBe('string');

    const other = await execute(b, wsB, quick);
    expect(other.status, JSON.stringify(other.body)).toBe(200);

    waiting.shift()?.writeHead(200, { 'content-type': 'application/json' }).end('{"n":2}');
    expect((await first).status).toBe(200);
    // The place is free again.
    const again = execute(a, wsA, slow);
    await until(async () => (waiting.length === 1 ? true : undefined), 20_000);
    waiting.shift()?.writeHead(200, { 'content-type': 'application/json' }).end('{"n":3}');
    expect((await again).status).toBe(200);
  });
});

describe('wasm outbound: no call outlives its run', () => {
  /** Sends headers at once, then a byte now and then, never ending; counts the connections still open. */
  async function trickler() {
    const open = new Set<Socket>();
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x');
      const t = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(t));
    });
    server.on('connection', (s) => {
      open.add(s);
      s.on('close', () => open.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return { url, open, close: () => new Promise((r) => server.close(r)) };
  }
  const guard = new OutboundGuard({ allowlist: loadConfig({ OUTBOUND_ALLOWLIST: '127.0.0.1' }).OUTBOUND_ALLOWLIST });

  test("the run's abort signal ends the response body too, after the headers came", async () => {
    const t = await trickler();
    try {
      const abort = new AbortController();
      const res = await guardedFetch(guard)(t.url, { signal: abort.signal });
      expect(res.status).toBe(200);
      const reading = res.text();
      abort.abort(new Error('deadline'));
      await expect(reading).rejects.toThrow();
      await until(async () => (t.open.size === 0 ? true : undefined), 10_000);
    } finally {
      await t.close();
    }
  });

  test('without a signal, the time limit ends it', async () => {
    const t = await trickler();
    try {
      const res = await guardedFetch(guard, { timeoutMs: 300 })(t.url);
      await expect(res.text()).rejects.toThrow();
      await until(async () => (t.open.size === 0 ? true : undefined), 10_000);
    } finally {
      await t.close();
    }
  });
});
