import { createLogger } from '../src/logger.js';
import { ADMIN_TOKEN, describe, expect, test } from './support.js';

const admin = { 'x-admin-token': ADMIN_TOKEN };
const credPath = (ws: string, provider: string) => `/admin/v1/workspaces/${ws}/credentials/${provider}`;

describe('admin: workspace credentials', () => {
  test('stored sealed; listed by name; the value appears in no response, audit entry or log line', async ({ h, owner, ws }) => {
    const lines: string[] = [];
    const saved = h.services.logger;
    h.services.logger = createLogger('trace', { write: (s: string) => void lines.push(s) });
    try {
      const secret = 'canary-credential-value-7f3a';
      const responses: unknown[] = [];
      const call = async (...args: Parameters<typeof h.call>) => {
        const r = await h.call(...args);
        responses.push(r.body, Object.fromEntries(r.headers));
        return r;
      };

      const put = await call('PUT', credPath(ws.id, 'drive_workspace'), { headers: admin, body: { value: secret } });
      expect(put.status).toBe(204);
      expect(put.body).toBeNull();
      const json = JSON.stringify({ refresh_token: `${secret}-json` });
      expect((await call('PUT', credPath(ws.id, 'github'), { headers: admin, body: { value: json } })).status).toBe(204);
      // Replacing keeps one row per provider.
      expect((await call('PUT', credPath(ws.id, 'drive_workspace'), { headers: admin, body: { value: `${secret}-2` } })).status).toBe(204);

      // Sealed at rest, bound to this workspace and provider.
      const rows = await h.services.db.selectFrom('platform.workspace_credentials').selectAll().where('workspace_id', '=', ws.id).orderBy('provider').execute();
      expect(rows.map((r) => r.provider)).toEqual(['drive_workspace', 'github']);
      expect(rows[0]!.sealed_value.toString('latin1')).not.toContain(secret);
      expect(h.services.secrets!.open(rows[0]!.sealed_value, `credential:${ws.id}:drive_workspace`)).toBe(`${secret}-2`);
      expect(() => h.services.secrets!.open(rows[0]!.sealed_value, `credential:${ws.id}:github`)).toThrow();

      const list = await call('GET', `/api/v1/workspaces/${ws.id}/setup/saas-credentials`, { token: owner.token });
      expect(list.body.map((c: any) => c.provider)).toEqual(['drive_workspace', 'github']);
      expect(list.body.every((c: any) => Object.keys(c).sort().join() === 'provider,updated_at')).toBe(true);

      const audit = await call('GET', '/api/v1/audit-logs?action=admin_*', { token: owner.token, workspace: ws.id });
      expect(audit.body.map((e: any) => e.action)).toEqual([
        'admin_put_workspace_credential',
        'admin_put_workspace_credential',
        'admin_put_workspace_credential',
      ]);
      expect(audit.body[0]).toMatchObject({ workspace_id: ws.id, user_id: null, resource_type: 'credential', resource_id: 'drive_workspace', details: { provider: 'drive_workspace' } });
      const stored = await h.services.db.selectFrom('platform.audit_logs').selectAll().where('workspace_id', '=', ws.id).execute();

      // Failures do not echo it either.
      await call('PUT', credPath(ws.id, 'Bad-Name'), { headers: admin, body: { value: secret } });
      await call('PUT', credPath(ws.id, 'x'), { headers: admin, body: { value: { token: secret } } });
      await call('PUT', credPath(ws.id, 'x'), { headers: admin, body: { value: 5, other: secret } });
      await call('PUT', credPath('01900000-0000-7000-8000-000000000000', 'x'), { headers: admin, body: { value: secret } });

      expect(JSON.stringify(responses)).not.toContain(secret);
      expect(JSON.stringify(stored)).not.toContain(secret);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('\n')).not.toContain(secret);
    } finally {
      h.services.logger = saved;
    }
  });

  test('validation, unknown workspace, delete', async ({ h, owner, ws }) => {
    for (const [provider, body, details] of [
      ['Drive', { value: 'v' }, /^provider: /],
      ['1drive', { value: 'v' }, /^provider: /],
      ['a-b', { value: 'v' }, /^provider: /],
      ['x'.repeat(65), { value: 'v' }, /^provider: /],
      ['ok', {}, /^value: /],
      ['ok', { value: '' }, /^value: must not be empty/],
      ['ok', { value: { token: 't' } }, /^value: must be a string/],
      ['ok', { value: 'x'.repeat(64 * 1024 + 1) }, /^value: at most 65536 bytes/],
    ] as const) {
      const r = await h.call('PUT', credPath(ws.id, provider), { headers: admin, body });
      expect(r.status, provider).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details).toMatch(details);
    }
    expect((await h.call('PUT', credPath(ws.id, 'a'.repeat(64)), { headers: admin, body: { value: 'x'.repeat(64 * 1024) } })).status).toBe(204);
    expect((await h.call('PUT', credPath('01900000-0000-7000-8000-000000000000', 'p'), { headers: admin, body: { value: 'v' } })).status).toBe(404);
    expect((await h.call('PUT', credPath('not-a-uuid', 'p'), { headers: admin, body: { value: 'v' } })).status).toBe(404);
    // A deleted workspace is unknown.
    const gone = await h.workspace(owner.token, 'gone');
    await h.call('DELETE', `/api/v1/workspaces/${gone.id}`, { token: owner.token });
    expect((await h.call('PUT', credPath(gone.id, 'p'), { headers: admin, body: { value: 'v' } })).status).toBe(404);
    // A user token is not the admin token.
    expect((await h.call('PUT', credPath(ws.id, 'p'), { token: owner.token, body: { value: 'v' } })).status).toBe(401);

    await h.call('PUT', credPath(ws.id, 'drive_workspace'), { headers: admin, body: { value: 'v' } });
    expect((await h.call('DELETE', credPath(ws.id, 'drive_workspace'), { headers: admin })).status).toBe(204);
    expect((await h.call('DELETE', credPath(ws.id, 'drive_workspace'), { headers: admin })).status).toBe(404);
    expect((await h.call('DELETE', credPath(ws.id, 'Bad-Name'), { headers: admin })).status).toBe(400);
    const list = await h.call('GET', `/api/v1/workspaces/${ws.id}/setup/saas-credentials`, { token: owner.token });
    expect(list.body.map((c: any) => c.provider)).toEqual(['a'.repeat(64)]);
    const audit = await h.call('GET', '/api/v1/audit-logs?action=admin_delete_workspace_credential', { token: owner.token, workspace: ws.id });
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({ resource_id: 'drive_workspace', details: { provider: 'drive_workspace' } });
  });

  test('503 without a secrets key', async ({ h, ws }) => {
    const saved = h.services.secrets;
    h.services.secrets = undefined;
    try {
      const r = await h.call('PUT', credPath(ws.id, 'drive_workspace'), { headers: admin, body: { value: 'v' } });
      expect(r.status).toBe(503);
      expect(r.body.code).toBe('SERVICE_UNAVAILABLE');
    } finally {
      h.services.secrets = saved;
    }
  });
});
