// Issue 29, point 1: a write and its audit entry commit together. The built server runs as a child process (node
// dist/main.js) on a database of its own; clients send single-row INSERTs through POST /sql as fast as it answers,
// and the server is killed (-9) in the middle of the burst, three times. After each kill every committed row has its
// `execute_sql_insert` entry and no entry counts a row that is not there. And the function the entries go through
// (`user_data.wds_audit`, callable by every workspace role) writes nothing without the service's MAC, nor for
// another workspace than the session's own, nor on another session than the one it was signed for, nor anything but
// a SQL statement's entry, nor twice. An entry that cannot be written takes its write with it (503), and an STF run's
// sql() writes commit only after the run's own entry.
import { randomBytes, createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { auditInTransactionSql } from '@wds/audit';
import { workspaceRole } from '@wds/sql-rewriter';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApiProcess, appDir, killApiProcesses, startApiProcess, until } from './processes.js';

const ADMIN = 'audit-once-admin-token-0123456789';
let env: Record<string, string>;
let api: ApiProcess;
let db: pg.Client;
let token: string;
let userId: string;
let ws: string;
let other: string;

async function http(method: string, path: string, opts: { token?: string; admin?: boolean; workspace?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.admin) headers['x-admin-token'] = ADMIN;
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(api.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
const sqlOf = (workspace: string, sql: string) => http('POST', `/api/v1/workspaces/${workspace}/sql`, { token, body: { sql } });

beforeAll(async () => {
  env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: await createDatabase(inject('pgServerUrl'), { prefix: 'audit_once', template: inject('apiTemplateDatabase') }),
    ADMIN_TOKEN: ADMIN,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    SQL_ROLE_SECRET: randomBytes(24).toString('hex'),
    STORAGE_DIR: join(appDir, '.cache', `audit-once-${process.pid}`),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    EMBEDDER: 'none',
  };
  api = await startApiProcess(env);
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const user = await http('POST', '/admin/v1/users', { admin: true, body: { email: 'audit@example.com', name: 'Audit' } });
  userId = user.body.id;
  token = (await http('POST', `/admin/v1/users/${userId}/sessions`, { admin: true, body: {} })).body.token;
  ws = (await http('POST', '/api/v1/workspaces', { token, body: { name: 'burst' } })).body.id;
  other = (await http('POST', '/api/v1/workspaces', { token, body: { name: 'other' } })).body.id;
  expect((await sqlOf(ws, 'CREATE TABLE burst (tag text)')).status).toBe(200);
  const group = await http('POST', '/api/v1/policy-groups', { token, workspace: ws, body: { name: 'all', user_ids: [userId] } });
  for (const operation of ['select', 'insert']) {
    const p = await http('POST', '/api/v1/policies', { token, workspace: ws, body: { name: operation, policy_group_id: group.body.id, mode: 'allow', table_name: 'burst', operation } });
    expect(p.status).toBe(201);
  }
}, 120_000);

afterAll(async () => {
  await killApiProcesses();
  await db?.end();
  if (env) await rm(env.STORAGE_DIR as string, { recursive: true, force: true });
});

/** Committed rows of the burst table, and what the insert entries of the workspace say they inserted. */
async function tally(): Promise<{ rows: number; audited: number; entries: number }> {
  const table = `user_data.ws_${ws.replace(/-/g, '_')}_burst`;
  const rows = Number((await db.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  const r = await db.query(
    `SELECT count(*) AS entries, coalesce(sum((details->>'affected_rows')::int), 0) AS audited
       FROM platform.audit_logs WHERE workspace_id = $1 AND action = 'execute_sql_insert'`,
    [ws],
  );
  return { rows, audited: Number(r.rows[0].audited), entries: Number(r.rows[0].entries) };
}

describe('a server killed (-9) during a burst of writes', { timeout: 240_000 }, () => {
  it('leaves every committed write with its audit entry, and no entry without its write', async () => {
    let answered = 0;
    for (let round = 0; round < 3; round++) {
      const before = answered;
      let stop = false;
      const client = async (c: number) => {
        for (let i = 0; !stop; i++) {
          const r = await sqlOf(ws, `INSERT INTO burst (tag) VALUES ('r${round}-c${c}-${i}')`).catch(() => undefined);
          if (!r) return; // the server is gone
          if (r.status === 200) answered++;
        }
      };
      const clients = Array.from({ length: 12 }, (_, c) => client(c));
      // Kill it mid-burst: once writes are answered at full speed.
      await until('writes to be answered', () => answered - before >= 150, 120_000);
      api.proc.kill('SIGKILL');
      await api.exited;
      stop = true;
      await Promise.all(clients);
      const t = await tally();
      expect(t.rows, `round ${round}: ${JSON.stringify(t)}`).toBeGreaterThanOrEqual(answered);
      expect(t.audited, `round ${round}: ${JSON.stringify(t)}`).toBe(t.rows);
      expect(t.entries).toBe(t.rows);
      api = await startApiProcess(env);
    }
  });
});

describe('user_data.wds_audit', () => {
  const entry = (workspaceId: string, pid: number | undefined, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ id: crypto.randomUUID(), pid, workspace_id: workspaceId, user_id: null, api_key_id: null, action: 'execute_sql_insert', resource_type: 'table', resource_id: 'forged', details: { forged: true }, request_id: null, transport: null, ...extra });

  it('is no function user SQL may call', async () => {
    for (const sql of [`SELECT user_data.wds_audit('{}', 'x')`, `SELECT wds_audit('{}', 'x')`, `INSERT INTO burst (tag) SELECT user_data.wds_audit('{}', 'x')::text`]) {
      const r = await sqlOf(ws, sql);
      expect(r.status, sql).toBe(400);
    }
  });

  it('writes nothing without the service MAC, for another workspace, for another session, of another kind, or twice — on a session of the workspace role', async () => {
    const key = (await db.query('SELECT key FROM platform.audit_key')).rows[0].key as string;
    const mac = (text: string) => createHash('sha256').update(`${key}:${text}`).digest('hex');
    const role = workspaceRole(ws);
    const session = new pg.Client({ connectionString: env.DATABASE_URL });
    await session.connect();
    try {
      // What a session logged in as the workspace's role is (session_user), by the superuser's leave.
      await session.query(`SET SESSION AUTHORIZATION "${role}"`);
      expect((await session.query('SELECT session_user AS u')).rows[0].u).toBe(role);
      const pid = Number((await session.query('SELECT pg_backend_pid() AS p')).rows[0].p);
      const refused = (e: string, m: string) => expect(session.query('SELECT user_data.wds_audit($1, $2)', [e, m])).rejects.toMatchObject({ code: 'WDS03' });
      const forged = entry(ws, pid);
      await refused(forged, 'f'.repeat(64));
      await refused(forged, mac(entry(ws, pid)));
      const foreign = entry(other, pid);
      await refused(foreign, mac(foreign));
      // Signed, but for another backend (one seen in pg_stat_activity, say) or for none: refused here.
      for (const elsewhere of [entry(ws, pid + 1), entry(ws, undefined), entry(ws, pid, { pid: `${pid} ` }), entry(ws, pid, { pid: null })]) {
        await refused(elsewhere, mac(elsewhere));
      }
      // Signed, but of something else than a SQL statement.
      for (const kind of [entry(ws, pid, { action: 'delete_workspace' }), entry(ws, pid, { action: 'execute_sql_insert;' }), entry(ws, pid, { resource_type: 'workspace' })]) {
        await refused(kind, mac(kind));
      }
      // With the service's MAC, for its own workspace and this session: written once; the same entry again is refused by its id.
      await session.query('SELECT user_data.wds_audit($1, $2)', [forged, mac(forged)]);
      await expect(session.query('SELECT user_data.wds_audit($1, $2)', [forged, mac(forged)])).rejects.toMatchObject({ code: '23505' });
      // The role reads neither the key nor the entries.
      await expect(session.query('SELECT key FROM platform.audit_key')).rejects.toMatchObject({ code: '42501' });
      await expect(session.query('SELECT count(*) FROM platform.audit_logs')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await session.end();
    }
    const written = await db.query(`SELECT workspace_id FROM platform.audit_logs WHERE resource_id = 'forged'`);
    expect(written.rows).toEqual([{ workspace_id: ws }]);
    // And the other workspace's log never shows it, nor this workspace's entries.
    const listed = await http('GET', '/api/v1/audit-logs?limit=1000', { token, workspace: other });
    expect(listed.status).toBe(200);
    expect(listed.body.length).toBeGreaterThan(0);
    expect(listed.body.every((e: { workspace_id: string }) => e.workspace_id === other)).toBe(true);
    expect(JSON.stringify(listed.body)).not.toContain('forged');
  });
});

describe('the service\'s signed call', () => {
  it('carries quotes, comment openers, dollar quotes and backslashes in every field as values: one entry, exactly those texts', async () => {
    const key = (await db.query('SELECT key FROM platform.audit_key')).rows[0].key as string;
    const hostile = `x'); DELETE FROM platform.audit_logs; -- /* $$ $t$ \\' "q"`;
    const session = new pg.Client({ connectionString: env.DATABASE_URL });
    await session.connect();
    try {
      await session.query(`SET SESSION AUTHORIZATION "${workspaceRole(ws)}"`);
      const pid = Number((await session.query('SELECT pg_backend_pid() AS p')).rows[0].p);
      // The text as the service sends it: simple query protocol, literals escaped by pg.escapeLiteral.
      const text = auditInTransactionSql(
        { workspaceId: ws, userId, apiKeyId: null, action: 'execute_sql_insert', resourceType: 'table', resourceId: hostile, details: { tables: [hostile], note: hostile }, requestId: hostile, transport: 'http' },
        pid,
        key,
        pg.escapeLiteral,
      );
      const before = Number((await db.query('SELECT count(*) AS n FROM platform.audit_logs')).rows[0].n);
      await session.query(text);
      const after = Number((await db.query('SELECT count(*) AS n FROM platform.audit_logs')).rows[0].n);
      expect(after).toBe(before + 1);
    } finally {
      await session.end();
    }
    const r = await db.query('SELECT resource_id, request_id, details FROM platform.audit_logs WHERE resource_id = $1', [hostile]);
    expect(r.rows).toEqual([{ resource_id: hostile, request_id: hostile, details: { tables: [hostile], note: hostile } }]);
  });
});

describe('an audit entry that cannot be written', () => {
  const tagged = async (tag: string) => {
    const table = `user_data.ws_${ws.replace(/-/g, '_')}_burst`;
    return Number((await db.query(`SELECT count(*) AS n FROM ${table} WHERE tag = $1`, [tag])).rows[0].n);
  };

  it('rolls its write back and answers 503, never a 400 of the caller or a write reported done; the next write has its entry', async () => {
    const key = (await db.query('SELECT key FROM platform.audit_key')).rows[0].key as string;
    expect((await sqlOf(ws, `INSERT INTO burst (tag) VALUES ('key-read')`)).status).toBe(200);
    // The key changed under the running process (its cached one no longer signs): the service's fault.
    await db.query(`UPDATE platform.audit_key SET key = $1`, [randomBytes(32).toString('hex')]);
    try {
      const r = await sqlOf(ws, `INSERT INTO burst (tag) VALUES ('key-changed')`);
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: 'The statement was rolled back: its audit entry could not be written' });
      expect(JSON.stringify(r.body)).not.toContain('wds_audit');
      expect(await tagged('key-changed')).toBe(0);
      // It reads the key again: the next write commits, with its entry.
      const again = await sqlOf(ws, `INSERT INTO burst (tag) VALUES ('key-read-again')`);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(await tagged('key-read-again')).toBe(1);
      const entries = await db.query(`SELECT details FROM platform.audit_logs WHERE workspace_id = $1 AND action = 'execute_sql_insert' AND resource_id = 'burst' ORDER BY id DESC LIMIT 1`, [ws]);
      expect(entries.rows[0].details).toEqual({ tables: ['burst'], affected_rows: 1 });
    } finally {
      await db.query(`UPDATE platform.audit_key SET key = $1`, [key]);
    }
  });

  it("an STF run's sql() writes commit only once the run's entry is written: a failing entry keeps none of them", async () => {
    const code = Buffer.from(`sql("INSERT INTO burst (tag) VALUES ('stf-run')"); return 1;`).toString('base64');
    const run = () => http('POST', '/api/v1/stfs/instant-run', { token, workspace: ws, body: { runtime: 'javascript', code, input: null } });
    // The database refuses instant-run entries (the service's own write failing, as a full disk would).
    await db.query(`
      CREATE FUNCTION public.refuse_run_entries() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.action = 'instant_run_stf' THEN RAISE EXCEPTION 'no room for the entry'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_run_entries BEFORE INSERT ON platform.audit_logs FOR EACH ROW EXECUTE FUNCTION public.refuse_run_entries();`);
    try {
      const r = await run();
      expect(r.status, JSON.stringify(r.body)).toBeGreaterThanOrEqual(500);
      expect(await tagged('stf-run')).toBe(0);
    } finally {
      await db.query('DROP TRIGGER refuse_run_entries ON platform.audit_logs; DROP FUNCTION public.refuse_run_entries()');
    }
    const ok = await run();
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.success, JSON.stringify(ok.body)).toBe(true);
    expect(await tagged('stf-run')).toBe(1);
    const entries = await db.query(`SELECT count(*) AS n FROM platform.audit_logs WHERE workspace_id = $1 AND action = 'instant_run_stf'`, [ws]);
    expect(Number(entries.rows[0].n)).toBe(1);
  });
});
