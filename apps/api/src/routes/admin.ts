import { createLoginLink, createSession, createUser, getUser, loginLinkAuditDetails, toPublicUser } from '@wds/identity';
import { notFound } from '@wds/errors';
import { acceptPendingInvitations } from '@wds/workspaces';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { Email, IsoTimestamp } from '../http/schemas.js';
import { AdminSession, LoginLink, User } from '../http/views/index.js';
import { loginPageUrl } from '../login-page.js';

/** The internal admin interface (docs/http-api.md#the-admin-interface), authenticated by X-Admin-Token. */
export const adminRoutes = [
  defineRoute({
    method: 'post',
    path: '/admin/v1/users',
    operation: 'admin_create_user',
    summary: 'Create a user; pending invitations for the email become memberships',
    auth: 'admin',
    body: v.object({ email: Email, name: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(255)) }),
    status: 201,
    response: User,
    // createUser opens its own transaction (user + invitations), so the wrapper does not.
    transaction: false,
    handler: async ({ db, body }) => toPublicUser(await createUser(db, body, acceptPendingInvitations)),
  }),
  defineRoute({
    method: 'post',
    path: '/admin/v1/users/:userId/sessions',
    operation: 'admin_create_session',
    summary: 'Issue a session token (ses_) for a user',
    auth: 'admin',
    body: v.object({ expires_at: v.optional(IsoTimestamp) }),
    status: 201,
    response: AdminSession,
    handler: async ({ services, db, params, body, audit }) => {
      const userId = params.userId;
      if (!(await getUser(db, userId))) throw notFound('User');
      const s = await createSession(db, userId, {
        ttlSeconds: services.config.SESSION_TTL_SECONDS,
        ...(body.expires_at ? { expiresAt: body.expires_at } : {}),
      });
      audit({ resourceId: s.id, details: { user_id: userId, expires_at: s.expires_at } });
      return { token: s.token, expires_at: s.expires_at };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/admin/v1/users/:userId/login-links',
    operation: 'create_login_link',
    summary: "A one-time login link for a user: the console's page that redeems it for a session token (15 minutes, one use)",
    auth: 'admin',
    status: 201,
    response: LoginLink,
    handler: async ({ services, db, params, audit }) => {
      const link = await createLoginLink(db, params.userId, { pageUrl: loginPageUrl(services.config), createdBy: 'admin' });
      // The entry names the user and the link, never the code: the URL holds it.
      audit({ resourceId: link.id, details: loginLinkAuditDetails(params.userId, link, 'admin') });
      return { url: link.url, expires_at: link.expires_at };
    },
  }),
];
