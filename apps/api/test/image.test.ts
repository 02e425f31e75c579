/**
 * The container image (docker/Dockerfile), built by scripts/build-image.sh with the project's podman and run with
 * no network at all. A container with `--network none` cannot be reached through a port mapping, so the checks
 * run inside it with `podman exec … node -e`: /readyz, and one workspace SQL statement through the API with the
 * admin token the service generated in /data; and a backup with the image's own CLI. The container engine comes from the globalSetup
 * (container-engine-setup): when it cannot start, this file fails with the rest of the suite, never skips.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ENGINE_DIR = process.env.WDS_ENGINE_DIR ?? join(ROOT, '.cache/container-engine');
const IMAGE = 'localhost/wds-api:test';
const CONTAINER = `wds-image-test-${randomBytes(4).toString('hex')}`;
const run = promisify(execFile);

/** The podman CLI on the engine's own storage and configuration (as scripts/container-engine.sh runs it). */
async function podman(args: string[], timeout = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('podman', ['--root', join(ENGINE_DIR, 'storage'), '--runroot', join(ENGINE_DIR, 'runroot'), ...args], {
      env: { ...process.env, CONTAINERS_CONF: join(ENGINE_DIR, 'containers.conf') },
      timeout,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message };
  }
}

/** Runs a script with node inside the container; its stdout, parsed as JSON. */
async function inside<T = any>(script: string): Promise<T> {
  const r = await podman(['exec', CONTAINER, 'node', '-e', script]);
  if (r.code !== 0) throw new Error(`node -e in the container failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

const READY = `fetch('http://127.0.0.1:8080/readyz').then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })), (e) => console.log(JSON.stringify({ status: 0, body: String(e) })))`;

// A user, a session, a workspace and one SQL statement, through the admin token the service wrote into /data.
const SQL_SMOKE = `
(async () => {
  const base = 'http://127.0.0.1:8080';
  const admin = require('node:fs').readFileSync('/data/admin-token', 'utf8').trim();
  const call = async (path, body, headers) => {
    const r = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const json = await r.json();
    if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + JSON.stringify(json));
    return json;
  };
  const user = await call('/admin/v1/users', { email: 'smoke@example.test', name: 'Smoke' }, { 'x-admin-token': admin });
  const session = await call('/admin/v1/users/' + user.id + '/sessions', {}, { 'x-admin-token': admin });
  const auth = { authorization: 'Bearer ' + session.token };
  const ws = await call('/api/v1/workspaces', { name: 'Smoke' }, auth);
  const result = await call('/api/v1/workspaces/' + ws.id + '/sql', { sql: 'SELECT 6 * 7 AS answer' }, auth);
  console.log(JSON.stringify({ rows: result.rows }));
})().catch((e) => { console.error(e.message); process.exit(1); });`;

// Who runs the service and the database, and who owns /data.
const WHO = `
const fs = require('node:fs');
const uids = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).map((p) => {
  try {
    const status = fs.readFileSync('/proc/' + p + '/status', 'utf8');
    return { name: /^Name:\\s+(\\S+)/m.exec(status)[1], uid: Number(/^Uid:\\s+(\\d+)/m.exec(status)[1]) };
  } catch { return undefined; }
}).filter(Boolean);
console.log(JSON.stringify({ node: process.getuid(), data: fs.statSync('/data').uid, postgres: [...new Set(uids.filter((p) => p.name === 'postgres').map((p) => p.uid))] }));`;

describe('the container image', () => {
  beforeAll(async () => {
    expect(inject('dockerHost')).toMatch(/^unix:\/\//);
    // The test run has built the workspace already (turbo: test depends on build).
    const { stdout } = await run('bash', [join(ROOT, 'scripts/build-image.sh'), '--no-build', '--tag', IMAGE], {
      timeout: 15 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).toContain(`IMAGE=${IMAGE}`);
    const started = await podman(['run', '-d', '--name', CONTAINER, '--network', 'none', IMAGE]);
    expect(started.code, started.stderr).toBe(0);
  }, 16 * 60_000);

  afterAll(async () => {
    await podman(['rm', '-f', '-t', '0', CONTAINER]);
  });

  it('runs as a non-root user with /data its own; embedded PostgreSQL comes up and /readyz answers', async () => {
    const config = JSON.parse((await podman(['image', 'inspect', IMAGE, '--format', '{{json .Config}}'])).stdout);
    expect(config.User).toBe('10001:10001');
    expect(config.Env).toContain('DATA_DIR=/data');
    const health = JSON.parse((await podman(['inspect', CONTAINER, '--format', '{{json .Config.Healthcheck}}'])).stdout);
    expect(health.Test.join(' ')).toContain('/readyz');

    // First start: initdb, migrations, the admin token. Poll; a bounded number of tries, no time assertion.
    let ready: { status: number; body: string } = { status: 0, body: '' };
    for (let attempt = 0; attempt < 240 && ready.status !== 200; attempt++) {
      const state = (await podman(['inspect', CONTAINER, '--format', '{{.State.Status}}'])).stdout.trim();
      if (state !== 'running') throw new Error(`the container is ${state}:\n${(await podman(['logs', CONTAINER])).stderr}`);
      ready = await inside(READY).catch(() => ({ status: 0, body: '' }));
      if (ready.status !== 200) await new Promise((r) => setTimeout(r, 500));
    }
    expect(ready, (await podman(['logs', CONTAINER])).stdout).toEqual({ status: 200, body: '{"status":"ok"}' });

    const who = await inside<{ node: number; data: number; postgres: number[] }>(WHO);
    expect(who).toEqual({ node: 10001, data: 10001, postgres: [10001] });
    // The image's HEALTHCHECK, run once (podman schedules it with systemd timers, which this machine lacks).
    const check = await podman(['healthcheck', 'run', CONTAINER]);
    expect(check.code, check.stderr).toBe(0);
  }, 180_000);

  it('serves workspace SQL through the API (from inside: the container has no network)', async () => {
    expect(await inside(SQL_SMOKE)).toEqual({ rows: [{ answer: 42 }] });
    const net = await podman(['inspect', CONTAINER, '--format', '{{.HostConfig.NetworkMode}}']);
    expect(net.stdout.trim()).toBe('none');
  }, 60_000);

  it('backs up from inside: the CLI finds the running embedded server and the image has pg_dump', async () => {
    const b = await podman(['exec', CONTAINER, 'node', 'dist/cli.js', 'backup', '/data/backup-smoke']);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stderr).toContain('using the running embedded PostgreSQL');
    const manifest = await inside(`console.log(require('node:fs').readFileSync('/data/backup-smoke/manifest.json', 'utf8'))`);
    expect(manifest).toMatchObject({ format: 'wds-backup', format_version: 1, blobs: { count: 0 } });
    // The workspace's role, the one row capture's trigger function runs as (migration 0016), and the one a write's
    // audit entry is written as (0022).
    expect(manifest.database.roles.map((r: { name: string }) => r.name.replace(/^wds_ws_[0-9a-f]{32}$/, 'wds_ws_…')).sort()).toEqual(['wds_audit_writer', 'wds_row_capture', 'wds_ws_…']);
    expect(manifest.files.map((f: { name: string }) => f.name).sort()).toEqual(['admin-token', 'secrets-key']);
  }, 60_000);
});
