/**
 * Backups end to end, through `pnpm cli backup|restore` (dist/cli.js): data made through the API on the embedded
 * database, backed up while that server runs, restored into a new DATA_DIR (a server that has never seen the
 * workspace roles) and served from there; then backed up with DATABASE_URL and restored into a new database.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createDb, findPgTools, openEmbeddedDatabase, sql } from '@wds/db';
import { BLOB_DELETION_LOCK, type BackupManifest, type BlobStore, createBackup, createFsBlobStore, restoreBackup } from '@wds/storage';
import { createDatabase, createServiceRoleDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { type RunningServer, startServer } from '../src/server.js';
import { Harness } from './support.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PG_CLIENT_SCRIPT = fileURLToPath(new URL('../../../scripts/postgres-client.sh', import.meta.url));
const run = promisify(execFile);

const dirs: string[] = [];
const tempDir = (tag: string) => {
  const d = mkdtempSync(join(tmpdir(), `wds-backup-${tag}-`));
  dirs.push(d);
  return d;
};

/** The CLI as `pnpm cli` runs it, with the service's configuration in `env` (none inherited from the test). */
async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'silent', PG_BIN_DIR: pgBinDir };
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...base, ...env }, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const serverConfig = (dataDir: string) =>
  loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', EMBEDDER: 'hashing', JOB_POLL_INTERVAL_MS: '500' });

interface Res {
  status: number;
  body: any;
  bytes: Buffer;
}

