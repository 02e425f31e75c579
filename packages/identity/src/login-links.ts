/**
 * One-time login links: how a person signs in to the console of a deployment without an authorization server. An
 * operator (the admin interface or `pnpm cli user login-link`) makes one for a user; the console's page redeems its
 * code once, within LOGIN_LINK_TTL_MINUTES, for a session token. The code is as unguessable as a session token and,
 * like one, stored only as its SHA-256 (`hashToken`).
 */
import * as crypto from 'node:crypto';
import { type Db, type LoginLinkCreator, newId, sql } from '@wds/db';
import { ServiceError, notFound } from '@wds/errors';
import { type IssuedSession, createSession } from './sessions.js';
import { hashToken } from './tokens.js';
import { getUser } from './users.js';
import type { LoginLink } from './views.js';

/** Long enough to pass a link on and open it; short enough that one found later in a chat or a mail is worthless. */
export const LOGIN_LINK_TTL_MINUTES = 15;

/** 256 random bits, base64url: safe in a URL fragment as it is. */
const generateCode = (): string => crypto.randomBytes(32).toString('base64url');

/**
 * The page's URL with the code in its fragment: a fragment is never sent to a server, so the code reaches no access
 * log, proxy or Referer header; the page reads it and posts it.
 */
const linkUrl = (pageUrl: string, code: string): string => `${pageUrl}#code=${code}`;

/** A new link for the user: its URL (which holds the code, shown this once), when it expires, and its id (audit). */
export interface IssuedLoginLink extends LoginLink {
  id: string;
}

export async function createLoginLink(
  db: Db,
  userId: string,
  opts: { pageUrl: string; createdBy: LoginLinkCreator },
): Promise<IssuedLoginLink> {
  if (!(await getUser(db, userId))) throw notFound('User');
  await pruneDeadLinks(db, userId);
  const code = generateCode();
  const row = await db
    .insertInto('platform.login_links')
    .values({
      id: newId(),
      user_id: userId,
      code_hash: hashToken(code),
      // The database's clock, as redemption compares with its now(): no skew between processes.
      expires_at: sql<Date>`now() + make_interval(mins => ${LOGIN_LINK_TTL_MINUTES})`,
      created_by: opts.createdBy,
    })
    .returning(['id', 'expires_at'])
    .executeTakeFirstOrThrow();
  return { id: row.id, url: linkUrl(opts.pageUrl, code), expires_at: row.expires_at.toISOString() };
}

/** What the audit log keeps of a new link: whose it is, who made it and until when; never its code or URL. */
export const loginLinkAuditDetails = (userId: string, link: IssuedLoginLink, createdBy: LoginLinkCreator): Record<string, unknown> => ({
  user_id: userId,
  created_by: createdBy,
  expires_at: link.expires_at,
});

/**
 * A user's links that can no longer be redeemed (used, or expired a day ago) are removed when they get a new one,
 * so the table stays as small as the links in use without a sweep; the audit log keeps the record of each.
 */
async function pruneDeadLinks(db: Db, userId: string): Promise<void> {
  await db
    .deleteFrom('platform.login_links')
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('used_at', 'is not', null), eb('expires_at', '<', sql<Date>`now() - interval '1 day'`)]))
    .execute();
}

/** A redeemed link: whose it was, and the session it became. */
export interface RedeemedLoginLink {
  linkId: string;
  userId: string;
  session: IssuedSession;
}

/** The one answer to a code that signs no one in, whatever the reason: a guesser learns nothing from it. */
export const invalidLoginLink = () => new ServiceError('UNAUTHORIZED', 'The login link is not valid', 'it was used already, has expired, or never existed');

/**
 * Redeems a code for a new session of its user (lifetime `ttlSeconds`). One UPDATE claims the link only while it is
 * unused and unexpired, so of two redemptions racing for one code the second waits for the first's row lock, finds
 * `used_at` set and is refused: one session per link. Call it in a transaction, so a session that could not be
 * created leaves the link unused.
 */
export async function redeemLoginLink(db: Db, code: string, opts: { ttlSeconds: number }): Promise<RedeemedLoginLink> {
  const link = await db
    .updateTable('platform.login_links')
    .set({ used_at: sql<Date>`now()` })
    .where('code_hash', '=', hashToken(code))
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning(['id', 'user_id'])
    .executeTakeFirst();
  if (!link) throw invalidLoginLink();
  const session = await createSession(db, link.user_id, { ttlSeconds: opts.ttlSeconds });
  return { linkId: link.id, userId: link.user_id, session };
}
