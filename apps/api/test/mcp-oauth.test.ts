import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, type OAuthDiscoveryState, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createJwtVerifier } from '@wds/identity';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApp, routes } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { Harness } from './support.js';

/**
 * OAuth discovery (RFC 6750 §3, RFC 9728) and the Origin check of `/mcp`, with a real authorization server of the
 * test's own on 127.0.0.1 (RFC 8414 metadata, dynamic client registration, authorization code with PKCE S256, RS256
 * JWTs and their JWKS) and the official SDK client's OAuth support.
 */

/** A minimal authorization server: only what an MCP client's authorization-code flow with PKCE touches. */
class TestAuthorizationServer {
  issuer = '';
  private server: Server | undefined;
  private key: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'] | undefined;
  private jwk: Record<string, unknown> = {};
  private readonly clients = new Map<string, { redirect_uris: string[] }>();
  private readonly codes = new Map<string, { clientId: string; redirectUri: string; challenge: string; resource: string | null; scope: string | null }>();
  /** What the token endpoint was asked for, and what it issued. */
  readonly issued: { resource: string | null; scope: string | null; sub: string; email: string }[] = [];
  /** Token requests refused (a wrong PKCE verifier, an unknown code). */
  refusals = 0;
  readonly kid = 'test-key-1';

  async start(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    this.key = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), kid: this.kid, alg: 'RS256', use: 'sig' };
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'server_error', error_description: String(err) }));
      });
      return undefined;
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  get redirectUri(): string {
    return `${this.issuer}/callback`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.issuer);
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const body = async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    };
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
      return json(200, {
        issuer: this.issuer,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        registration_endpoint: `${this.issuer}/register`,
        jwks_uri: `${this.issuer}/jwks`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        scopes_supported: ['openid', 'email', 'profile'],
      });
    }
    if (req.method === 'GET' && url.pathname === '/jwks') return json(200, { keys: [this.jwk] });
    if (req.method === 'POST' && url.pathname === '/register') {
      const meta = JSON.parse(await body()) as OAuthClientMetadata;
      const clientId = `client-${randomUUID()}`;
      this.clients.set(clientId, { redirect_uris: meta.redirect_uris.map(String) });
      return json(201, { ...meta, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000), token_endpoint_auth_method: 'none' });
    }
    if (req.method === 'GET' && url.pathname === '/authorize') {
      // The person "signs in" at once: the code goes back to the registered redirect URI with the client's state.
      const q = url.searchParams;
      const clientId = q.get('client_id') ?? '';
      const redirectUri = q.get('redirect_uri') ?? '';
      if (!this.clients.get(clientId)?.redirect_uris.includes(redirectUri)) return json(400, { error: 'invalid_request', error_description: 'unknown client or redirect URI' });
      if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
        return json(400, { error: 'invalid_request', error_description: 'authorization code with PKCE S256 only' });
      }
      const code = randomBytes(16).toString('hex');
      this.codes.set(code, { clientId, redirectUri, challenge: q.get('code_challenge') ?? '', resource: q.get('resource'), scope: q.get('scope') });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      const state = q.get('state');
      if (state !== null) back.searchParams.set('state', state);
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (req.method === 'GET' && url.pathname === '/callback') {
      // Stands for the client's own redirect listener: the test reads the code from the URL it ended at.
      res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in; you may close this window');
      return;
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams(await body());
      const code = form.get('code') ?? '';
      const grant = this.codes.get(code);
      this.codes.delete(code);
      const verifier = form.get('code_verifier') ?? '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (
        form.get('grant_type') !== 'authorization_code' ||
        !grant ||
        grant.clientId !== form.get('client_id') ||
        grant.redirectUri !== form.get('redirect_uri') ||
        grant.challenge !== challenge
      ) {
        this.refusals++;
        return json(400, { error: 'invalid_grant', error_description: 'unknown code, or the PKCE verifier does not match' });
      }
      const resource = form.get('resource') ?? grant.resource;
      const sub = `oauth|${randomUUID()}`;
      const email = `oauth.${randomUUID()}@example.test`;
      const jwt = new SignJWT({ email, email_verified: true, name: 'OAuth Agent', scope: grant.scope ?? undefined })
        .setProtectedHeader({ alg: 'RS256', kid: this.kid })
        .setIssuer(this.issuer)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime('10m');
      if (resource) jwt.setAudience(resource);
      const token = await jwt.sign(this.key as NonNullable<typeof this.key>);
      this.issued.push({ resource, scope: grant.scope, sub, email });
      return json(200, { access_token: token, token_type: 'Bearer', expires_in: 600, scope: grant.scope ?? undefined });
    }
    json(404, { error: 'not_found' });
  }
}

