// Issue 29, point 2: effects once across crashes. The built server runs as a child process (node dist/main.js, the
// way it runs in production) on a PostgreSQL of its own; a sink on 127.0.0.1 counts the deliveries of a workflow's
// effect and their Idempotency-Key. The sink holds the first delivery of some events without answering, the server
// is killed (-9) while it waits, and started again: every run cut by the crash — a row trigger's, an async one, a
// webhook's — is resumed and sends its effect again with the same key, and every event gets its effect. The STF step
// finished before the crash is not run again.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApiProcess, appDir, killApiProcesses, startApiProcess, until } from './processes.js';

const ADMIN = 'effects-once-admin-token-0123456789';
const b64 = (s: string) => Buffer.from(s).toString('base64');

type Api = ApiProcess;
let env: Record<string, string>;
const startApi = () => startApiProcess({ PATH: process.env.PATH ?? '', ...env });

async function http(api: Api, method: string, path: string, opts: { token?: string; admin?: boolean; workspace?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.admin) headers['x-admin-token'] = ADMIN;
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(api.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** What the sink received: each delivery's tag (from the body), its Idempotency-Key, and whether it was answered. */
interface Delivery {
  tag: string;
  key: string | undefined;
  answered: boolean;
}
const deliveries: Delivery[] = [];
/** Tags whose first delivery the sink holds without answering (the server dies while it waits). */
const holdFirst = new Set<string>();
let sink: Server;
let sinkUrl: string;

function sinkHandler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { tag?: string };
    const d: Delivery = { tag: String(body.tag), key: req.headers['idempotency-key'] as string | undefined, answered: false };
    deliveries.push(d);
    if (holdFirst.delete(d.tag)) return; // never answered: the connection dies with the server
    d.answered = true;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
}

let api: Api;
let token: string;
let ws: string;
let wf: string;
let hookPath: string;
let hookSecret: string;

beforeAll(async () => {
  sink = createServer(sinkHandler);
  await new Promise<void>((ok) => sink.listen(0, '127.0.0.1', ok));
  sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
  env = {
    DATABASE_URL: await createDatabase(inject('pgServerUrl'), { prefix: 'effects' }),
    ADMIN_TOKEN: ADMIN,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    SQL_ROLE_SECRET: randomBytes(24).toString('hex'),
    STORAGE_DIR: join(appDir, '.cache', `effects-once-${process.pid}`),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    EMBEDDER: 'none',
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    JOB_POLL_INTERVAL_MS: '500',
    SCHEDULE_TICK_MS: '200',
    WORKFLOW_JOB_CONCURRENCY: '8',
    // A run without a heartbeat for 1.5 s is settled; sweeps every second.
    RUN_HEARTBEAT_INTERVAL_MS: '300',
    RUN_STALE_AFTER_MS: '1500',
    MAINTENANCE_INTERVAL_MS: '1000',
  };
  api = await startApi();
  const user = await http(api, 'POST', '/admin/v1/users', { admin: true, body: { email: 'once@example.com', name: 'Once' } });
  expect(user.status).toBe(201);
  token = (await http(api, 'POST', `/admin/v1/users/${user.body.id}/sessions`, { admin: true, body: {} })).body.token;
  ws = (await http(api, 'POST', '/api/v1/workspaces', { token, body: { name: 'once' } })).body.id;
  const call = (method: string, path: string, body?: unknown) => http(api, method, path, { token, workspace: ws, body });
  expect((await http(api, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql: 'CREATE TABLE orders (tag text)' } })).status).toBe(200);
  const group = await call('POST', '/api/v1/policy-groups', { name: 'all', user_ids: [user.body.id] });
  for (const operation of ['select', 'insert']) {
    expect((await call('POST', '/api/v1/policies', { name: operation, policy_group_id: group.body.id, mode: 'allow', table_name: 'orders', operation })).status).toBe(201);
  }
  // One workflow for every trigger: an STF that finds the tag (a row event's row, or the input), then the effect.
  const stf = await call('POST', '/api/v1/stfs', { name: 'tag', version: '1', runtime: 'javascript', code: b64('return { tag: $input.row ? $input.row.tag : $input.tag };') });
  const effect = await call('POST', '/api/v1/effects', {
    name: 'sink',
    version: '1',
    url: `${sinkUrl}/deliveries`,
    method: 'POST',
    header_mappings: [],
    body_mappings: [{ source: { type: 'Variable', value: '$.tag' }, target: 'tag' }],
    timeout_secs: 120,
  });
  const w = await call('POST', '/api/v1/workflows', {
    name: 'deliver',
    stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }],
    effect_steps: [{ effect_version_id: effect.body.version.id, input_mappings: [] }],
  });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  wf = w.body.id;
  expect((await call('POST', `/api/v1/workflows/${wf}/triggers`, { event: 'row_inserted', table_name: 'orders' })).status).toBe(201);
  const hook = await call('POST', `/api/v1/workflows/${wf}/hooks`, { name: 'in' });
  expect(hook.status).toBe(201);
  hookPath = hook.body.path;
  hookSecret = hook.body.secret;
}, 120_000);

