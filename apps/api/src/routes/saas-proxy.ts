import { Readable } from 'node:stream';
import { checkFilename, getFile } from '@wds/storage';
import { DOWNLOAD_MAX_BYTES, PROXY_MAX_BYTES, type ProviderClient, type ProviderRequest } from '@wds/providers';
import { parseUuid } from '@wds/db';
import { ServiceError, notFound, validationError } from '@wds/errors';
import * as v from 'valibot';
import type { Services } from '../services.js';
import { assertStorageEditor } from '../http/permissions.js';
import { defineRoute, type MemberCtx } from '../http/route.js';
import { Uuid } from '../http/schemas.js';
import { SaasProxyDownload, SaasProxyResult } from '../http/views/index.js';

/**
 * The SaaS proxy (docs/providers.md#saas-proxy): a member calls a connected provider's API with the workspace's
 * credential, which the service injects and the caller never sees — not even where the provider's answer repeats it
 * (redactCredential). Authorization, Cookie, Host, Proxy-* and other hop-by-hop headers in the request are refused;
 * the path stays under the provider's base URL.
 */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
const TEXTUAL = /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml|javascript|x-www-form-urlencoded)|application\/ld\+json)/i;

const ProxyRequest = {
  workspace_id: Uuid,
  provider: v.pipe(v.string('must be a string'), v.regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a provider name such as drive_workspace')),
  method: v.pipe(v.string('must be a string'), v.toUpperCase(), v.picklist(METHODS, `must be one of ${METHODS.join(', ')}`)),
  path: v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(4096)),
  headers: v.optional(v.nullable(v.record(v.string(), v.string('header values must be strings')))),
  body: v.optional(v.nullable(v.union([v.string(), v.record(v.string(), v.unknown()), v.array(v.unknown())], 'must be a string, a JSON object or array, or null'))),
  file_id: v.optional(v.nullable(Uuid)),
};

type ProxyBody = v.InferOutput<v.ObjectSchema<typeof ProxyRequest, undefined>>;

function client(s: Services): ProviderClient {
  if (!s.providers.client) throw new ServiceError('SERVICE_UNAVAILABLE', 'Provider credentials are not configured', 'set SECRETS_KEY');
  return s.providers.client;
}

/** The provider request of a proxy body: query split off the path, a JSON body serialized, or a stored file streamed. */
async function providerRequest(ctx: MemberCtx, b: ProxyBody): Promise<ProviderRequest> {
  if (b.body != null && b.file_id != null) throw validationError('body and file_id: send one or the other');
  const q = b.path.indexOf('?');
  const headers: Record<string, string> = { ...(b.headers ?? {}) };
  const req: ProviderRequest = {
    workspaceId: ctx.access.workspace.id,
    provider: b.provider,
    method: b.method,
    path: q < 0 ? b.path : b.path.slice(0, q),
    headers,
    signal: ctx.transport.signal,
    ...(q < 0 ? {} : { query: b.path.slice(q + 1) }),
  };
  const hasType = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type');
  if (typeof b.body === 'string') req.body = b.body;
  else if (b.body != null) {
    req.body = JSON.stringify(b.body);
    if (!hasType) headers['content-type'] = 'application/json';
  } else if (b.file_id != null) {
    // The body's schema checked it is a UUID.
    const file = await getFile(ctx.db, ctx.access.workspace.id, parseUuid(b.file_id, () => notFound('File')));
    req.body = { stream: Readable.from((await ctx.services.blobs.get(file.blob_key)) as AsyncIterable<Uint8Array>), length: file.size };
    if (!hasType) headers['content-type'] = file.content_type;
  }
  return req;
}

/** What the audit log keeps of a proxied call: never headers, bodies or the query (it may carry secrets). */
const auditOf = (b: ProxyBody, status: number) => ({ provider: b.provider, method: b.method, path: b.path.split('?')[0], status });

export const saasProxyRoutes = [
  defineRoute({
    auth: 'user',
    workspace: 'payload',
    role: 'member',
    method: 'post',
    path: '/api/v1/saas-proxy',
    operation: 'saas_proxy',
    response: SaasProxyResult,
    summary: "Call a connected provider's API with the workspace credential: { status, headers, body } (10 MB cap; redirects returned)",
    body: v.object(ProxyRequest),
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      const req = await providerRequest(ctx, ctx.body);
      const res = await client(ctx.services).request({ ...req, maxBytes: PROXY_MAX_BYTES, redirects: 'return', redactCredential: true });
      ctx.audit({ resourceId: ctx.body.provider, details: auditOf(ctx.body, res.status) });
      const type = res.headers['content-type'] ?? '';
      const textual = res.body.length === 0 || TEXTUAL.test(type);
      return {
        status: res.status,
        headers: res.headers,
        body: textual ? res.body.toString('utf8') : res.body.toString('base64'),
        ...(textual ? {} : { body_encoding: 'base64' as const }),
      };
    },
  }),
  defineRoute({
    auth: 'user',
    workspace: 'payload',
    role: 'member',
    method: 'post',
    path: '/api/v1/saas-proxy-download',
    operation: 'saas_proxy_download',
    response: SaasProxyDownload,
    summary: 'Call a provider and store a 2xx response as a file (100 MB cap; HTTPS redirects followed; storage editors)',
    body: v.object({
      ...ProxyRequest,
      suggested_filename: v.optional(v.nullable(v.pipe(v.string('must be a string'), v.maxLength(255)))),
      metadata: v.optional(v.nullable(v.record(v.string(), v.unknown(), 'must be a JSON object'))),
    }),
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const b = ctx.body;
      const filename = b.suggested_filename ?? (b.path.split('?')[0]?.split('/').filter(Boolean).pop() || 'download');
      const bad = checkFilename(filename);
      if (bad) throw validationError(`suggested_filename: ${bad}`);
      const req = await providerRequest(ctx, b);
      const services = ctx.services;
      const r = await client(services).downloadToStorage({
        ...req,
        maxBytes: DOWNLOAD_MAX_BYTES,
        redirects: 'follow-https',
        redactCredential: true,
        blobs: services.blobs,
        file: { filename, metadata: b.metadata ?? {}, createdBy: ctx.principal.user.id },
      });
      ctx.audit({ resourceId: r.ok ? r.file.id : b.provider, details: auditOf(b, r.status) });
      if (!r.ok) return { status: r.status, headers: r.headers, error_body: r.error_body };
      const { id, filename: name, content_type, size, created_at } = r.file;
      return { status: r.status, headers: r.headers, id, filename: name, content_type, size, created_at };
    },
  }),
];
