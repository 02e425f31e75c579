import { exchangeToken, logout, redeemLoginLink } from '@wds/identity';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { LoginSession, SignInMethods, User } from '../http/views/index.js';
import { CALLBACK_PAGE_PATH } from '../login-page.js';

const TokenRequest = v.object({
  grant_type: v.string(),
  code: v.optional(v.string()),
  redirect_uri: v.optional(v.string()),
  refresh_token: v.optional(v.string()),
  code_verifier: v.optional(v.string()),
});

/**
 * The OAuth answers handed back as they are (RFC 6749 §5.1, §5.2): the authentication server's, so stated as open
 * objects with the fields the RFC requires; our own refusals of a malformed request add `code` and `details`.
 */
const TOKEN_RESPONSES = {
  '200': {
    description: "The authentication server's token response (RFC 6749 §5.1), as it sent it",
    headers: { 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } },
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['access_token', 'token_type'],
          properties: {
            access_token: { type: 'string' },
            token_type: { type: 'string' },
            expires_in: { type: 'integer' },
            refresh_token: { type: 'string' },
            scope: { type: 'string' },
            id_token: { type: 'string' },
          },
          additionalProperties: {},
        },
      },
    },
  },
  ...Object.fromEntries(
    ['400', '401'].map((status) => [
      status,
      {
        description: `An OAuth error (RFC 6749 §5.2): the authentication server's, with its status${status === '400' ? ', or ours for a malformed request (with code BAD_REQUEST)' : ''}`,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['error'],
              properties: {
                error: { type: 'string', description: 'The OAuth error code (invalid_grant, invalid_request, …)' },
                error_description: { type: 'string' },
                error_uri: { type: 'string' },
                code: { type: 'string', const: 'BAD_REQUEST' },
                details: { type: 'string' },
              },
              additionalProperties: {},
            },
          },
        },
      },
    ]),
  ),
};

/** A login link's code as the console's page read it from the link's fragment; any other text is simply not one (401). */
const RedeemRequest = v.object({
  code: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must have at most 256 characters')),
});

const oauthError = (error: string, description: string) =>
  Response.json({ error, error_description: description, code: 'BAD_REQUEST', details: description }, { status: 400 });

export const authRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/auth/sign-in-methods',
    operation: 'get_sign_in_methods',
    summary: 'How a browser page signs a person in: the authorization-code flow when an authorization server is configured, and login links',
    auth: 'none',
    response: SignInMethods,
    handler: async ({ services }) => {
      const c = services.config;
      // loadConfig admits AUTH_AUTHORIZE_URL only with the token exchange and an https CONSOLE_URL.
      const code =
        c.AUTH_AUTHORIZE_URL && c.AUTH_CLIENT_ID && c.CONSOLE_URL
          ? { authorization_endpoint: c.AUTH_AUTHORIZE_URL, client_id: c.AUTH_CLIENT_ID, scope: c.AUTH_SCOPE, redirect_uri: `${c.CONSOLE_URL}${CALLBACK_PAGE_PATH}` }
          : null;
      return { authorization_code: code, login_links: true as const };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/auth/me',
    operation: 'get_me',
    summary: 'The calling user',
    auth: 'user',
    response: User,
    handler: async ({ principal }) => principal.user,
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/auth/token',
    operation: 'exchange_token',
    summary: 'OAuth token exchange (authorization_code or refresh_token), forwarded to the authentication server',
    auth: 'none',
    body: TokenRequest,
    openapi: { responses: TOKEN_RESPONSES, errors: [502] },
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
  defineRoute({
    method: 'post',
    path: '/api/v1/auth/login-links/redeem',
    operation: 'redeem_login_link',
    summary: "Redeem a one-time login link (its code) for a session token: the console's login page",
    auth: 'none',
    body: RedeemRequest,
    response: LoginSession,
    // A wrong, used or expired code is a failed authentication (401), charged to the address like a wrong token.
    checksCredential: true,
    openapi: { errors: [401] },
    handler: async ({ services, db, body, audit, transport }) => {
      const { linkId, userId, session } = await redeemLoginLink(db, body.code, { ttlSeconds: services.config.SESSION_TTL_SECONDS });
      // A token in an answer is not for caches (RFC 6749 §5.1 asks the same of the token endpoint).
      transport.setHeader('Cache-Control', 'no-store');
      audit({ userId, resourceId: linkId, details: { session_id: session.id } });
      return { token: session.token, expires_at: session.expires_at };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/auth/logout',
    operation: 'logout',
    summary: 'End the session of the presenting session token, at once and in every process',
    auth: 'session',
    status: 204,
    // Every process drops its cached principals of the user (user:<id>), so the token is refused everywhere at once.
    invalidates: 'user',
    mcp: { exclude: "ends the browser session whose token it is sent with; an agent's API key is revoked with revoke_api_key" },
    handler: async ({ db, principal, audit }) => {
      audit({ resourceId: await logout(db, principal) });
    },
  }),
];
