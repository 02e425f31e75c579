import '@wds/testkit';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { SecretBox } from '@wds/crypto';
import { createDb, type Db, migrateToLatest, newId } from '@wds/db';
import { OutboundGuard } from '@wds/effect-runner';
import { ServiceError } from '@wds/errors';
import { openCredential, putCredential } from '@wds/setup';
import { createFsBlobStore, type FsBlobStore } from '@wds/storage';
import { createDatabase, type FakeDrive, type RecordingListener, recordingListener, startFakeDrive } from '@wds/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { DOWNLOAD_MAX_BYTES, DRIVE_PROVIDER, PROXY_MAX_BYTES, ProviderClient, type ProviderRegistry, parseProviders } from '../src/index.js';

let db: Db;
let fake: FakeDrive;
let probe: RecordingListener;
let blobDir: string;
let blobs: FsBlobStore;
let registry: ProviderRegistry;
let client: ProviderClient;
const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));
/** Only the fake's address: anything else on loopback (the 127.0.0.2 probe) is refused by the guard. */
const guard = new OutboundGuard({ allowlist: ['127.0.0.1'] });

const MB = 1024 * 1024;

async function caught(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a ServiceError');
}

/** A workspace connected to the fake with its own grant. */
async function workspace(grantOpts?: { expired?: boolean }) {
  const id = newId();
  await db.insertInto('platform.workspaces').values({ id, name: `ws-${id}` }).execute();
  const grant = fake.grant(grantOpts);
  await putCredential(db, box, id, DRIVE_PROVIDER, grant.credential);
  return { id, grant };
}

const fileRows = async (workspaceId: string) => (await db.selectFrom('platform.files').select('id').where('workspace_id', '=', workspaceId).execute()).length;

async function blobFiles(): Promise<string[]> {
  const entries = await readdir(blobDir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => e.name);
}

function makeClient(opts: { allowHttpLoopback?: boolean; guard?: OutboundGuard; registry?: ProviderRegistry } = {}) {
  return new ProviderClient({ db, sealer: box, registry: opts.registry ?? registry, guard: opts.guard ?? guard, allowHttpLoopback: opts.allowHttpLoopback ?? true });
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'prov' }), { max: 8 }).db;
  await migrateToLatest(db);
  fake = await startFakeDrive();
  probe = await recordingListener('127.0.0.2');
  blobDir = await mkdtemp(join(tmpdir(), 'prov-blobs-'));
  blobs = createFsBlobStore(blobDir, { cleanTempOnStart: false });
  registry = parseProviders(
    JSON.stringify({
      drive_workspace: { base_url: fake.url, token_url: fake.tokenUrl, client_id: fake.clientId, client_secret: fake.clientSecret },
      // token endpoint that echoes what it was sent back in its error (to check redaction)
      leaky: { base_url: fake.url, token_url: `${fake.url}/leaky-token`, client_id: fake.clientId, client_secret: fake.clientSecret, allowed_paths: ['/drive/v3/'] },
      probe: { base_url: probe.url, allowed_paths: ['/'] },
    }),
    { allowHttpLoopback: true },
  );
  client = makeClient();

  fake.addFile({ id: 'bin1', name: 'report.pdf', mimeType: 'application/pdf', parents: ['root'], content: 'PDF-BYTES' });
  fake.addFile({ id: 'huge', name: 'huge.bin', mimeType: 'application/octet-stream', parents: ['root'], content: { size: DOWNLOAD_MAX_BYTES + 1 } });
  fake.addFile({ id: 'cut', name: 'cut.bin', mimeType: 'application/octet-stream', parents: ['root'], content: { size: 2 * MB, dropAfter: MB } });
  fake.route('GET', '/drive/v3/echo', (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['sid=1; HttpOnly', 'x=2'] });
    res.end(JSON.stringify({ headers: req.headers, url: req.url }));
  });
  fake.route('POST', '/drive/v3/echo', (req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ headers: req.headers, body: body.toString('utf8') }));
  });
  fake.route('GET', '/drive/v3/big', (req, res) => {
    const size = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('size'));
    const declared = new URL(req.url ?? '/', 'http://x').searchParams.get('declared') === '1';
    res.writeHead(200, { 'content-type': 'application/octet-stream', ...(declared ? { 'content-length': size } : {}) });
    const chunk = Buffer.alloc(MB, 0x62);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const n = Math.min(chunk.length, size - sent);
        sent += n;
        if (!res.write(chunk.subarray(0, n))) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  });
  fake.route('GET', '/drive/v3/redirect', (req, res) => {
    const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
    res.writeHead(302, { location: to, 'content-length': 0 });
    res.end();
  });
  fake.route('GET', '/drive/v3/loop', (_req, res) => {
    res.writeHead(307, { location: '/drive/v3/loop', 'content-length': 0 });
    res.end();
  });
  fake.route(
    'POST',
    '/leaky-token',
    (_req, res, body) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_grant', error_description: `bad request: ${body.toString('utf8')}` }));
    },
    { auth: false },
  );
});