/** The MCP client's side of OAuth, as a host keeps it: in memory, the "browser" an HTTP GET that follows redirects. */
class TestProvider implements OAuthClientProvider {
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  private expectedState = randomBytes(8).toString('hex');
  discovery: OAuthDiscoveryState | undefined;
  /** The authorization code the redirect brought back. */
  code: string | undefined;

  constructor(private readonly redirect: string) {}

  get redirectUrl(): string {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'wds OAuth test client',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    return this.expectedState;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const res = await fetch(authorizationUrl, { redirect: 'follow' });
    await res.text();
    const landed = new URL(res.url);
    if (res.status !== 200 || landed.href.split('?')[0] !== this.redirect) throw new Error(`authorization ended at ${res.status} ${landed.href}`);
    if (landed.searchParams.get('state') !== this.expectedState) throw new Error('state did not come back');
    this.code = landed.searchParams.get('code') ?? undefined;
  }
}

const as = new TestAuthorizationServer();
let h: Harness;
let base: string;

beforeAll(async () => {
  await as.start();
  h = await Harness.create({ AUTH_JWKS_URL: `${as.issuer}/jwks`, AUTH_JWT_ISSUER: as.issuer, AUTH_JWT_SECRET: '', CORS_ORIGINS: 'https://app.example.com' });
  base = await h.listen();
  // The audience tokens must carry: the resource the metadata names, known once the server has its port (the JWT
  // verifier of AUTH_JWT_AUDIENCE, as start-up would have made it with that setting).
  h.services.jwt = createJwtVerifier({ jwksUrl: `${as.issuer}/jwks`, issuer: as.issuer, audience: base });
});
afterAll(async () => {
  await h?.close();
  await as.stop();
});

/** The same services without an authorization server (AUTH_JWT_SECRET only, as most deployments). */
const appWithoutServer = () => createApp({ ...h.services, config: { ...h.services.config, AUTH_JWKS_URL: undefined, AUTH_JWT_ISSUER: undefined } });

/** A path of the route with every parameter filled in: ids as UUIDs that name nothing, other names as text. */
const pathOf = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => (name === 'id' || name.endsWith('Id') ? randomUUID() : 'x'));

const metadataUrl = (origin: string) => `${origin}/.well-known/oauth-protected-resource`;

