import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningEmbeddedPostgres, startEmbeddedPostgres } from '@wds/db';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The built server as a process (node dist/main.js), the way it runs in production: stopped with SIGTERM, killed
 * with SIGKILL, its database connections cut and its database restarted underneath it. Each test starts its own
 * server (and embedded PostgreSQL) in a fresh DATA_DIR.
 */
const appDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const started: Api[] = [];
const clusters: RunningEmbeddedPostgres[] = [];
const dirs: string[] = [];

interface Api {
  url: string;
  proc: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'wds-lifecycle-'));
  dirs.push(dir);
  return dir;
}

async function startApi(env: Record<string, string>): Promise<Api> {
  const proc = spawn(process.execPath, ['dist/main.js'], {
    cwd: appDir,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', EMBEDDER: 'none', DATABASE_URL: '', ADMIN_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  const api: Api = { url: '', proc, logs, exited };
  started.push(api);
  proc.stderr?.on('data', (d) => logs.push(String(d)));
  let buffered = '';
  const url = new Promise<string>((ok, fail) => {
    proc.stdout?.on('data', (d) => {
      buffered += String(d);
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        logs.push(line);
        if (line.includes('"msg":"listening"')) ok(JSON.parse(line).url);
      }
    });
    void exited.then((code) => fail(new Error(`server exited with ${code}:\n${logs.join('\n')}`)));
  });
  api.url = await url;
  return api;
}

const logged = (api: Api, msg: string) => api.logs.some((l) => l.includes(`"msg":"${msg}"`));

async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Res {
  status: number;
  body: any;
}

async function http(
  api: Api,
  method: string,
  path: string,
  opts: { token?: string; admin?: string; workspace?: string; body?: unknown } = {},
): Promise<Res> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.admin) headers['x-admin-token'] = opts.admin;
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(api.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const workspaceRole = (ws: string) => `wds_ws_${ws.replace(/-/g, '')}`;
const runSql = (api: Api, token: string, ws: string, sql: string) => http(api, 'POST', `/api/v1/workspaces/${ws}/sql`, { token, body: { sql } });

interface User {
  id: string;
  token: string;
}

/** A user with a session token, through the admin interface. */
async function signUp(api: Api, admin: string): Promise<User> {
  const email = `u${randomBytes(4).toString('hex')}@example.com`;
  const user = await http(api, 'POST', '/admin/v1/users', { admin, body: { email, name: 'Ada' } });
  expect(user.status).toBe(201);
  const session = await http(api, 'POST', `/admin/v1/users/${user.body.id}/sessions`, { admin, body: {} });
  return { id: user.body.id, token: session.body.token };
}

async function createWorkspace(api: Api, token: string, name = 'Acme'): Promise<string> {
  const ws = await http(api, 'POST', '/api/v1/workspaces', { token, body: { name } });
  expect(ws.status).toBe(201);
  return ws.body.id;
}

/** Table `notes` in the workspace, which the user may read and add to (rows are default deny). */
async function createNotes(api: Api, user: User, ws: string): Promise<void> {
  expect((await runSql(api, user.token, ws, 'CREATE TABLE notes (body text)')).status).toBe(200);
  const group = await http(api, 'POST', '/api/v1/policy-groups', { token: user.token, workspace: ws, body: { name: 'all', user_ids: [user.id] } });
  expect(group.status).toBe(201);
  for (const operation of ['select', 'insert']) {
    const body = { name: operation, policy_group_id: group.body.id, mode: 'allow', table_name: 'notes', operation };
    expect((await http(api, 'POST', '/api/v1/policies', { token: user.token, workspace: ws, body })).status).toBe(201);
  }
}

/** The port the embedded PostgreSQL of dataDir listens on, from its lock file (line 4). */
const serverPort = (dataDir: string) => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[3]);

/** A superuser connection to the embedded PostgreSQL of dataDir, with the password the service keeps there. */
async function superuser(dataDir: string): Promise<pg.Client> {
  const password = (await readFile(join(dataDir, 'postgres-password'), 'utf8')).trim();
  const port = serverPort(dataDir);
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Holds a SHARE lock on the workspace's only table until `release`: reading it (and its definition) goes on, writes
 * to it wait in the executor meanwhile.
 */
async function lockWorkspaceTable(db: pg.Client, ws: string): Promise<() => Promise<void>> {
  const { rows } = await db.query("SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE tableowner = $1", [
    workspaceRole(ws),
  ]);
  expect(rows).toHaveLength(1);
  await db.query('BEGIN');
  await db.query(`LOCK TABLE ${rows[0].t} IN SHARE MODE`);
  return async () => {
    await db.query('COMMIT');
  };
}

/** The backends of statements that wait for a lock, by the role they logged in as and their application name. */
async function waitingBackends(db: pg.Client, user: string, application: string): Promise<number[]> {
  // Inside a transaction (the one holding the lock) the view would show the state of its first reading only.
  await db.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await db.query(
    "SELECT pid FROM pg_stat_activity WHERE usename = $1 AND application_name = $2 AND wait_event_type = 'Lock' AND datname = current_database()",
    [user, application],
  );
  return rows.map((r) => r.pid);
}
const waitingBackend = (db: pg.Client, user: string, application: string) =>
  until(`a backend of ${user} waiting for a lock`, async () => (await waitingBackends(db, user, application))[0]);


/** Processes whose command line holds `needle` (the embedded server of a data directory, its watchdog). */
function processesWith(...needles: string[]): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (state !== 'Z' && needles.every((n) => args.includes(n))) found.push(Number(entry));
    } catch {}
  }
  return found;
}
const postmasters = (dataDir: string) => processesWith('-D', join(dataDir, 'postgres'));
const watchdogs = (dataDir: string) => processesWith(join(dataDir, 'postgres')).filter((pid) => !postmasters(dataDir).includes(pid));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  await new Promise((ok) => server.close(ok));
  return port;
}

