/**
 * Scale-out on real parts: two API processes (RUN_JOBS=false) and one worker, as separate Node processes on one
 * PostgreSQL and one S3-compatible store (s3rver on 127.0.0.1). Checks what only several processes can break:
 * cache invalidation across processes, jobs queued by an API process and run by the worker, a file uploaded
 * through one process and downloaded through the other, and an API process killed (-9) under write load with no
 * acknowledged write lost.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase } from '@wds/testkit';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const API_MAIN = fileURLToPath(new URL('../../api/dist/main.js', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ADMIN_TOKEN = 'scale-out-admin-token-0123456789';
const BUCKET = 'wds-blobs';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  const port = (s.address() as { port: number }).port;
  await new Promise((ok) => s.close(ok));
  return port;
}

/** Polls `check` until it gives a value; with `rethrow`, a throw from `check` ends the wait (a process died). */
async function until<T>(check: () => Promise<T | undefined>, ms = 30_000, what = 'condition', rethrow = false): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check().catch((err: Error) => {
      if (rethrow && err.message.includes(' exited: ')) throw err;
      return undefined;
    });
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Proc {
  child: ChildProcess;
  output: string[];
  url?: string;
}

function start(main: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [main], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output };
}

/** Fails at once (with its output) when the process is gone, instead of waiting out a deadline. */
function alive(p: Proc, what: string): void {
  if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`${what} exited: ${p.output.join('')}`);
}

const exited = (p: Proc) =>
  p.child.exitCode !== null || p.child.signalCode !== null ? Promise.resolve() : new Promise<void>((ok) => p.child.once('exit', () => ok()));

let dataDir: string;
let s3: S3rver;
let env: Record<string, string>;
let api1: Proc;
let api2: Proc;
let worker: Proc;

async function startApi(runJobs = false): Promise<Proc> {
  const port = await freePort();
  const p = start(API_MAIN, { ...env, PORT: String(port), RUN_JOBS: String(runJobs) });
  p.url = `http://127.0.0.1:${port}`;
  await until(
    async () => {
      alive(p, `the API on ${port}`);
      return (await fetch(`${p.url}/readyz`)).ok ? true : undefined;
    },
    60_000,
    `the API on ${port}`,
    true,
  );
  return p;
}

async function startWorker(): Promise<Proc> {
  // Its metrics on a listener of its own (a worker has no other).
  const metricsPort = await freePort();
  const p = start(WORKER_MAIN, { ...env, METRICS_PORT: String(metricsPort) });
  p.url = `http://127.0.0.1:${metricsPort}`;
  await until(
    async () => {
      alive(p, 'the worker');
      return p.output.join('').includes('worker running') ? true : undefined;
    },
    60_000,
    'the worker',
    true,
  );
  return p;
}

type Res = { status: number; body: any };
async function call(p: Proc, method: string, path: string, opts: { token?: string; workspace?: string; body?: unknown; admin?: boolean } = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
  if (opts.admin) headers['x-admin-token'] = ADMIN_TOKEN;
  const r = await fetch(`${p.url}${path}`, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
  const text = await r.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: r.status, body };
}