afterAll(async () => {
  await fake?.close();
  await probe?.close();
  await db?.destroy();
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
});

beforeEach(() => {
  fake.tokenDelayMs = 0;
});

describe('credentials and tokens', () => {
  it('injects the workspace token and never lets a caller override it', async () => {
    const a = await workspace();
    const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', query: { x: '1' }, headers: { 'X-Custom': 'yes', Accept: 'application/json' }, maxBytes: PROXY_MAX_BYTES });
    expect(res.status).toBe(200);
    const seen = JSON.parse(res.body.toString()) as { headers: Record<string, string>; url: string };
    expect(seen.headers.authorization).toBe(`Bearer ${a.grant.accessToken}`);
    expect(seen.headers['x-custom']).toBe('yes');
    expect(seen.headers['accept-encoding']).toBe('identity');
    expect(seen.url).toBe('/drive/v3/echo?x=1');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['content-type']).toBe('application/json');

    const before = fake.requests.length;
    for (const headers of <Array<Record<string, string>>>[
      { Authorization: 'Bearer stolen' },
      { authorization: 'Bearer stolen' },
      { Cookie: 'sid=1' },
      { Host: '127.0.0.2' },
      { 'X-Forwarded-For': '10.0.0.1' },
      { 'Proxy-Authorization': 'Basic x' },
      { 'Content-Length': '0' },
      { 'Transfer-Encoding': 'chunked' },
      { 'X-Ok': 'a\r\nAuthorization: Bearer stolen' },
    ]) {
      const err = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', headers, maxBytes: PROXY_MAX_BYTES }));
      expect(err.code, JSON.stringify(headers)).toBe('VALIDATION_ERROR');
      expect(err.status).toBe(400);
    }
    const err = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', headers: { Authorization: 'x', 'X-Forwarded-Host': 'y' }, maxBytes: 1 }));
    expect(err.details).toBe('headers: Authorization, X-Forwarded-Host may not be sent; the service sets these itself');
    expect(fake.requests.length).toBe(before);
  });

  it('sends string, byte and stream bodies with their length', async () => {
    const a = await workspace();
    for (const body of ['{"a":1}', new TextEncoder().encode('{"a":1}'), { stream: Readable.from([Buffer.from('{"a"'), Buffer.from(':1}')]), length: 7 }]) {
      const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'POST', path: '/drive/v3/echo', headers: { 'Content-Type': 'application/json' }, body, maxBytes: MB });
      const seen = JSON.parse(res.body.toString()) as { headers: Record<string, string>; body: string };
      expect(seen.body).toBe('{"a":1}');
      expect(seen.headers['content-length']).toBe('7');
      expect(seen.headers['content-type']).toBe('application/json');
    }
    expect((await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', body: 'x', maxBytes: MB }))).code).toBe('VALIDATION_ERROR');
    expect((await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'TRACE', path: '/drive/v3/echo', maxBytes: MB }))).code).toBe('VALIDATION_ERROR');
  });

  it('names the provider when the workspace has no credential; unknown providers are a validation error', async () => {
    const id = newId();
    await db.insertInto('platform.workspaces').values({ id, name: 'none' }).execute();
    const err = await caught(client.request({ workspaceId: id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files', maxBytes: MB }));
    expect(err.code).toBe('CONFLICT');
    expect(err.message).toBe(`Workspace has no credential for provider drive_workspace; an operator connects it with PUT /admin/v1/workspaces/${id}/credentials/drive_workspace`);
    const unknown = await caught(client.request({ workspaceId: id, provider: 'dropbox', method: 'GET', path: '/drive/v3/files', maxBytes: MB }));
    expect(unknown.code).toBe('VALIDATION_ERROR');
    expect(unknown.details).toMatch(/unknown provider "dropbox"/);
  });

  it('refreshes an expired token before the call and stores the new one sealed', async () => {
    const a = await workspace({ expired: true });
    const calls = fake.refreshCalls;
    const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB });
    expect(res.status).toBe(200);
    expect(fake.refreshCalls).toBe(calls + 1);
    const used = (JSON.parse(res.body.toString()) as { headers: Record<string, string> }).headers.authorization!.slice('Bearer '.length);
    expect(used).not.toBe(a.grant.accessToken);
    expect(fake.grantOf(used)).toBe(a.grant.refreshToken);
    const stored = JSON.parse((await openCredential(db, box, a.id, DRIVE_PROVIDER))!) as Record<string, string>;
    expect(stored.access_token).toBe(used);
    expect(stored.refresh_token).toBe(a.grant.refreshToken);
    expect(Date.parse(stored.expires_at!)).toBeGreaterThan(Date.now() + 3000_000);
    // the row holds ciphertext, not the token
    const row = await db.selectFrom('platform.workspace_credentials').select('sealed_value').where('workspace_id', '=', a.id).executeTakeFirstOrThrow();
    expect(row.sealed_value.includes(Buffer.from(used))).toBe(false);
  });

  it('on a 401 refreshes once and retries once', async () => {
    const a = await workspace();
    fake.expireAccessTokens(); // the stored expiry still says valid: only the provider knows
    const calls = fake.refreshCalls;
    const start = fake.requests.length;
    const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'POST', path: '/drive/v3/echo', body: 'again', maxBytes: MB });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString()).body).toBe('again');
    expect(fake.refreshCalls).toBe(calls + 1);
    const sent = fake.requests.slice(start).filter((r) => r.path === '/drive/v3/echo');
    expect(sent.map((r) => r.headers.authorization)).toEqual([`Bearer ${a.grant.accessToken}`, expect.not.stringContaining(a.grant.accessToken)]);

    // still 401 after the refresh: an upstream error, no second retry
    fake.route('GET', '/drive/v3/always401', (_req, res401) => {
      res401.writeHead(401, { 'content-type': 'application/json' });
      res401.end('{"error":{"code":401}}');
    });
    const n = fake.refreshCalls;
    const before = fake.requests.length;
    const err = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/always401', maxBytes: MB }));
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toBe('drive_workspace refused the workspace credential (HTTP 401) after a refresh');
    expect(fake.refreshCalls).toBe(n + 1);
    expect(fake.requests.slice(before).filter((r) => r.path === '/drive/v3/always401')).toHaveLength(2);
  });

  it('two concurrent requests with an expired token refresh once', async () => {
    const a = await workspace({ expired: true });
    fake.tokenDelayMs = 300;
    const calls = fake.refreshCalls;
    const [r1, r2] = await Promise.all(
      [1, 2].map(() => client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB })),
    );
    expect(fake.refreshCalls).toBe(calls + 1);
    const tokens = [r1!, r2!].map((r) => (JSON.parse(r.body.toString()) as { headers: Record<string, string> }).headers.authorization);
    expect(tokens[0]).toBe(tokens[1]);
  });

  it('two concurrent 401s refresh once', async () => {
    const a = await workspace();
    fake.expireAccessTokens();
    fake.tokenDelayMs = 300;
    const calls = fake.refreshCalls;
    const results = await Promise.all([1, 2, 3].map(() => client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(fake.refreshCalls).toBe(calls + 1);
  });

  it("never uses another workspace's credential; a sealed value copied between workspaces does not open", async () => {
    const a = await workspace();
    const b = await workspace();
    const start = fake.requests.length;
    await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB });
    await client.request({ workspaceId: b.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB });
    const auth = fake.requests.slice(start).map((r) => r.headers.authorization);
    expect(auth).toEqual([`Bearer ${a.grant.accessToken}`, `Bearer ${b.grant.accessToken}`]);

    const sealedB = await db.selectFrom('platform.workspace_credentials').select('sealed_value').where('workspace_id', '=', b.id).executeTakeFirstOrThrow();
    await db.updateTable('platform.workspace_credentials').set({ sealed_value: sealedB.sealed_value }).where('workspace_id', '=', a.id).execute();
    const before = fake.requests.length;
    const err = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB }));
    expect(err.code).toBe('CONFLICT');
    expect(err.message).toMatch(/cannot be opened/);
    expect(fake.requests.length).toBe(before);
    expect(JSON.stringify(err.toBody())).not.toContain(b.grant.accessToken);
  });

  it('a failed refresh names the provider and the status, never a token or the client secret', async () => {
    const id = newId();
    await db.insertInto('platform.workspaces').values({ id, name: 'leaky' }).execute();
    const grant = fake.grant({ expired: true });
    await putCredential(db, box, id, 'leaky', grant.credential);
    const err = await caught(client.request({ workspaceId: id, provider: 'leaky', method: 'GET', path: '/drive/v3/echo', maxBytes: MB }));
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toMatch(/^Refreshing the leaky credential failed: 127\.0\.0\.1:\d+ answered HTTP 400 invalid_grant$/);
    const text = `${err.message} ${err.details} ${err.stack}`;
    expect(err.details).toContain('[redacted]');
    for (const secret of [grant.refreshToken, grant.accessToken, fake.clientSecret]) expect(text).not.toContain(secret);

    // revoked at the provider: invalid_grant with the reconnect hint
    const a = await workspace({ expired: true });
    fake.revoke(a.grant.refreshToken);
    const revoked = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB }));
    expect(revoked.message).toMatch(/answered HTTP 400 invalid_grant/);
    expect(revoked.details).toContain(`PUT /admin/v1/workspaces/${a.id}/credentials/drive_workspace`);
    expect(JSON.stringify(revoked.toBody())).not.toContain(a.grant.refreshToken);
  });

  it('a bare access token is used as is', async () => {
    const id = newId();
    await db.insertInto('platform.workspaces').values({ id, name: 'bare' }).execute();
    const grant = fake.grant();
    await putCredential(db, box, id, DRIVE_PROVIDER, grant.accessToken);
    const res = await client.request({ workspaceId: id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB });
    expect(JSON.parse(res.body.toString()).headers.authorization).toBe(`Bearer ${grant.accessToken}`);
    // refused by the provider and nothing to refresh with: upstream error with the reconnect hint
    fake.expireAccessTokens();
    const err = await caught(client.request({ workspaceId: id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/echo', maxBytes: MB }));
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toBe('drive_workspace refused the workspace credential, and it cannot be refreshed (the credential has no refresh_token)');
  });
});

describe('paths never leave the provider', () => {
  it('escapes are refused before any connection, even with the guard allowing all of loopback', async () => {
    const a = await workspace();
    // This client's guard would let 127.0.0.2 through: only the path rules stand between a caller and the probe.
    const open = makeClient({ guard: new OutboundGuard({ allowlist: ['127.0.0.0/8'] }) });
    const host = `127.0.0.2:${probe.port}`;
    const attempts = [
      `http://${host}/drive/v3/files`,
      `//${host}/drive/v3/files`,
      `/\\${host}/drive/v3/files`,
      `\\\\${host}\\drive\\v3\\files`,
      '/drive/v3/../../probe',
      '/drive/v3/%2e%2e/%2e%2e/probe',
      '/drive/v3/files%2F..%2F..%2Fprobe',
      '/drive/v3/%252e%252e/probe',
      `@${host}/drive/v3/files`,
      '/drive/v3/files?x=1#frag',
    ];
    const before = fake.requests.length;
    for (const path of attempts) {
      const err = await caught(open.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path, maxBytes: MB }));
      expect(err.code, path).toBe('VALIDATION_ERROR');
      expect(err.details, path).toMatch(/^path: /);
    }
    expect(probe.connections).toBe(0);
    expect(probe.requests).toEqual([]);
    expect(fake.requests.length).toBe(before);
  });

  it('the guard refuses a provider or a redirect target outside the allowlist (the probe receives nothing)', async () => {
    const id = newId();
    await db.insertInto('platform.workspaces').values({ id, name: 'probe' }).execute();
    await putCredential(db, box, id, 'probe', 'plain-token');
    const direct = await caught(client.request({ workspaceId: id, provider: 'probe', method: 'GET', path: '/x', maxBytes: MB }));
    expect(direct.code).toBe('UPSTREAM_ERROR');
    expect(direct.message).toBe(`The outbound guard refused the call to 127.0.0.2:${probe.port}`);

    const a = await workspace();
    const redirected = await caught(
      client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/redirect', query: { to: `${probe.url}/stolen` }, redirects: 'follow-https', maxBytes: MB }),
    );
    expect(redirected.code).toBe('UPSTREAM_ERROR');
    expect(redirected.message).toMatch(/outbound guard refused/);
    expect(probe.connections).toBe(0);
  });
});