describe('WWW-Authenticate on every 401', () => {
  it('every route of the route table, called without a credential, answers its 401s with the Bearer challenge', async () => {
    let unauthorized = 0;
    for (const r of routes) {
      const path = pathOf(r.path);
      const write = r.method !== 'get' && r.method !== 'delete';
      const res = await h.app.request(path, { method: r.method.toUpperCase(), ...(write ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}) });
      const challenge = res.headers.get('www-authenticate');
      // Every route that needs a credential refuses the call without one (admin routes: X-Admin-Token).
      if (r.auth !== 'none' && r.auth !== 'optional') expect(res.status, `${r.method} ${r.path}`).toBe(401);
      if (res.status !== 401) {
        expect(challenge, `${r.method} ${r.path} ${res.status}`).toBeNull();
        continue;
      }
      unauthorized++;
      expect(((await res.json()) as any).code).toBe('UNAUTHORIZED');
      // No credential was sent: no error code (RFC 6750 §3.1), and where the route takes the authorization server's
      // tokens, the metadata naming it (the app answers in-process, so its origin is the request's: http://localhost).
      const ownSecret = r.path.startsWith('/admin/') || r.path === '/api/v1/hooks/:hookId';
      expect(challenge, `${r.method} ${r.path}`).toBe(ownSecret ? 'Bearer' : `Bearer resource_metadata="${metadataUrl('http://localhost')}"`);
    }
    // Not a vacuous walk: most routes need a credential (and the webhook's unsigned delivery is a 401 too).
    expect(unauthorized).toBeGreaterThan(routes.length * 0.8);
  });

  it('a credential sent and refused adds error="invalid_token", on /api/v1, /mcp and the login-link redeem', async () => {
    const expected = `Bearer error="invalid_token", resource_metadata="${metadataUrl(base)}"`;
    for (const token of ['svc_not-a-key', 'ses_not-a-session', 'a.b.c', 'nonsense']) {
      const res = await fetch(`${base}/api/v1/workspaces`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(expected);
    }
    const mcp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer svc_not-a-key', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toBe(expected);
    // No credential at all on /mcp: the challenge without an error code.
    const bare = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl(base)}"`);
    // A wrong login-link code is a failed authentication without an Authorization header: the plain challenge.
    const redeem = await fetch(`${base}/api/v1/auth/login-links/redeem`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'x'.repeat(43) }) });
    expect(redeem.status).toBe(401);
    expect(redeem.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl(base)}"`);
  });

  it('the /ws upgrade refused for its credential carries the challenge too', async () => {
    const refused = (url: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; challenge: string | undefined }>((resolve, reject) => {
        const socket = new WebSocket(url, { headers });
        socket.on('unexpected-response', (_req, res) => {
          resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'] as string | undefined });
          res.resume();
          socket.terminate();
        });
        socket.on('open', () => reject(new Error('the upgrade was accepted')));
        socket.on('error', () => undefined);
      });
    const wsBase = base.replace('http:', 'ws:');
    expect(await refused(`${wsBase}/ws?workspace_id=${randomUUID()}`)).toEqual({ status: 401, challenge: `Bearer resource_metadata="${metadataUrl(base)}"` });
    expect(await refused(`${wsBase}/ws?workspace_id=${randomUUID()}&token=svc_not-a-key`)).toEqual({
      status: 401,
      challenge: `Bearer error="invalid_token", resource_metadata="${metadataUrl(base)}"`,
    });
    expect(await refused(`${wsBase}/ws?workspace_id=${randomUUID()}`, { authorization: 'Bearer ses_nothing' })).toEqual({
      status: 401,
      challenge: `Bearer error="invalid_token", resource_metadata="${metadataUrl(base)}"`,
    });
  });

  it('without an authorization server the challenge is plain Bearer and no metadata is served', async () => {
    const app = appWithoutServer();
    const none = await app.request('/api/v1/workspaces');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const bad = await app.request('/mcp', { method: 'POST', headers: { authorization: 'Bearer svc_x' }, body: '{}' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await app.request(path);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { code?: string }).code).toBe('NOT_FOUND');
    }
  });

  it('answers that are not 401 carry no challenge', async () => {
    const owner = await h.user('challenge');
    const forbidden = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: {} });
    expect(forbidden.status).not.toBe(401);
    expect(forbidden.headers.get('www-authenticate')).toBeNull();
    expect((await h.app.request('/api/v1/no-such-route')).headers.get('www-authenticate')).toBeNull();
  });
});

describe('protected-resource metadata (RFC 9728)', () => {
  it('names the authorization server for the service and for /mcp (the path-suffixed form)', async () => {
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource', base],
      ['/.well-known/oauth-protected-resource/mcp', `${base}/mcp`],
    ] as const) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toEqual({
        resource,
        authorization_servers: [as.issuer],
        bearer_methods_supported: ['header'],
        scopes_supported: ['openid', 'email', 'profile'],
        resource_name: 'Workspace data service',
      });
    }
  });

  it('PUBLIC_URL names the resource whatever Host the request came with', async () => {
    const config = { ...h.services.config, PUBLIC_URL: 'https://api.example.com' };
    const app = createApp({ ...h.services, config });
    const res = await app.request('http://internal:8080/.well-known/oauth-protected-resource/mcp', { headers: { host: 'internal:8080' } });
    expect(((await res.json()) as any).resource).toBe('https://api.example.com/mcp');
    const refused = await app.request('http://internal:8080/api/v1/workspaces');
    expect(refused.headers.get('www-authenticate')).toBe('Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource"');
  });

  it('PUBLIC_URL is an origin: anything else is refused at start-up', () => {
    expect(loadConfig({ PUBLIC_URL: ' https://API.example.com:443/ ' }).PUBLIC_URL).toBe('https://api.example.com');
    expect(loadConfig({}).PUBLIC_URL).toBeUndefined();
    for (const bad of ['api.example.com', 'https://api.example.com/wds', 'ftp://api.example.com', 'https://u:p@api.example.com', 'https://api.example.com?x']) {
      expect(() => loadConfig({ PUBLIC_URL: bad }), bad).toThrow(/PUBLIC_URL/);
    }
  });
});

