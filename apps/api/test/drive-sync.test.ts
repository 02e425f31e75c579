import { type FakeDrive, recordingListener, startFakeDrive } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, Harness, until } from './support.js';

/**
 * Drive sync (docs/providers.md#drive-sync) and the SaaS proxy (docs/providers.md#saas-proxy) over HTTP, against a fake
 * Google-Drive-like provider on 127.0.0.1: workspace from the payload with membership checked, the credential injected
 * and never shown, the background sync through the job queue, materialize into storage, and the proxy's refusals and
 * caps.
 */
let fake: FakeDrive;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeDrive();
  h = await Harness.create({
    PROVIDERS: JSON.stringify({
      drive_workspace: { base_url: fake.url, token_url: fake.tokenUrl, client_id: fake.clientId, client_secret: fake.clientSecret },
    }),
    PROVIDERS_ALLOW_HTTP_LOOPBACK: 'true',
    OUTBOUND_ALLOWLIST: '127.0.0.1',
  });
  fake.addFolder('top', 'Projects', 'root');
  fake.addFolder('sub', 'Drafts', 'top');
  fake.addFile({ id: 'plan', name: 'plan.txt', mimeType: 'text/plain', parents: ['top'], content: 'The plan: ship in May.', modifiedTime: '2024-05-01T10:00:00.000Z' });
  fake.addFile({
    id: 'memo',
    name: 'Memo',
    mimeType: 'application/vnd.google-apps.document',
    parents: ['sub'],
    exports: { 'text/plain': 'Memo text exported' },
    modifiedTime: '2024-05-02T10:00:00.000Z',
  });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

async function connectedWorkspace() {
  const owner = await h.user('owner');
  const ws = await h.workspace(owner.token);
  const grant = fake.grant();
  const put = await h.call('PUT', `/admin/v1/workspaces/${ws.id}/credentials/drive_workspace`, {
    headers: { 'x-admin-token': ADMIN_TOKEN },
    body: { value: grant.credential },
  });
  expect(put.status).toBe(204);
  return { owner, ws, grant };
}