afterAll(async () => {
  await killApiProcesses();
  await new Promise((ok) => sink?.close(ok));
  await rm(env.STORAGE_DIR as string, { recursive: true, force: true });
});

describe('a server killed (-9) while its runs wait on their effect', { timeout: 180_000 }, () => {
  it('resumes every queued run it cut: each delivery sent again carries the same Idempotency-Key, and every event gets its effect', async () => {
    const call = (method: string, path: string, body?: unknown) => http(api, method, path, { token, workspace: ws, body });
    // Row events (one of them held), an async run and a webhook delivery (both held).
    for (const tag of ['row-2', 'async-1', 'hook-1']) holdFirst.add(tag);
    const inserted = await http(api, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql: "INSERT INTO orders (tag) VALUES ('row-1'), ('row-2'), ('row-3')" } });
    expect(inserted.status).toBe(200);
    const queued = await http(api, 'POST', `/api/v1/workflows/${wf}/execute?async=true`, { token, workspace: ws, body: { tag: 'async-1' } });
    expect(queued.status).toBe(202);
    const body = JSON.stringify({ tag: 'hook-1' });
    const signature = `sha256=${createHmac('sha256', hookSecret).update(body).digest('hex')}`;
    const delivered = await fetch(api.url + hookPath, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature, 'x-github-delivery': 'd-1' } });
    expect(delivered.status).toBe(202);
    const hookRun = ((await delivered.json()) as { run_id: string }).run_id;

    // Every held delivery is in the sink's hands: the runs are mid-effect. Kill the server.
    await until('the held deliveries to arrive', async () => (holdFirst.size === 0 ? true : undefined));
    api.proc.kill('SIGKILL');
    await api.exited;
    api = await startApi();

    const tags = ['row-1', 'row-2', 'row-3', 'async-1', 'hook-1'];
    await until(
      'every event to get its effect answered',
      async () => (tags.every((t) => deliveries.some((d) => d.tag === t && d.answered)) ? true : undefined),
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; deliveries: ${JSON.stringify(deliveries)}`);
    });

    const byTag = new Map<string, Delivery[]>();
    for (const d of deliveries) byTag.set(d.tag, [...(byTag.get(d.tag) ?? []), d]);
    // A delivery sent more than once carries the same key each time; the held ones were sent again.
    for (const [tag, sent] of byTag) expect(new Set(sent.map((d) => d.key)), `${tag}: ${JSON.stringify(sent)}`).toEqual(new Set([sent[0]?.key]));
    for (const tag of ['row-2', 'async-1', 'hook-1']) expect(byTag.get(tag)?.length, tag).toBeGreaterThanOrEqual(2);
    // Different deliveries, different keys.
    const keys = [...byTag.values()].map((sent) => sent[0]?.key);
    expect(keys.every((k) => typeof k === 'string' && /^wds-[0-9a-f]{64}$/.test(k))).toBe(true);
    expect(new Set(keys).size).toBe(tags.length);

    // The runs: succeeded, resumed (attempt 2), the STF step reused from the first attempt, the effect delivered
    // with the key the sink saw, in the run view.
    const runs = await until('the runs to end', async () => {
      const list = (await call('GET', `/api/v1/workflows/${wf}/runs?limit=100`)).body as any[];
      return list.length >= 5 && list.every((r) => r.status === 'succeeded') ? list : undefined;
    });
    const cut = runs.filter((r) => r.attempts === 2);
    expect(cut.map((r) => r.id)).toEqual(expect.arrayContaining([queued.body.run_id, hookRun]));
    expect(new Set(runs.map((r) => r.id)).size).toBe(runs.length);
    // One run per event: no row event was retried as a new run.
    expect(runs.filter((r) => r.trigger === 'event')).toHaveLength(3);
    const held = new Set(['row-2', 'async-1', 'hook-1']);
    let checked = 0;
    for (const summary of cut) {
      const run = (await call('GET', `/api/v1/workflows/${wf}/runs/${summary.id}`)).body;
      const tag = run.output.tag as string;
      // (Another run may have been cut between its effect's answer and its end: its effect is then reused.)
      if (!held.has(tag)) continue;
      checked++;
      expect(run.steps, tag).toMatchObject([
        { kind: 'stf', index: 0, status: 'succeeded', attempt: 1 },
        { kind: 'effect', index: 0, status: 'succeeded', attempt: 2, delivered: true, status_code: 200, idempotency_key: byTag.get(tag)?.[0]?.key },
      ]);
    }
    expect(checked).toBe(3);
  });
});
