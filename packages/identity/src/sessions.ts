import { type Db, newId } from '@wds/db';
import { unauthorized } from '@wds/errors';
import type { Principal } from './authenticate.js';
import { SESSION_PREFIX, generateToken, hashToken } from './tokens.js';

export interface IssuedSession {
  id: string;
  token: string;
  expires_at: string;
}

export async function createSession(
  db: Db,
  userId: string,
  opts: { ttlSeconds: number; expiresAt?: Date },
): Promise<IssuedSession> {
  const token = generateToken(SESSION_PREFIX);
  const expiresAt = opts.expiresAt ?? new Date(Date.now() + opts.ttlSeconds * 1000);
  const id = newId();
  await db
    .insertInto('platform.sessions')
    .values({ id, user_id: userId, token_hash: hashToken(token), expires_at: expiresAt })
    .execute();
  return { id, token, expires_at: expiresAt.toISOString() };
}

/**
 * Ends a session now (logout): true when this call revoked it, false when it was revoked already (a second logout
 * racing the first). Cached principals of its user must be dropped by the caller (`user:<id>`, every process).
 */
export async function revokeSession(db: Db, sessionId: string): Promise<boolean> {
  const row = await db
    .updateTable('platform.sessions')
    .set({ revoked_at: new Date() })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Logout: the caller's own session ends now; the id of the session ended. A second logout of the same token finds it
 * revoked: 401, as any later use of it.
 */
export async function logout(db: Db, principal: Principal): Promise<string> {
  const { sessionId } = principal;
  if (sessionId === null || !(await revokeSession(db, sessionId))) throw unauthorized();
  return sessionId;
}