describe('drive sync', () => {
  it('roots, a background sync, status with node count, read, picker and materialize', async () => {
    const { owner, ws, grant } = await connectedWorkspace();
    const q = `workspace_id=${ws.id}`;
    const add = await h.call('POST', '/api/v1/drive-sync/roots', {
      token: owner.token,
      body: { workspace_id: ws.id, drive_id: 'top', drive_type: 'folder', name: 'Projects' },
    });
    expect(add.status).toBe(201);
    expect((await h.call('POST', '/api/v1/drive-sync/roots', { token: owner.token, body: { workspace_id: ws.id, drive_id: 'top', drive_type: 'folder', name: 'x' } })).status).toBe(409);
    expect((await h.call('POST', '/api/v1/drive-sync/roots', { token: owner.token, body: { workspace_id: ws.id, drive_id: 'x', drive_type: 'usb', name: 'x' } })).status).toBe(400);
    expect((await h.call('GET', `/api/v1/drive-sync/roots?${q}`, { token: owner.token })).body).toHaveLength(1);

    const sync = await h.call('POST', '/api/v1/drive-sync/sync', { token: owner.token, body: { workspace_id: ws.id } });
    expect(sync.status).toBe(202);
    expect(sync.body.started).toBe(true);
    const status = await until(async () => {
      const s = await h.call('GET', `/api/v1/drive-sync/status?${q}`, { token: owner.token });
      return s.body.state === 'completed' ? s.body : undefined;
    });
    expect(status.node_count).toBe(3); // Drafts, plan.txt, Memo
    expect(status.last_synced_at).toEqual(expect.any(String));
    expect(status.roots).toHaveLength(1);
    expect(JSON.stringify(status)).not.toContain(grant.accessToken);

    const read = await h.call('POST', '/api/v1/drive-sync/read', { token: owner.token, body: { workspace_id: ws.id, drive_file_id: 'memo' } });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: 'memo', content: 'Memo text exported', truncated: false });

    const picker = await h.call('GET', `/api/v1/drive-sync/picker?${q}&parent=top`, { token: owner.token });
    expect(picker.status).toBe(200);
    expect(picker.body.folders).toEqual([{ id: 'sub', name: 'Drafts' }]);
    fake.drives.push({ id: 'team-drive', name: 'Team' });
    const withDrives = await h.call('GET', `/api/v1/drive-sync/picker?${q}&shared_drives=true`, { token: owner.token });
    expect(withDrives.status).toBe(200);
    expect(withDrives.body.folders).toEqual([{ id: 'top', name: 'Projects' }]);
    expect(withDrives.body.shared_drives).toEqual([{ id: 'team-drive', name: 'Team' }]);
    // Not asked in the query, the workspace's include_shared_drives setting decides.
    const byDefault = await h.call('GET', `/api/v1/drive-sync/picker?${q}`, { token: owner.token });
    expect(byDefault.body.shared_drives).toBeUndefined();
    const put = await h.call('PUT', '/api/v1/drive-sync/config', { token: owner.token, body: { workspace_id: ws.id, include_shared_drives: true } });
    expect(put.status).toBe(200);
    const bySetting = await h.call('GET', `/api/v1/drive-sync/picker?${q}`, { token: owner.token });
    expect(bySetting.body.shared_drives).toEqual([{ id: 'team-drive', name: 'Team' }]);
    const refused = await h.call('GET', `/api/v1/drive-sync/picker?${q}&shared_drives=false`, { token: owner.token });
    expect(refused.body.shared_drives).toBeUndefined();
    fake.drives.pop();

    const mat = await h.call('POST', '/api/v1/drive-sync/materialize', { token: owner.token, body: { workspace_id: ws.id, drive_file_id: 'plan' } });
    expect(mat.status).toBe(201);
    const dl = await h.app.request(`/api/v1/workspaces/${ws.id}/files/${mat.body.id}/download`, {
      headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id },
    });
    expect(await dl.text()).toBe('The plan: ship in May.');

    const root = add.body.id as string;
    expect((await h.call('DELETE', `/api/v1/drive-sync/roots/${root}?${q}`, { token: owner.token })).status).toBe(204);
    expect((await h.call('DELETE', `/api/v1/drive-sync/roots/${root}?${q}`, { token: owner.token })).status).toBe(404);
  });

  it('config round-trips; members read, admins change; storage editors materialize', async () => {
    const { owner, ws } = await connectedWorkspace();
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    const get = await h.call('GET', `/api/v1/drive-sync/config?workspace_id=${ws.id}`, { token: member.token });
    expect(get.status).toBe(200);
    expect(get.body.settings).toEqual({ include_shared_drives: false, max_file_bytes: 100 * 1024 * 1024 });
    const denied = await h.call('PUT', '/api/v1/drive-sync/config', { token: member.token, body: { workspace_id: ws.id, include_shared_drives: true } });
    expect(denied.status).toBe(403);
    const put = await h.call('PUT', '/api/v1/drive-sync/config', { token: owner.token, body: { workspace_id: ws.id, include_shared_drives: true } });
    expect(put.status).toBe(200);
    expect(put.body.settings.include_shared_drives).toBe(true);
    const bad = await h.call('PUT', '/api/v1/drive-sync/config', { token: owner.token, body: { workspace_id: ws.id, surprise: 1 } });
    expect(bad.status).toBe(400);
    const mat = await h.call('POST', '/api/v1/drive-sync/materialize', { token: member.token, body: { workspace_id: ws.id, drive_file_id: 'plan' } });
    expect(mat.status).toBe(403);
    expect((await h.call('POST', '/api/v1/drive-sync/roots', { token: member.token, body: { workspace_id: ws.id, drive_id: 'top', drive_type: 'folder', name: 'P' } })).status).toBe(403);
  });

  it('workspace_id is required and checked for membership; no credential is a 409 naming the provider', async () => {
    const { owner, ws } = await connectedWorkspace();
    expect((await h.call('GET', '/api/v1/drive-sync/status', { token: owner.token })).status).toBe(400);
    expect((await h.call('GET', '/api/v1/drive-sync/status?workspace_id=nope', { token: owner.token })).status).toBe(400);
    expect((await h.call('POST', '/api/v1/drive-sync/sync', { token: owner.token, body: {} })).status).toBe(400);
    expect((await h.call('GET', `/api/v1/drive-sync/status?workspace_id=${ws.id}`)).status).toBe(401);
    // A stranger names ws: refused, and nothing of ws comes back.
    const stranger = await h.user('stranger');
    for (const [method, path, body] of [
      ['GET', `/api/v1/drive-sync/status?workspace_id=${ws.id}`, undefined],
      ['GET', `/api/v1/drive-sync/picker?workspace_id=${ws.id}`, undefined],
      ['POST', '/api/v1/drive-sync/read', { workspace_id: ws.id, drive_file_id: 'plan' }],
      ['POST', '/api/v1/drive-sync/sync', { workspace_id: ws.id }],
      ['POST', '/api/v1/saas-proxy', { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files' }],
    ] as const) {
      const r = await h.call(method, path, { token: stranger.token, ...(body ? { body } : {}) });
      expect(r.status, path).toBe(403);
      expect(JSON.stringify(r.body)).not.toContain('plan');
    }
    // The stranger's own workspace has no credential.
    const own = await h.workspace(stranger.token);
    const sync = await h.call('POST', '/api/v1/drive-sync/sync', { token: stranger.token, body: { workspace_id: own.id } });
    expect(sync.status).toBe(409);
    expect(sync.body.error).toMatch(/drive_workspace/);
    const read = await h.call('POST', '/api/v1/drive-sync/read', { token: stranger.token, body: { workspace_id: own.id, drive_file_id: 'plan' } });
    expect(read.status).toBe(409);
    expect(read.body.error).toMatch(/drive_workspace/);
  });

  it('a second sync while one is queued or running does not start twice; a provider error shows in status', async () => {
    const { owner, ws } = await connectedWorkspace();
    await h.call('POST', '/api/v1/drive-sync/roots', { token: owner.token, body: { workspace_id: ws.id, drive_id: 'top', drive_type: 'folder', name: 'P' } });
    const held = fake.hold('/drive/v3/files');
    const first = await h.call('POST', '/api/v1/drive-sync/sync', { token: owner.token, body: { workspace_id: ws.id } });
    expect(first.body.started).toBe(true);
    await held.reached;
    const second = await h.call('POST', '/api/v1/drive-sync/sync', { token: owner.token, body: { workspace_id: ws.id } });
    expect(second.status).toBe(202);
    expect(second.body).toEqual({ started: false, state: 'running' });
    fake.fail({ path: '/drive/v3/files', status: 403, body: { error: { code: 403, message: 'Rate Limit Exceeded', errors: [{ reason: 'rateLimitExceeded' }] } } });
    held.release();
    const status = await until(async () => {
      const s = await h.call('GET', `/api/v1/drive-sync/status?workspace_id=${ws.id}`, { token: owner.token });
      return s.body.state === 'failed' ? s.body : undefined;
    });
    expect(status.last_sync_error).toMatch(/403/);
  });
});

