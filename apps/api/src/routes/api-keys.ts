import { createApiKey, listApiKeys, revokeApiKey } from '@wds/identity';
import * as v from 'valibot';
import { ApiKey, ApiKeyCreated } from '../http/views/index.js';
import { defineRoute } from '../http/route.js';
import { IsoTimestamp, PageQuery } from '../http/schemas.js';

export const apiKeyRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/api-keys',
    operation: 'list_api_keys',
    response: v.array(ApiKey),
    summary: "The caller's API keys (metadata only)",
    auth: 'session',
    query: PageQuery,
    handler: ({ db, principal, query }) => listApiKeys(db, principal.user.id, query),
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/api-keys',
    operation: 'create_api_key',
    response: ApiKeyCreated,
    summary: 'Create an API key; the raw key is returned once',
    auth: 'session',
    body: v.object({
      name: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(255)),
      expires_at: v.optional(v.nullable(IsoTimestamp)),
    }),
    status: 201,
    handler: async ({ db, principal, body, audit }) => {
      const key = await createApiKey(db, principal.user.id, {
        name: body.name,
        ...(body.expires_at ? { expiresAt: body.expires_at } : {}),
      });
      audit({ details: { name: key.name, prefix: key.prefix, expires_at: key.expires_at } });
      return key;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/api-keys/:keyId',
    operation: 'revoke_api_key',
    summary: 'Revoke an API key; it stops working at once',
    auth: 'session',
    invalidates: 'user',
    status: 204,
    handler: async ({ db, principal, params, audit }) => {
      const key = await revokeApiKey(db, principal.user.id, params.keyId);
      audit({ resourceId: key.id, details: { name: key.name, prefix: key.prefix } });
    },
  }),
];