describe('redirects', () => {
  it("'return' gives the 3xx back untouched", async () => {
    const a = await workspace();
    const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/bin1', query: { alt: 'media' }, redirects: 'return', maxBytes: MB });
    expect(res.status).toBe(302);
    expect(res.headers.location).toMatch(new RegExp(`^${fake.downloadUrl}/download/bin1\\?sig=`));
  });

  it("'follow-https' reaches the download host without the provider's Authorization", async () => {
    const a = await workspace();
    const start = fake.requests.length;
    const res = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/bin1', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: MB });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('PDF-BYTES');
    const [api, download] = fake.requests.slice(start);
    expect(api?.server).toBe('api');
    expect(api?.headers.authorization).toBe(`Bearer ${a.grant.accessToken}`);
    expect(download?.server).toBe('download');
    expect(download?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(download?.headers)).not.toContain(a.grant.accessToken);
  });

  it('production settings never follow a redirect to http', async () => {
    const a = await workspace();
    const strict = makeClient({ allowHttpLoopback: false });
    const before = fake.downloadRequests().length;
    const err = await caught(strict.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/bin1', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: MB }));
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toMatch(/^Refused to follow a redirect to a non-https URL \(http:\/\/127\.0\.0\.1:\d+\)$/);
    expect(fake.downloadRequests().length).toBe(before);
    for (const to of ['http://example.com/x', 'ftp://example.com/x', 'file:///etc/passwd']) {
      const e = await caught(strict.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/redirect', query: { to }, redirects: 'follow-https', maxBytes: MB }));
      expect(e.message, to).toMatch(/non-https URL/);
    }
  });

  it('follows at most 5 redirects, keeping Authorization on the provider origin', async () => {
    const a = await workspace();
    const start = fake.requests.length;
    const err = await caught(client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/loop', redirects: 'follow-https', maxBytes: MB }));
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toBe('The provider redirected more than 5 times');
    const hops = fake.requests.slice(start);
    expect(hops).toHaveLength(6);
    expect(hops.every((h) => h.headers.authorization === `Bearer ${a.grant.accessToken}`)).toBe(true);
  });
});

describe('response caps', () => {
  it(`crossing 10 MB is an upstream error, declared or streamed`, async () => {
    const a = await workspace();
    const ok = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/big', query: { size: PROXY_MAX_BYTES }, maxBytes: PROXY_MAX_BYTES });
    expect(ok.body.length).toBe(PROXY_MAX_BYTES);
    for (const declared of ['1', '0']) {
      const err = await caught(
        client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/big', query: { size: PROXY_MAX_BYTES + 1, declared }, maxBytes: PROXY_MAX_BYTES }),
      );
      expect(err.code).toBe('UPSTREAM_ERROR');
      expect(err.message).toBe('Provider response exceeds 10 MB');
    }
    // HEAD declares a size it does not send
    fake.route('HEAD', '/drive/v3/big', (_req, res) => {
      res.writeHead(200, { 'content-length': 20 * MB });
      res.end();
    });
    const head = await client.request({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'HEAD', path: '/drive/v3/big', maxBytes: PROXY_MAX_BYTES });
    expect(head).toMatchObject({ status: 200, headers: { 'content-length': String(20 * MB) } });
    expect(head.body.length).toBe(0);
  });

  it('the streaming variant errors its body when the cap is crossed', async () => {
    const a = await workspace();
    const res = await client.stream({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/big', query: { size: 3 * MB }, maxBytes: 2 * MB });
    expect(res.status).toBe(200);
    let got = 0;
    const err = await (async () => {
      try {
        for await (const chunk of res.body) got += (chunk as Buffer).length;
      } catch (e) {
        return e as ServiceError;
      }
      throw new Error('no error');
    })();
    expect(err.message).toBe('Provider response exceeds 2 MB');
    expect(got).toBeLessThanOrEqual(2 * MB);

    const whole = await client.stream({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/bin1', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: MB });
    const parts: Buffer[] = [];
    for await (const chunk of whole.body) parts.push(chunk as Buffer);
    expect(Buffer.concat(parts).toString()).toBe('PDF-BYTES');
  });
});

describe('downloadToStorage', () => {
  const file = { filename: 'x.bin', createdBy: null };

  it('stores a 2xx body and its file record', async () => {
    const a = await workspace();
    const res = await client.downloadToStorage({
      workspaceId: a.id,
      provider: DRIVE_PROVIDER,
      method: 'GET',
      path: '/drive/v3/files/bin1',
      query: { alt: 'media' },
      redirects: 'follow-https',
      maxBytes: DOWNLOAD_MAX_BYTES,
      blobs,
      file: { filename: 'report.pdf', metadata: { source: 'test' }, createdBy: null },
    });
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.file).toMatchObject({ workspace_id: a.id, filename: 'report.pdf', content_type: 'application/pdf', size: 9, metadata: { source: 'test' } });
    const row = await db.selectFrom('platform.files').select('blob_key').where('id', '=', res.file.id).executeTakeFirstOrThrow();
    const chunks: Buffer[] = [];
    for await (const c of await blobs.get(row.blob_key)) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('PDF-BYTES');
  });

  it('a non-2xx answer stores nothing and returns the error body', async () => {
    const a = await workspace();
    const before = await blobFiles();
    const res = await client.downloadToStorage({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/missing', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: MB, blobs, file });
    expect(res).toMatchObject({ ok: false, status: 404 });
    if (res.ok) return;
    expect(JSON.parse(res.error_body).error.message).toBe('File not found: missing.');
    expect(await fileRows(a.id)).toBe(0);
    expect(await blobFiles()).toEqual(before);
  });

  it('crossing 100 MB leaves no blob and no file row (declared and streamed)', async () => {
    const a = await workspace();
    const before = await blobFiles();
    const declared = await caught(
      client.downloadToStorage({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/huge', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: DOWNLOAD_MAX_BYTES, blobs, file }),
    );
    expect(declared.code).toBe('UPSTREAM_ERROR');
    expect(declared.message).toBe('Provider response exceeds 100 MB');
    const streamed = await caught(
      client.downloadToStorage({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/big', query: { size: DOWNLOAD_MAX_BYTES + 1 }, maxBytes: DOWNLOAD_MAX_BYTES, blobs, file }),
    );
    expect(streamed.message).toBe('Provider response exceeds 100 MB');
    expect(await fileRows(a.id)).toBe(0);
    expect(await blobFiles()).toEqual(before);
  });

  it('a connection cut mid-body leaves no blob and no file row', async () => {
    const a = await workspace();
    const before = await blobFiles();
    const err = await caught(
      client.downloadToStorage({ workspaceId: a.id, provider: DRIVE_PROVIDER, method: 'GET', path: '/drive/v3/files/cut', query: { alt: 'media' }, redirects: 'follow-https', maxBytes: DOWNLOAD_MAX_BYTES, blobs, file }),
    );
    expect(err.code).toBe('UPSTREAM_ERROR');
    expect(err.message).toMatch(/closed the connection before the download was complete/);
    expect(await fileRows(a.id)).toBe(0);
    expect(await blobFiles()).toEqual(before);
  });
});
