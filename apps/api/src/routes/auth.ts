import { ServiceError } from '@wds/errors';
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
      const form = new URLSearchParams();
      if (body.grant_type === 'authorization_code') {
        if (!body.code) return oauthError('invalid_request', 'code is required');
        if (!body.redirect_uri) return oauthError('invalid_request', 'redirect_uri is required');
        let uri: URL;
        try {
          uri = new URL(body.redirect_uri);
        } catch {
          return oauthError('invalid_request', 'redirect_uri must be an absolute HTTPS URL');
        }
        if (uri.protocol !== 'https:') return oauthError('invalid_request', 'redirect_uri must use https');
        form.set('code', body.code);
        form.set('redirect_uri', body.redirect_uri);
        if (body.code_verifier) form.set('code_verifier', body.code_verifier);
      } else if (body.grant_type === 'refresh_token') {
        if (!body.refresh_token) return oauthError('invalid_request', 'refresh_token is required');
        form.set('refresh_token', body.refresh_token);
      } else {
        return oauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
      }
      if (!config.AUTH_TOKEN_URL) {
        throw new ServiceError('SERVICE_UNAVAILABLE', 'Token exchange is not configured', 'AUTH_TOKEN_URL is not set');
      }
      form.set('grant_type', body.grant_type);
      if (config.AUTH_CLIENT_ID) form.set('client_id', config.AUTH_CLIENT_ID);
      if (config.AUTH_CLIENT_SECRET) form.set('client_secret', config.AUTH_CLIENT_SECRET);
      let upstream: Response;
      try {
        upstream = await fetch(config.AUTH_TOKEN_URL, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form,
          redirect: 'manual',
          signal: AbortSignal.timeout(15_000),
        });
      } catch {
        throw new ServiceError('UPSTREAM_ERROR', 'The authentication server did not answer');
      }
      const text = await upstream.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new ServiceError('UPSTREAM_ERROR', 'The authentication server sent a non-JSON answer', `status ${upstream.status}`);
      }
      // Success and OAuth errors pass through as they are, with the upstream status.
      return Response.json(json, { status: upstream.status, headers: { 'cache-control': 'no-store' } });
    },
  }),
];