function client(base: string) {
  return async (method: string, path: string, opts: { token?: string; admin?: string; body?: unknown; workspace?: string } = {}): Promise<Res> => {
    const headers: Record<string, string> = {};
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.admin) headers['x-admin-token'] = opts.admin;
    if (opts.workspace) headers['x-workspace-id'] = opts.workspace;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(new URL(path, base), { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    const bytes = Buffer.from(await res.arrayBuffer());
    let body: unknown = bytes.toString('utf8');
    try {
      body = JSON.parse(body as string);
    } catch {}
    return { status: res.status, body, bytes };
  };
}

let pgBinDir = '';
let source: RunningServer | undefined;
let restored: RunningServer | undefined;

// What the source holds, to find again after each restore.
const fileBytes = randomBytes(300_000);
const world = {} as {
  admin: string;
  ada: { id: string; token: string };
  bob: { id: string; token: string };
  ws: string;
  apiKey: string;
  fileId: string;
  twinId: string;
};

const sqlAs = (api: ReturnType<typeof client>, token: string, sql: string) => api('POST', `/api/v1/workspaces/${world.ws}/sql`, { token, body: { sql } });
const titles = (r: Res) => (r.body.rows as { title: string }[]).map((row) => row.title).sort();

/** What must hold on any restored copy: credentials, policies, the workspace's SQL (its role), the file bytes. */
async function checkRestored(api: ReturnType<typeof client>, roleDbUrl: string) {
  const me = await api('GET', '/api/v1/auth/me', { token: world.apiKey });
  expect(me.status).toBe(200);
  expect(me.body.id).toBe(world.ada.id);

  // The policy still filters: each sees only their own tickets.
  const adaRows = await sqlAs(api, world.ada.token, 'SELECT title FROM tickets');
  expect(adaRows.status, JSON.stringify(adaRows.body)).toBe(200);
  expect(titles(adaRows)).toEqual(['ada 1', 'ada 2']);
  expect(titles(await sqlAs(api, world.bob.token, 'SELECT title FROM tickets'))).toEqual(['bob 1']);

  // The workspace's role exists and owns its table: writes and DDL run as it.
  const insert = await sqlAs(api, world.ada.token, `INSERT INTO tickets (owner_id, title) VALUES ('${world.ada.id}', 'ada after restore')`);
  expect(insert.status, JSON.stringify(insert.body)).toBe(200);
  expect(titles(await sqlAs(api, world.ada.token, 'SELECT title FROM tickets'))).toEqual(['ada 1', 'ada 2', 'ada after restore']);
  expect((await sqlAs(api, world.ada.token, 'CREATE TABLE notes (body text)')).status).toBe(200);
  const c = new pg.Client({ connectionString: roleDbUrl });
  await c.connect();
  try {
    const { rows } = await c.query(
      `SELECT c.relname, pg_get_userbyid(c.relowner) AS owner FROM pg_class c
        WHERE c.relnamespace = 'user_data'::regnamespace AND c.relkind = 'r' AND c.relname LIKE $1 ORDER BY 1`,
      [`ws_${world.ws.replace(/-/g, '_')}_%`],
    );
    const role = `wds_ws_${world.ws.replace(/-/g, '')}`;
    expect(rows.map((r) => r.owner)).toEqual([role, role]);
    // Migration 0008's wall, which pg_dump does not carry for the built-in `sql` language, stands again.
    const langs = await c.query(`SELECT has_language_privilege('public', 'sql', 'USAGE') AS sql, has_language_privilege('public', 'plpgsql', 'USAGE') AS plpgsql`);
    expect(langs.rows[0]).toEqual({ sql: false, plpgsql: false });
  } finally {
    await c.end();
  }

  for (const id of [world.fileId, world.twinId]) {
    const d = await api('GET', `/api/v1/workspaces/${world.ws}/files/${id}/download`, { token: world.bob.token, workspace: world.ws });
    expect(d.status, d.bytes.toString('utf8', 0, 300)).toBe(200);
    expect(d.bytes.equals(fileBytes)).toBe(true);
  }
}

beforeAll(async () => {
  // The client programs, installed when missing (Debian, root): what `pnpm cli backup` itself would do.
  const { stdout } = await run('bash', [PG_CLIENT_SCRIPT], { timeout: 10 * 60_000 });
  pgBinDir = /PG_BIN_DIR=(\S+)/.exec(stdout)?.[1] ?? '';
  expect(pgBinDir).not.toBe('');
}, 11 * 60_000);

afterAll(async () => {
  await restored?.close();
  await source?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('pnpm cli backup / restore', () => {
  const srcDir = tempDir('src');
  const dstDir = tempDir('dst');
  const backupDir = join(tempDir('out'), 'backup');

  it('embedded → embedded: a backup taken while the server runs restores into a new DATA_DIR', async () => {
    source = await startServer(serverConfig(srcDir), createLogger('silent'));
    const api = client(source.url);
    world.admin = (await readFile(join(srcDir, 'admin-token'), 'utf8')).trim();
    for (const name of ['ada', 'bob'] as const) {
      const u = await api('POST', '/admin/v1/users', { admin: world.admin, body: { email: `${name}@example.test`, name } });
      const s = await api('POST', `/admin/v1/users/${u.body.id}/sessions`, { admin: world.admin, body: {} });
      world[name] = { id: u.body.id, token: s.body.token };
    }
    const ws = await api('POST', '/api/v1/workspaces', { token: world.ada.token, body: { name: 'Acme' } });
    expect(ws.status).toBe(201);
    world.ws = ws.body.id;
    expect((await api('POST', `/api/v1/workspaces/${world.ws}/members`, { token: world.ada.token, body: { email: 'bob@example.test', role: 'member' } })).status).toBe(201);
    expect((await sqlAs(api, world.ada.token, 'CREATE TABLE tickets (owner_id uuid, title text)')).status).toBe(200);
    const group = await api('POST', '/api/v1/policy-groups', {
      token: world.ada.token,
      workspace: world.ws,
      body: { name: 'everyone', user_ids: [world.ada.id, world.bob.id] },
    });
    for (const operation of ['select', 'insert']) {
      const p = await api('POST', '/api/v1/policies', {
        token: world.ada.token,
        workspace: world.ws,
        body: { name: `own ${operation}`, policy_group_id: group.body.id, mode: 'allow', table_name: 'tickets', operation, condition: { owner_id: '$user_id' } },
      });
      expect(p.status).toBe(201);
    }
    for (const [who, title] of [['ada', 'ada 1'], ['ada', 'ada 2'], ['bob', 'bob 1']] as const) {
      const r = await sqlAs(api, world[who].token, `INSERT INTO tickets (owner_id, title) VALUES ('${world[who].id}', '${title}')`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const key = await api('POST', '/api/v1/api-keys', { token: world.ada.token, body: { name: 'agent' } });
    world.apiKey = key.body.key;
    // Two files of the same content: the backup keeps the bytes once, the restore gives each file its blob.
    for (const name of ['fileId', 'twinId'] as const) {
      const f = await api('POST', `/api/v1/workspaces/${world.ws}/files`, {
        token: world.ada.token,
        workspace: world.ws,
        body: { filename: `${name}.bin`, content_type: 'application/octet-stream', content: fileBytes.toString('base64') },
      });
      expect(f.status).toBe(201);
      world[name] = f.body.id;
    }

    const b = await cli(['backup', backupDir], { DATA_DIR: srcDir });
    expect(b.code, b.stderr).toBe(0);
    expect(b.stderr).toContain('using the running embedded PostgreSQL');
    const manifest = JSON.parse(await readFile(join(backupDir, 'manifest.json'), 'utf8')) as BackupManifest;
    expect(manifest).toMatchObject({ format: 'wds-backup', format_version: 1, blobs: { count: 2, bytes: fileBytes.length } });
    expect(manifest.database.server_version).toMatch(/^15\./);
    expect(manifest.database.roles.map((r) => r.name)).toContain(`wds_ws_${world.ws.replace(/-/g, '')}`);
    expect(manifest.files.map((f) => f.name).sort()).toEqual(['admin-token', 'secrets-key']);

    const r = await cli(['restore', backupDir], { DATA_DIR: dstDir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('started the embedded PostgreSQL');
    // A second restore finds the target in use and changes nothing.
    const again = await cli(['restore', backupDir], { DATA_DIR: dstDir });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('not empty');

    await source.close();
    source = undefined;
    restored = await startServer(serverConfig(dstDir), createLogger('silent'));
    expect((await readFile(join(dstDir, 'admin-token'), 'utf8')).trim()).toBe(world.admin);
    const db = await openEmbeddedDatabase(dstDir);
    try {
      await checkRestored(client(restored.url), db.url);
    } finally {
      await db.close();
    }
  }, 240_000);

  it('the dump and the blobs are one snapshot: a file added while blobs are copied is in neither; deletion waits', async () => {
    const h = await Harness.create();
    const tools = await findPgTools({ PG_BIN_DIR: pgBinDir });
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      const upload = (content: Buffer) =>
        h.call('POST', `/api/v1/workspaces/${ws.id}/files`, {
          token: owner.token,
          workspace: ws.id,
          body: { filename: 'f.bin', content: content.toString('base64') },
        });
      const before = await upload(randomBytes(1000));
      let late: string | undefined;
      let deletionFree: boolean | undefined;
      const blobs: BlobStore = {
        ...h.services.blobs,
        get: async (key, range) => {
          if (late === undefined) {
            late = (await upload(randomBytes(1000))).body.id;
            const r = await sql<{ free: boolean }>`SELECT pg_try_advisory_lock(${BLOB_DELETION_LOCK}) AS free`.execute(h.services.db);
            deletionFree = r.rows[0]?.free;
          }
          return h.services.blobs.get(key, range);
        },
      };
      const dir = join(tempDir('snap'), 'b');
      const manifest = await createBackup({ databaseUrl: h.url, blobs, dir, tools });
      expect(late).toBeDefined();
      expect(deletionFree).toBe(false);
      expect(manifest.blobs.items.map((b) => b.sha256)).toEqual([before.body.sha256]);

      const url = await createDatabase(inject('pgServerUrl'), { prefix: 'snap' });
      const blobDir = tempDir('snap-blobs');
      await restoreBackup({ databaseUrl: url, blobs: createFsBlobStore(blobDir), dir, tools });
      const { db } = createDb(url, { max: 1 });
      try {
        const rows = await db.selectFrom('platform.files').select(['id', 'blob_key']).where('workspace_id', '=', ws.id).execute();
        expect(rows.map((r) => r.id)).toEqual([before.body.id]);
        expect(await createFsBlobStore(blobDir).has(rows[0]!.blob_key)).toBe(true);
      } finally {
        await db.destroy();
      }
    } finally {
      await h.close();
    }
  }, 120_000);

  it('a blob missing from the store is listed and the backup finishes (exit 3); the rest restores, the lost file answers 404', async () => {
    const h = await Harness.create();
    const tools = await findPgTools({ PG_BIN_DIR: pgBinDir });
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      const upload = (content: Buffer) =>
        h.call('POST', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id, body: { filename: 'f.bin', content: content.toString('base64') } });
      const kept = await upload(randomBytes(1000));
      const lost = await upload(randomBytes(1000));
      // Its bytes went to another process's store (or were removed by hand): the record outlives them.
      const { db: sdb } = createDb(h.url, { max: 1 });
      const lostKey = (await sdb.selectFrom('platform.files').select('blob_key').where('id', '=', lost.body.id).executeTakeFirstOrThrow()).blob_key;
      await sdb.destroy();
      await h.services.blobs.delete(lostKey);

      const dir = join(tempDir('missing'), 'b');
      const b = await cli(['backup', dir], { DATABASE_URL: h.url, STORAGE_DIR: h.blobDir });
      expect(b.code, b.stderr).toBe(3);
      expect(JSON.parse(b.stdout)).toMatchObject({ blobs: 1, missing_blobs: 1 });
      expect(b.stderr).toContain(`blob ${lostKey}`);
      const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as BackupManifest;
      expect(manifest.blobs.items.map((x) => x.sha256)).toEqual([kept.body.sha256]);
      expect(manifest.blobs.missing?.map((x) => x.key)).toEqual([lostKey]);

      const url = await createDatabase(inject('pgServerUrl'), { prefix: 'missing' });
      const blobDir = tempDir('missing-blobs');
      const logs: string[] = [];
      await restoreBackup({ databaseUrl: url, blobs: createFsBlobStore(blobDir), dir, tools, log: (m) => logs.push(m) });
      expect(logs.some((l) => l.includes(lostKey) && l.includes('without content'))).toBe(true);
      const back = await Harness.create({ STORAGE_DIR: blobDir }, url);
      try {
        const download = (id: string) => back.call('GET', `/api/v1/workspaces/${ws.id}/files/${id}/download`, { token: owner.token, workspace: ws.id });
        expect((await download(kept.body.id)).status).toBe(200);
        const gone = await download(lost.body.id);
        expect(gone.status).toBe(404);
        expect(JSON.stringify(gone.body)).not.toMatch(/blobs\/|ENOENT|\/tmp\//);
      } finally {
        await back.close();
      }
    } finally {
      await h.close();
    }
  }, 120_000);

  it('a backup that fails midway leaves nothing behind: a directory it made is gone, an empty one it was given stays empty', async () => {
    const h = await Harness.create();
    const tools = await findPgTools({ PG_BIN_DIR: pgBinDir });
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      for (let i = 0; i < 3; i++) {
        await h.call('POST', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id, body: { filename: `f${i}.bin`, content: randomBytes(2000).toString('base64') } });
      }
      // One blob's bytes differ from its record (damaged on disk): that fails the backup, after the dump and other blobs.
      let served = 0;
      const damaged: BlobStore = {
        ...h.services.blobs,
        get: async (key, range) => {
          if (++served === 2) return Readable.from([randomBytes(2000)]);
          return h.services.blobs.get(key, range);
        },
      };
      const made = join(tempDir('failed'), 'new', 'b');
      await expect(createBackup({ databaseUrl: h.url, blobs: damaged, dir: made, tools })).rejects.toThrow(/does not match its record/);
      expect(existsSync(join(made, '..'))).toBe(false);
      const given = tempDir('failed-given');
      served = 0;
      await expect(createBackup({ databaseUrl: h.url, blobs: damaged, dir: given, tools })).rejects.toThrow(/does not match its record/);
      expect(readdirSync(given)).toEqual([]);
    } finally {
      await h.close();
    }
  }, 120_000);

  it('DATABASE_URL → DATABASE_URL: restores into a new database of another server as a role that is no superuser', async () => {
    expect(restored, 'the first test leaves the restored server running').toBeDefined();
    const running = await openEmbeddedDatabase(dstDir);
    const secondBackup = join(tempDir('out2'), 'b');
    const b = await cli(['backup', secondBackup], { DATABASE_URL: running.url, STORAGE_DIR: join(dstDir, 'blobs') });
    await running.close();
    expect(b.code, b.stderr).toBe(0);

    // The restoring service is no superuser, as on a managed database: a role with CREATEROLE owning its database.
    const url = await createServiceRoleDatabase(inject('pgServerUrl'));
    const blobDir = tempDir('blobs');
    const r = await cli(['restore', secondBackup], { DATABASE_URL: url, STORAGE_DIR: blobDir });
    expect(r.code, r.stderr).toBe(0);
    const h = await Harness.create({ STORAGE_DIR: blobDir }, url);
    try {
      const api = async (method: string, path: string, opts: { token?: string; body?: unknown; workspace?: string } = {}): Promise<Res> => {
        const res = await h.call(method, path, opts);
        return { ...res, bytes: Buffer.from(typeof res.body === 'string' ? res.body : JSON.stringify(res.body), 'latin1') };
      };
      // The policy filters, and the workspace role (new to this server) runs the SQL; rows include the first restore's.
      expect(titles(await sqlAs(api, world.bob.token, 'SELECT title FROM tickets'))).toEqual(['bob 1']);
      expect(titles(await sqlAs(api, world.ada.token, 'SELECT title FROM tickets'))).toEqual(['ada 1', 'ada 2', 'ada after restore']);
      const d = await h.app.request(`/api/v1/workspaces/${world.ws}/files/${world.fileId}/download`, {
        headers: { authorization: `Bearer ${world.ada.token}`, 'x-workspace-id': world.ws },
      });
      expect(d.status, await d.clone().text()).toBe(200);
      expect(Buffer.from(await d.arrayBuffer()).equals(fileBytes)).toBe(true);
      // Row capture works there, its function owned by its own role again (not the restoring service).
      const fn = await h.services.pool.query("SELECT proowner::regrole::text AS owner FROM pg_proc WHERE oid = 'user_data.wds_capture_rows()'::regprocedure");
      expect(fn.rows[0].owner).toBe('wds_row_capture');
      const w = await sqlAs(api, world.ada.token, "INSERT INTO tickets (owner_id, title) VALUES ('" + world.ada.id + "', 'captured')");
      expect(w.status, JSON.stringify(w.body)).toBe(200);
      const captured = await h.services.pool.query("SELECT row->>'title' AS title FROM platform.row_changes WHERE workspace_id = $1 AND table_name = 'tickets'", [world.ws]);
      expect(captured.rows.map((r) => r.title)).toContain('captured');
    } finally {
      await h.close();
    }
  }, 240_000);
});
