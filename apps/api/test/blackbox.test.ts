import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { appDir, runNode } from './processes.js';

/**
 * Starts the built server the way `pnpm start` does (node dist/main.js, embedded PostgreSQL under DATA_DIR)
 * and walks through the README over real HTTP.
 */

const children: ChildProcess[] = [];
const dirs: string[] = [];

interface Started {
  url: string;
  proc: ChildProcess;
  logs: string[];
}

async function start(dataDir: string): Promise<Started> {
  const proc = spawn(process.execPath, ['dist/main.js'], {
    cwd: appDir,
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '', ADMIN_TOKEN: '', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(proc);
  const logs: string[] = [];
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${logs.join('')}`)), 60_000);
    proc.stderr?.on('data', (d) => logs.push(String(d)));
    proc.stdout?.on('data', (d) => {
      for (const line of String(d).split('\n').filter(Boolean)) {
        logs.push(line);
        try {
          const j = JSON.parse(line);
          if (j.msg === 'listening') {
            clearTimeout(timer);
            ok(j.url);
          }
        } catch {}
      }
    });
    proc.on('exit', (code) => fail(new Error(`server exited with ${code}:\n${logs.join('\n')}`)));
  });
  return { url, proc, logs };
}

async function stop(s: Started): Promise<number | null> {
  const exited = new Promise<number | null>((ok) => s.proc.on('exit', (code) => ok(code)));
  s.proc.kill('SIGTERM');
  return exited;
}

const http = async (base: string, method: string, path: string, opts: { token?: string; admin?: string; body?: unknown } = {}) => {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.admin) headers['x-admin-token'] = opts.admin;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

const run = runNode;

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('the built server, over HTTP', () => {
  test('README walk-through; data survives a restart; two instances run side by side', { timeout: 180_000 }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'wds-blackbox-'));
    dirs.push(dataDir);
    let s = await start(dataDir);
    const admin = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
    expect(s.logs.join('\n')).toContain(join(dataDir, 'admin-token'));
    expect(s.logs.join('\n')).not.toContain(admin);

    const user = await http(s.url, 'POST', '/admin/v1/users', { admin, body: { email: 'ada@example.com', name: 'Ada' } });
    expect(user.status).toBe(201);
    const session = await http(s.url, 'POST', `/admin/v1/users/${user.body.id}/sessions`, { admin, body: {} });
    const token = session.body.token as string;
    const ws = await http(s.url, 'POST', '/api/v1/workspaces', { token, body: { name: 'Acme' } });
    expect(ws.status).toBe(201);
    const member = await http(s.url, 'POST', `/api/v1/workspaces/${ws.body.id}/members`, {
      token,
      body: { email: 'bob@example.com', role: 'member' },
    });
    expect(member.status).toBe(201);
    expect(member.body.invitation.email).toBe('bob@example.com');
    const key = await http(s.url, 'POST', '/api/v1/api-keys', { token, body: { name: 'laptop agent' } });
    expect(key.status).toBe(201);
    const me = await http(s.url, 'GET', '/api/v1/auth/me', { token: key.body.key });
    expect(me.body).toEqual({ id: user.body.id, email: 'ada@example.com', name: 'Ada' });

    // A second instance with its own DATA_DIR and port, at the same time.
    const otherDir = await mkdtemp(join(tmpdir(), 'wds-blackbox-'));
    dirs.push(otherDir);
    const other = await start(otherDir);
    expect(other.url).not.toBe(s.url);
    expect((await http(other.url, 'GET', '/readyz')).status).toBe(200);
    expect((await http(other.url, 'GET', '/api/v1/auth/me', { token })).status).toBe(401);
    expect(await stop(other)).toBe(0);

    // Graceful stop, then a restart keeps users, sessions, workspaces and keys.
    expect(await stop(s)).toBe(0);
    s = await start(dataDir);
    const again = await http(s.url, 'GET', `/api/v1/workspaces/${ws.body.id}`, { token: key.body.key });
    expect(again.status).toBe(200);
    expect(again.body.name).toBe('Acme');
    const logs = s.logs.join('\n');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(key.body.key);

    // The CLI creates a user through the admin interface, reading the admin token from DATA_DIR.
    const cli = await run(['dist/cli.js', 'user', 'create', '--email', 'cy@example.com', '--name', 'Cy'], {
      DATA_DIR: dataDir,
      API_URL: s.url,
      ADMIN_TOKEN: '',
    });
    expect(cli.code).toBe(0);
    const printed = JSON.parse(cli.stdout);
    expect(printed.session_token).toMatch(/^ses_/);
    expect((await http(s.url, 'GET', '/api/v1/auth/me', { token: printed.session_token })).body.email).toBe('cy@example.com');
    const usage = await run(['dist/cli.js', 'user', 'create'], { DATA_DIR: dataDir, API_URL: s.url });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Usage');
    expect(await stop(s)).toBe(0);

    // pnpm db:migrate on the same DATA_DIR: everything is applied already.
    const migrate = await run(['dist/migrate-cli.js'], { DATA_DIR: dataDir, DATABASE_URL: '' });
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toContain('database is up to date');
  });
});