afterAll(async () => {
  for (const api of started) if (api.proc.exitCode === null && api.proc.signalCode === null) api.proc.kill('SIGKILL');
  await Promise.all(clusters.map((c) => c.stop()));
  // The watchdogs stop the servers of the killed ones; whatever is left after that is stopped here.
  const left = () => dirs.flatMap(postmasters);
  await until('the watchdogs to stop the servers', () => left().length === 0, 15_000).catch(() => {});
  for (const pid of left()) process.kill(pid, 'SIGINT');
  await until('the servers to stop', () => left().length === 0, 15_000).catch(() => {});
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('the server process', { timeout: 90_000 }, () => {
  it('drains the requests in flight on SIGTERM, then stops the embedded PostgreSQL and exits 0', async () => {
    const dataDir = await tempDir();
    const api = await startApi({ DATA_DIR: dataDir, SQL_WORKSPACE_CONNECTIONS: '20' });
    const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    const user = await signUp(api, admin);
    const token = user.token;
    const ws = await createWorkspace(api, token);
    await createNotes(api, user, ws);
    expect((await runSql(api, token, ws, "INSERT INTO notes (body) VALUES ('kept')")).status).toBe(200);

    // 20 statements that cannot finish before the lock is released, which happens only after SIGTERM. Each has a
    // connection of its own, so all 20 are known to have arrived once 20 backends wait.
    const db = await superuser(dataDir);
    const release = await lockWorkspaceTable(db, ws);
    const inFlight = Promise.all(Array.from({ length: 20 }, (_, i) => runSql(api, token, ws, `INSERT INTO notes (body) VALUES ('${i}')`)));
    await until('20 statements waiting', async () => (await waitingBackends(db, workspaceRole(ws), 'wds-sql')).length === 20);
    api.proc.kill('SIGTERM');
    await until('the shutdown to begin', () => logged(api, 'shutting down'));
    await release();
    await db.end();

    const answers = await inFlight;
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect(await api.exited).toBe(0);
    expect(logged(api, 'stopped')).toBe(true);
    expect(postmasters(dataDir)).toEqual([]);
    await until('the watchdog to end', () => watchdogs(dataDir).length === 0);
  });

  it('after kill -9 the watchdog stops the orphaned PostgreSQL, and the next start finds the data', async () => {
    const dataDir = await tempDir();
    let api = await startApi({ DATA_DIR: dataDir });
    const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    const user = await signUp(api, admin);
    const token = user.token;
    const ws = await createWorkspace(api, token);
    await createNotes(api, user, ws);
    expect((await runSql(api, token, ws, "INSERT INTO notes (body) VALUES ('before the crash')")).status).toBe(200);
    const port = serverPort(dataDir);
    expect(postmasters(dataDir)).toHaveLength(1);

    api.proc.kill('SIGKILL');
    await api.exited;
    await until('the orphaned server to stop', () => postmasters(dataDir).length === 0 && watchdogs(dataDir).length === 0);

    api = await startApi({ DATA_DIR: dataDir });
    expect((await runSql(api, token, ws, 'SELECT body FROM notes')).body.rows).toEqual([{ body: 'before the crash' }]);
    // The same port as before (other processes may be using it), remembered in the data directory.
    expect(serverPort(dataDir)).toBe(port);
    expect(readFileSync(join(dataDir, 'postgres-port'), 'utf8').trim()).toBe(String(port));

    // The watchdog killed too (the whole service's processes, say): the next start stops the left-over server itself.
    const watchdog = watchdogs(dataDir);
    expect(watchdog).toHaveLength(1);
    const orphan = postmasters(dataDir);
    api.proc.kill('SIGKILL');
    process.kill(watchdog[0]!, 'SIGKILL');
    await api.exited;
    expect(postmasters(dataDir)).toEqual(orphan);
    api = await startApi({ DATA_DIR: dataDir });
    expect(logged(api, 'stopping the embedded PostgreSQL a stopped service left running')).toBe(true);
    expect((await runSql(api, token, ws, 'SELECT body FROM notes')).body.rows).toEqual([{ body: 'before the crash' }]);
    expect(postmasters(dataDir)).not.toEqual(orphan);
    api.proc.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('runs the first statements of 15 new workspaces at once after a restart', async () => {
    const dataDir = await tempDir();
    let api = await startApi({ DATA_DIR: dataDir });
    const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    const { token } = await signUp(api, admin);
    const workspaces: string[] = [];
    for (let i = 0; i < 15; i++) workspaces.push(await createWorkspace(api, token, `ws ${i}`));
    api.proc.kill('SIGTERM');
    expect(await api.exited).toBe(0);

    // Each first statement creates its workspace's role and grants: concurrent GRANTs must not collide.
    api = await startApi({ DATA_DIR: dataDir });
    const results = await Promise.all(workspaces.map((ws) => runSql(api, token, ws, 'CREATE TABLE items (title text)')));
    expect(results.map((r) => [r.status, r.body?.code])).toEqual(workspaces.map(() => [200, undefined]));
    api.proc.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('answers 503 to a request whose database connection is killed, and serves the next one', async () => {
    const dataDir = await tempDir();
    const api = await startApi({ DATA_DIR: dataDir });
    const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    const user = await signUp(api, admin);
    const token = user.token;
    const ws = await createWorkspace(api, token);
    await createNotes(api, user, ws);
    const db = await superuser(dataDir);

    // Workspace SQL: a statement waiting on a lock loses its backend.
    let release = await lockWorkspaceTable(db, ws);
    const sqlRequest = runSql(api, token, ws, "INSERT INTO notes (body) VALUES ('cut off')");
    await db.query('SELECT pg_terminate_backend($1)', [await waitingBackend(db, workspaceRole(ws), 'wds-sql')]);
    const lostSql = await sqlRequest;
    expect(lostSql.status).toBe(503);
    expect(lostSql.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: expect.any(String) });
    await release();

    // The service's own pool: creating a workspace waits on a lock of the workspaces table and loses its backend.
    await db.query('BEGIN');
    await db.query('LOCK TABLE platform.workspaces IN ACCESS EXCLUSIVE MODE');
    release = () => db.query('COMMIT').then(() => {});
    const create = http(api, 'POST', '/api/v1/workspaces', { token, body: { name: 'cut off' } });
    await db.query('SELECT pg_terminate_backend($1)', [await waitingBackend(db, 'postgres', 'wds')]);
    const lostCreate = await create;
    expect(lostCreate.status).toBe(503);
    expect(lostCreate.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: expect.any(String) });
    await release();
    await db.end();

    expect((await http(api, 'GET', `/api/v1/workspaces/${ws}`, { token })).status).toBe(200);
    expect((await runSql(api, token, ws, 'SELECT body FROM notes')).status).toBe(200);
    expect((await http(api, 'POST', '/api/v1/workspaces', { token, body: { name: 'after' } })).status).toBe(201);
    expect(api.logs.join('\n')).not.toMatch(/uncaught exception|unhandled rejection/);
    api.proc.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('answers 503 while its database is down and recovers without a restart when it is back', async () => {
    // A PostgreSQL this test stops and starts (same data, same port) under a server that uses it by DATABASE_URL.
    const pgDataDir = await tempDir();
    const port = await freePort();
    let cluster = await startEmbeddedPostgres({ dataDir: pgDataDir, port });
    clusters.push(cluster);
    const admin = `adm_${randomBytes(16).toString('hex')}`;
    const api = await startApi({ DATA_DIR: await tempDir(), DATABASE_URL: cluster.url, ADMIN_TOKEN: admin });
    const user = await signUp(api, admin);
    const token = user.token;
    const ws = await createWorkspace(api, token);
    await createNotes(api, user, ws);

    await cluster.stop();
    expect((await http(api, 'GET', '/readyz')).status).toBe(503);
    for (const res of [
      await http(api, 'GET', `/api/v1/workspaces/${ws}`, { token }),
      await runSql(api, token, ws, 'SELECT body FROM notes'),
      await http(api, 'POST', '/api/v1/workspaces', { token, body: { name: 'during the outage' } }),
    ]) {
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: expect.any(String) });
    }

    cluster = await startEmbeddedPostgres({ dataDir: pgDataDir, port });
    clusters.push(cluster);
    await until('readiness', async () => (await http(api, 'GET', '/readyz')).status === 200);
    expect((await http(api, 'GET', `/api/v1/workspaces/${ws}`, { token })).status).toBe(200);
    expect((await runSql(api, token, ws, "INSERT INTO notes (body) VALUES ('after')")).status).toBe(200);
    expect((await http(api, 'POST', '/api/v1/workspaces', { token, body: { name: 'after the outage' } })).status).toBe(201);
    await until('the cache listener to reconnect', () => logged(api, 'cache invalidation listener reconnected'));
    expect(api.logs.join('\n')).not.toMatch(/uncaught exception|unhandled rejection/);
    api.proc.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });
});