describe('SaaS proxy', () => {
  const proxy = (token: string, body: Record<string, unknown>) => h.call('POST', '/api/v1/saas-proxy', { token, body });

  it('injects the credential and returns { status, headers, body }; audit keeps no token or body', async () => {
    const { owner, ws, grant } = await connectedWorkspace();
    const r = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: "/drive/v3/files?q='top' in parents", headers: {}, body: null, file_id: null });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe(200);
    const files = JSON.parse(r.body.body).files.map((f: { id: string }) => f.id).sort();
    expect(files).toEqual(['plan', 'sub']);
    const last = fake.apiRequests().at(-1);
    expect(last?.headers.authorization).toBe(`Bearer ${grant.accessToken}`);
    expect(JSON.stringify(r.body)).not.toContain(grant.accessToken);
    const audit = await h.call('GET', '/api/v1/audit-logs?action=saas_proxy', { token: owner.token, workspace: ws.id });
    expect(audit.body.entries?.[0]?.details ?? audit.body[0]?.details ?? audit.body.items?.[0]?.details).toMatchObject({
      provider: 'drive_workspace',
      method: 'GET',
      path: '/drive/v3/files',
      status: 200,
    });
    expect(JSON.stringify(audit.body)).not.toContain(grant.accessToken);
    expect(JSON.stringify(audit.body)).not.toContain('top');
  });

  it("a provider's answer that repeats the credential reaches the member with it redacted: body, headers, error bodies", async () => {
    const { owner, ws, grant } = await connectedWorkspace();
    // A provider that echoes the request's Authorization (a debug endpoint, an error quoting the request).
    fake.route('GET', '/drive/v3/tell', (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': String(req.headers.authorization) });
      res.end(JSON.stringify({ you_sent: req.headers.authorization, twice: `${req.headers.authorization}|${req.headers.authorization}` }));
    });
    fake.route('GET', '/drive/v3/refuse', (req, res) => void res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request with ${req.headers.authorization}`));
    const r = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/tell' });
    expect(r.status).toBe(200);
    expect(fake.apiRequests().at(-1)?.headers.authorization).toBe(`Bearer ${grant.accessToken}`);
    expect(JSON.stringify(r.body)).not.toContain(grant.accessToken);
    expect(JSON.parse(r.body.body)).toEqual({ you_sent: 'Bearer [redacted]', twice: 'Bearer [redacted]|Bearer [redacted]' });
    expect(r.body.headers['x-echo']).toBe('Bearer [redacted]');
    const dl = await h.call('POST', '/api/v1/saas-proxy-download', {
      token: owner.token,
      body: { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/refuse' },
    });
    expect(dl.status).toBe(200);
    expect(dl.body).toMatchObject({ status: 400, error_body: 'bad request with Bearer [redacted]' });
  });

  it('refuses header overrides and path escapes, and never reaches another host', async () => {
    const { owner, ws } = await connectedWorkspace();
    const trap = await recordingListener('127.0.0.2');
    try {
      for (const headers of [{ Authorization: 'Bearer mine' }, { cookie: 'a=b' }, { Host: '127.0.0.2' }, { 'proxy-authorization': 'x' }]) {
        const r = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files', headers });
        expect(r.status, JSON.stringify(headers)).toBe(400);
      }
      for (const path of ['/drive/v3/../../x', '/drive/v3/%2e%2e/%2e%2e/x', `http://127.0.0.2:${trap.port}/x`, `//127.0.0.2:${trap.port}/x`, '/drive/v3\\..\\x', 'drive/v3/files', '/elsewhere']) {
        const r = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path });
        expect(r.status, path).toBe(400);
      }
      expect(trap.connections).toBe(0);
      // Unknown provider.
      expect((await proxy(owner.token, { workspace_id: ws.id, provider: 'nope', method: 'GET', path: '/x' })).status).toBe(400);
    } finally {
      await trap.close();
    }
  });

  it('returns redirects instead of following them; caps responses at 10 MB', async () => {
    const { owner, ws } = await connectedWorkspace();
    fake.route('GET', '/drive/v3/bounce', (_req, res) => void res.writeHead(302, { location: 'https://elsewhere.example/x' }).end());
    fake.route('GET', '/drive/v3/huge', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(10 * 1024 * 1024 + 1));
    });
    const r = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/bounce' });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe(302);
    expect(r.body.headers.location).toBe('https://elsewhere.example/x');
    fake.route('GET', '/drive/v3/bytes', (_req, res) => void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([0, 1, 2, 255])));
    const bytes = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/bytes' });
    expect(bytes.status).toBe(200);
    expect(bytes.body).toMatchObject({ status: 200, body: Buffer.from([0, 1, 2, 255]).toString('base64'), body_encoding: 'base64' });
    const big = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/huge' });
    expect(big.status).toBe(502);
    expect(big.body.error).toMatch(/10 MB/);
  });

  it('file_id sends a stored file; saas-proxy-download stores 2xx and not non-2xx; needs a storage editor', async () => {
    const { owner, ws } = await connectedWorkspace();
    let received = '';
    fake.route('POST', '/upload/drive/v3/files', (_req, res, body) => {
      received = body.toString();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"new"}');
    });
    const up = await h.call('POST', `/api/v1/workspaces/${ws.id}/files`, {
      token: owner.token,
      workspace: ws.id,
      body: { filename: 'a.txt', content: Buffer.from('stored bytes').toString('base64') },
    });
    const sent = await proxy(owner.token, { workspace_id: ws.id, provider: 'drive_workspace', method: 'POST', path: '/upload/drive/v3/files', file_id: up.body.id });
    expect(sent.body.status).toBe(200);
    expect(received).toBe('stored bytes');

    const dl = await h.call('POST', '/api/v1/saas-proxy-download', {
      token: owner.token,
      body: { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files/plan?alt=media', suggested_filename: 'plan.txt', metadata: { from: 'drive' } },
    });
    expect(dl.status).toBe(200);
    expect(dl.body).toMatchObject({ status: 200, filename: 'plan.txt', size: 22 });
    const file = await h.call('GET', `/api/v1/workspaces/${ws.id}/files/${dl.body.id}`, { token: owner.token, workspace: ws.id });
    expect(file.body.metadata).toEqual({ from: 'drive' });

    const before = (await h.call('GET', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id })).body.length;
    const missing = await h.call('POST', '/api/v1/saas-proxy-download', {
      token: owner.token,
      body: { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files/none?alt=media' },
    });
    expect(missing.status).toBe(200);
    expect(missing.body.status).toBe(404);
    expect(missing.body).toHaveProperty('error_body');
    expect(missing.body).not.toHaveProperty('id');
    const after = (await h.call('GET', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id })).body.length;
    expect(after).toBe(before);

    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    const denied = await h.call('POST', '/api/v1/saas-proxy-download', {
      token: member.token,
      body: { workspace_id: ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files/plan?alt=media' },
    });
    expect(denied.status).toBe(403);
  });

  it('workspace A can never use workspace B’s credential', async () => {
    const a = await connectedWorkspace();
    const b = await connectedWorkspace();
    // A's member names B: not a member → 403, and B's token is never sent.
    const before = fake.apiRequests().length;
    const r = await proxy(a.owner.token, { workspace_id: b.ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files' });
    expect(r.status).toBe(403);
    expect(fake.apiRequests().length).toBe(before);
    // A's own call carries A's token.
    await proxy(a.owner.token, { workspace_id: a.ws.id, provider: 'drive_workspace', method: 'GET', path: '/drive/v3/files' });
    expect(fake.apiRequests().at(-1)?.headers.authorization).toBe(`Bearer ${a.grant.accessToken}`);
  });
});
