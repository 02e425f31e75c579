import { exchangeToken } from '@wds/identity';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';

const TokenRequest = v.object({
  grant_type: v.string(),
  code: v.optional(v.string()),
  redirect_uri: v.optional(v.string()),
  refresh_token: v.optional(v.string()),
  code_verifier: v.optional(v.string()),
});

const oauthError = (error: string, description: string) =>
  Response.json({ error, error_description: description, code: 'BAD_REQUEST', details: description }, { status: 400 });

export const authRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/auth/me',
    operation: 'get_me',
    summary: 'The calling user',
    auth: 'user',
    handler: async ({ principal }) => principal.user,
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/auth/token',
    operation: 'exchange_token',
    summary: 'OAuth token exchange (authorization_code or refresh_token), forwarded to the authentication server',
    auth: 'none',
    body: TokenRequest,
    handler: async ({ services, body }) => {
      const { config } = services;
      const answer = await exchangeToken(
        { tokenUrl: config.AUTH_TOKEN_URL, clientId: config.AUTH_CLIENT_ID, clientSecret: config.AUTH_CLIENT_SECRET, fetch },
        body,
      );
      if (answer.refused) return oauthError(answer.refused.error, answer.refused.description);
      // Success and OAuth errors pass through as they are, with the upstream status.
      return Response.json(answer.body, { status: answer.status, headers: { 'cache-control': 'no-store' } });
    },
  }),
];