describe('an OAuth-only MCP host', () => {
  it('discovers the authorization server from the 401, signs in with PKCE and calls tools with the JWT it was issued', async () => {
    const provider = new TestProvider(as.redirectUri);
    const url = new URL(`${base}/mcp`);
    // First connection: no token, so the 401's challenge starts the flow, which ends at the "browser" redirect.
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await expect(new Client({ name: 'oauth-host', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.discovery?.resourceMetadataUrl).toBe(metadataUrl(base));
    expect(provider.discovery?.authorizationServerUrl).toBe(as.issuer);
    expect(provider.code).toMatch(/^[0-9a-f]{32}$/);
    await first.finishAuth(provider.code as string);
    await first.close();
    // The token was asked for the resource the metadata names (RFC 8707), with the scopes it lists.
    expect(as.issued).toHaveLength(1);
    expect(as.issued[0]).toMatchObject({ resource: base, scope: 'openid email profile' });
    expect(provider.tokens()?.access_token.split('.')).toHaveLength(3);

    // Second connection: the JWT is accepted by /mcp; the caller is the user its subject became.
    // (get_me and create_workspace are not in the default tool set: the connection asks for every tool.)
    const client = new Client({ name: 'oauth-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider, requestInit: { headers: { 'x-mcp-features': 'all' } } }));
    const me = (await client.callTool({ name: 'get_me', arguments: {} })) as { isError?: boolean; structuredContent?: any };
    expect(me.isError).toBeFalsy();
    expect(me.structuredContent.email ?? me.structuredContent.user?.email).toBe(as.issued[0]?.email);
    const created = (await client.callTool({ name: 'create_workspace', arguments: { name: 'OAuth workspace' } })) as { isError?: boolean; structuredContent?: any };
    expect(created.isError, JSON.stringify(created.structuredContent)).toBeFalsy();
    const listed = (await client.callTool({ name: 'list_workspaces', arguments: {} })) as { structuredContent?: any };
    expect(JSON.stringify(listed.structuredContent)).toContain(created.structuredContent.id);
    await client.close();
  });

  it('a JWT of the same server for another audience is refused, with the challenge', async () => {
    // Issued for another resource than this service: the audience check refuses it (token passthrough is not accepted).
    const provider = new TestProvider(as.redirectUri);
    const other = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      authProvider: Object.assign(provider, { validateResourceURL: async () => new URL('https://other.example.com/mcp') }),
    });
    await expect(new Client({ name: 'oauth-host', version: '1.0.0' }).connect(other)).rejects.toBeInstanceOf(UnauthorizedError);
    await other.finishAuth(provider.code as string);
    const token = provider.tokens()?.access_token;
    expect(as.issued.at(-1)?.resource).toBe('https://other.example.com/mcp');
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${metadataUrl(base)}"`);
  });
});

describe('Origin check on /mcp', () => {
  const initialize = (headers: Record<string, string>) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });

  it('a foreign Origin is 403 with a JSON-RPC error, before the credential is looked at', async () => {
    const owner = await h.user('origin');
    for (const origin of ['https://evil.example.net', 'http://localhost:5173', 'null', base.replace('127.0.0.1', 'rebound.example')]) {
      const res = await initialize({ authorization: `Bearer ${owner.token}`, origin });
      expect(res.status, origin).toBe(403);
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
      expect(res.headers.get('mcp-session-id')).toBeNull();
      // A bad credential from that origin learns nothing about it either: still 403, not 401.
      expect((await initialize({ authorization: 'Bearer svc_nothing', origin })).status).toBe(403);
    }
  });

  it('no Origin (desktop and server clients), a CORS_ORIGINS origin and the service\'s own pass', async () => {
    const owner = await h.user('origin-ok');
    for (const headers of [{}, { origin: 'https://app.example.com' }] as Record<string, string>[]) {
      const res = await initialize({ authorization: `Bearer ${owner.token}`, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(res.headers.get('mcp-session-id')).toBeTruthy();
      expect(((await res.json()) as any).result.serverInfo.name).toBe('workspace-data-service');
    }
    // The service's own origin: PUBLIC_URL when set (never the request's Host, which a rebinding page chooses).
    const app = createApp({ ...h.services, config: { ...h.services.config, PUBLIC_URL: 'https://api.example.com', CORS_ORIGINS: [] } });
    const ask = (origin: string) =>
      app.request('/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
      });
    expect((await ask('https://api.example.com')).status).toBe(200);
    expect((await ask('https://app.example.com')).status).toBe(403);
    expect((await ask('http://localhost')).status).toBe(403);
  });
});