let token: string;
let userId: string;
let ws: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'wds-scale-out-'));
  const s3Port = await freePort();
  s3 = new S3rver({ address: '127.0.0.1', port: s3Port, silent: true, directory: join(dataDir, 's3'), configureBuckets: [{ name: BUCKET }] });
  await s3.run();
  const databaseUrl = await createDatabase(inject('pgServerUrl'), { prefix: 'scaleout' });
  env = {
    DATABASE_URL: databaseUrl,
    DATA_DIR: join(dataDir, 'data'),
    ADMIN_TOKEN,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    SQL_ROLE_SECRET: randomBytes(24).toString('hex'),
    STORAGE_BACKEND: 's3',
    S3_BUCKET: BUCKET,
    S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_FORCE_PATH_STYLE: 'true',
    EMBEDDER: 'hashing',
    JOB_POLL_INTERVAL_MS: '500',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    SQL_MAX_ROWS: '100000',
    // Schedules: every-2-second ticks allowed, asked for every 200 ms by each process with background work.
    SCHEDULE_MIN_INTERVAL_MS: '1000',
    SCHEDULE_TICK_MS: '200',
    // Liveness quick enough for a test: beats every 500 ms, a run without one for 2 s is interrupted, sweeps each 1 s.
    RUN_HEARTBEAT_INTERVAL_MS: '500',
    RUN_STALE_AFTER_MS: '2000',
    MAINTENANCE_INTERVAL_MS: '1000',
  };
  // The first process applies the migrations; the second starts on a migrated database. The worker comes later.
  api1 = await startApi();
  api2 = await startApi();

  const user = await call(api1, 'POST', '/admin/v1/users', { admin: true, body: { email: 'scale@example.com', name: 'Scale' } });
  userId = user.body.id;
  token = (await call(api1, 'POST', `/admin/v1/users/${userId}/sessions`, { admin: true, body: {} })).body.token;
  ws = (await call(api1, 'POST', '/api/v1/workspaces', { token, body: { name: 'scale' } })).body.id;
  for (const sql of ['CREATE TABLE notes (body text, n int)', 'CREATE TABLE writes (tag text, i int)']) {
    const r = await call(api1, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
  const group = await call(api1, 'POST', '/api/v1/policy-groups', { token, workspace: ws, body: { name: 'all', user_ids: [userId] } });
  for (const table of ['notes', 'writes'])
    for (const operation of ['select', 'insert']) {
      const r = await call(api1, 'POST', '/api/v1/policies', {
        token,
        workspace: ws,
        body: { name: `${table}-${operation}`, policy_group_id: group.body.id, mode: 'allow', table_name: table, operation, condition: {} },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
}, 180_000);

afterAll(async () => {
  for (const p of [api1, api2, worker]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all([api1, api2, worker].filter(Boolean).map(exited));
  await s3?.close();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe('two API processes and a worker on one database and one S3 store', () => {
  it('a job queued through an API process before any worker ever started is run by the worker once it starts', async () => {
    const up = await call(api2, 'POST', `/api/v1/workspaces/${ws}/files`, {
      token,
      workspace: ws,
      body: { filename: 'notes.txt', content_type: 'text/plain', content: Buffer.from('the printer on floor two is out of toner').toString('base64') },
    });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    // The API processes (RUN_JOBS=false) declared the queues at start: queuing needs no worker.
    const queued = await call(api2, 'POST', `/api/v1/workspaces/${ws}/embeddings/files/embed`, { token, body: { file_ids: [up.body.id] } });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const fileStatus = async () => {
      const s = await call(api1, 'GET', `/api/v1/workspaces/${ws}/embeddings/files/status`, { token });
      return s.body.files?.find((f: { file_id?: string; id?: string }) => (f.file_id ?? f.id) === up.body.id)?.status as string | undefined;
    };
    expect(await fileStatus()).toBe('pending');
    // A workflow run queued the same way (async execute): the API processes only record and queue it.
    const stf = await call(api2, 'POST', '/api/v1/stfs', {
      token,
      workspace: ws,
      body: { name: 'double', version: '1', runtime: 'javascript', code: Buffer.from('return { n: $input.n * 2 };').toString('base64') },
    });
    expect(stf.status, JSON.stringify(stf.body)).toBe(201);
    const wf = await call(api2, 'POST', '/api/v1/workflows', {
      token,
      workspace: ws,
      body: { name: 'double', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] },
    });
    expect(wf.status, JSON.stringify(wf.body)).toBe(201);
    const queuedRun = await call(api2, 'POST', `/api/v1/workflows/${wf.body.id}/execute?async=true`, { token, workspace: ws, body: { n: 21 } });
    expect(queuedRun.status, JSON.stringify(queuedRun.body)).toBe(202);
    const runOf = async () => (await call(api1, 'GET', `/api/v1/workflows/${wf.body.id}/runs/${queuedRun.body.run_id}`, { token, workspace: ws })).body;
    expect((await runOf()).status).toBe('queued');

    worker = await startWorker();
    const status = await until(
      async () => {
        const s = await fileStatus();
        return s && s !== 'pending' && s !== 'processing' ? s : undefined;
      },
      60_000,
      'the worker to embed the file',
    );
    expect(status).toBe('completed');
    const workflowRun = await until(async () => {
      const r = await runOf();
      return r.status === 'queued' || r.status === 'running' ? undefined : r;
    }, 60_000, 'the worker to run the workflow');
    expect(workflowRun).toMatchObject({ status: 'succeeded', trigger: 'async', output: { n: 42 } });
    // The worker ran it; the API processes run no jobs. The item is marked completed inside the job, and the
    // worker logs "job done" after it (asynchronously): wait for the line rather than race it.
    const jobDone = /"queue":"embeddings".*"msg":"job done"/;
    await until(async () => (jobDone.test(worker.output.join('')) ? true : undefined), 10_000, 'the worker to log the job');
    expect(worker.output.join('')).toMatch(jobDone);
    for (const p of [api1, api2]) expect(p.output.join('')).not.toContain('"msg":"job done"');

    // The worker's metrics (METRICS_PORT, no token): the texts it embedded, the queues it works, its pools.
    const scrape = await fetch(`${worker.url}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    expect(text).toMatch(/^wds_embedding_texts_total\{embedder="[a-z]+"\} [1-9]/m);
    expect(text).toMatch(/^wds_job_queue_depth\{queue="embeddings"\} \d+/m);
    expect(text).toMatch(/^wds_db_pool_connections\{pool="service",state="open"\} [1-9]/m);
    expect(text).not.toMatch(/^wds_http_requests_total\{/m);
    expect((await fetch(`${worker.url}/healthz`)).status).toBe(404);
  });

  /** A schedule every 2 s, asked by the processes `extra` starts (and the worker), for three ticks: each tick fires once. */
  async function eachTickOnce(name: string, extra: () => Promise<Proc[]>) {
    const more = await extra();
    try {
      const stf = await call(api1, 'POST', '/api/v1/stfs', {
        token,
        workspace: ws,
        body: { name: `tick-${name}`, version: '1', runtime: 'javascript', code: Buffer.from('return { ok: true };').toString('base64') },
      });
      const wf = await call(api1, 'POST', '/api/v1/workflows', {
        token,
        workspace: ws,
        body: { name: `ticking-${name}`, stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] },
      });
      const s = await call(api1, 'POST', `/api/v1/workflows/${wf.body.id}/schedules`, { token, workspace: ws, body: { cron: '*/2 * * * * *' } });
      expect(s.status, JSON.stringify(s.body)).toBe(201);
      const queuedTicks = async () => {
        const audit = await call(api1, 'GET', '/api/v1/audit-logs?action=execute_workflow&limit=1000', { token, workspace: ws });
        return (audit.body as { details?: { schedule_id?: string; status?: string; tick?: string } }[])
          .filter((e) => e.details?.schedule_id === s.body.id && e.details?.status === 'queued')
          .map((e) => e.details?.tick as string)
          .sort();
      };
      await until(async () => ((await queuedTicks()).length >= 3 ? true : undefined), 30_000, 'three ticks of the schedule');
      expect((await call(api2, 'PATCH', `/api/v1/workflows/${wf.body.id}/schedules/${s.body.id}`, { token, workspace: ws, body: { paused: true } })).status).toBe(200);
      const ticks = await queuedTicks();
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      expect(new Set(ticks).size).toBe(ticks.length);
      for (let i = 1; i < ticks.length; i++) expect(Date.parse(ticks[i] as string) - Date.parse(ticks[i - 1] as string)).toBe(2000);
      const runs = await call(api2, 'GET', `/api/v1/workflows/${wf.body.id}/runs?limit=100`, { token, workspace: ws });
      expect((runs.body as { trigger_id: string }[]).filter((r) => r.trigger_id === s.body.id).length).toBe(ticks.length);
    } finally {
      for (const p of more) p.child.kill('SIGTERM');
      await Promise.all(more.map(exited));
    }
  }

  it('a schedule firing every 2 s with two worker processes asking fires each tick exactly once', async () => {
    await eachTickOnce('workers', async () => [await startWorker()]);
  });

  it('a schedule firing every 2 s with two API processes running background work (RUN_JOBS) fires each tick exactly once', async () => {
    await eachTickOnce('apis', async () => Promise.all([startApi(true), startApi(true)]));
  });

  it('a worker killed (-9) mid-run: the next worker resumes its run (a second attempt), and queued runs go on', async () => {
    const stf = await call(api1, 'POST', '/api/v1/stfs', {
      token,
      workspace: ws,
      body: {
        name: 'slow',
        version: '1',
        runtime: 'javascript',
        code: Buffer.from('const until = Date.now() + 4000; while (Date.now() < until) {} return 1;').toString('base64'),
      },
    });
    const wf = await call(api1, 'POST', '/api/v1/workflows', {
      token,
      workspace: ws,
      body: { name: 'slow', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] },
    });
    const runOf = async (id: string) => (await call(api2, 'GET', `/api/v1/workflows/${wf.body.id}/runs/${id}`, { token, workspace: ws })).body;
    const started = (await call(api1, 'POST', `/api/v1/workflows/${wf.body.id}/execute?async=true`, { token, workspace: ws, body: {} })).body.run_id;
    await until(async () => ((await runOf(started)).status === 'running' ? true : undefined), 30_000, 'the worker to start the run');
    worker.child.kill('SIGKILL');
    await exited(worker);
    // Queued while no worker is up: it waits for the next one.
    const waiting = (await call(api2, 'POST', `/api/v1/workflows/${wf.body.id}/execute?async=true`, { token, workspace: ws, body: {} })).body.run_id;
    worker = await startWorker();
    // An async run is queued work: the sweep gives it back to the queue, and the new worker runs it again.
    const resumed = await until(async () => {
      const r = await runOf(started);
      return r.status === 'running' || r.status === 'queued' ? undefined : r;
    }, 30_000, 'the sweep to settle the killed run, and the new worker to resume it');
    expect(resumed).toMatchObject({ status: 'succeeded', attempts: 2, error: null });
    const after = await until(async () => {
      const r = await runOf(waiting);
      return r.status === 'queued' || r.status === 'running' ? undefined : r;
    }, 30_000, 'the new worker to run the queued run');
    expect(after.status).toBe('succeeded');
  });

  it('an API key revoked through one process is refused by the other (cache invalidation)', async () => {
    const key = await call(api1, 'POST', '/api/v1/api-keys', { token, body: { name: 'k' } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const apiKey = key.body.key;
    // api2 caches the key's principal and the workspace's access on first use.
    expect((await call(api2, 'POST', `/api/v1/workspaces/${ws}/sql`, { token: apiKey, body: { sql: 'SELECT count(*) FROM notes' } })).status).toBe(200);
    expect((await call(api2, 'POST', `/api/v1/workspaces/${ws}/sql`, { token: apiKey, body: { sql: 'SELECT count(*) FROM notes' } })).status).toBe(200);
    expect((await call(api1, 'DELETE', `/api/v1/api-keys/${key.body.id}`, { token })).status).toBeLessThan(300);
    // Invalidation travels by NOTIFY: bounded wait, no sleep.
    await until(
      async () => ((await call(api2, 'POST', `/api/v1/workspaces/${ws}/sql`, { token: apiKey, body: { sql: 'SELECT 1' } })).status === 401 ? true : undefined),
      10_000,
      'the revoked key to be refused by the other process',
    );
  });

  it('a file uploaded through one API process downloads byte-identical through the other (S3)', async () => {
    const bytes = randomBytes(300_000);
    const up = await call(api1, 'POST', `/api/v1/workspaces/${ws}/files`, {
      token,
      workspace: ws,
      body: { filename: 'blob.bin', content_type: 'application/octet-stream', content: bytes.toString('base64') },
    });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const r = await fetch(`${api2.url}/api/v1/workspaces/${ws}/files/${up.body.id}/download`, { headers: { authorization: `Bearer ${token}`, 'x-workspace-id': ws } });
    expect(r.status).toBe(200);
    const got = Buffer.from(await r.arrayBuffer());
    expect(createHash('sha256').update(got).digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('an API process killed (-9) under write load loses no acknowledged write', async () => {
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (p: Proc, tag: string) => {
      for (let i = 0; !stop; i++) {
        const r = await call(p, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql: `INSERT INTO writes (tag, i) VALUES ('${tag}', ${i})` } }).catch(() => undefined);
        if (r?.status === 200) acknowledged.push(`${tag}:${i}`);
        if (!r && p === api1) return; // its process is gone
      }
    };
    const writers = [0, 1, 2, 3].map((n) => writer(api1, `a${n}`)).concat([0, 1].map((n) => writer(api2, `b${n}`)));
    await until(async () => (acknowledged.filter((a) => a.startsWith('a')).length >= 40 ? true : undefined), 30_000, 'writes through api1');
    api1.child.kill('SIGKILL');
    await exited(api1);
    await until(async () => (acknowledged.filter((a) => a.startsWith('b')).length >= 40 ? true : undefined), 30_000, 'writes through api2 after the kill');
    stop = true;
    await Promise.all(writers);

    const r = await call(api2, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql: "SELECT tag || ':' || i AS w FROM writes" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const stored = new Set((r.body.rows as { w: string }[]).map((x) => x.w));
    const lost = acknowledged.filter((a) => !stored.has(a));
    expect(lost).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(80);
    // The surviving process still serves.
    expect((await fetch(`${api2.url}/readyz`)).status).toBe(200);
  });
});
