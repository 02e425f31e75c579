import { type Db, newId } from '@wds/db';
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
