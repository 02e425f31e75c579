import { type Db, isUuid, newId, sql } from '@wds/db';
import { unauthorized } from '@wds/errors';
import type { JwtVerifier } from './jwt.js';
import { API_KEY_PREFIX, SESSION_PREFIX, hashToken } from './tokens.js';
import { type OnUserCreated, type PublicUser, findUserByEmail, toPublicUser } from './users.js';

export type CredentialKind = 'session' | 'api_key' | 'jwt';

/** Who is calling, and with what. */
export interface Principal {
  user: PublicUser;
  kind: CredentialKind;
  apiKeyId: string | null;
  /** Set for a scoped JWT: the one workspace it may reach. */
  scopedWorkspaceId: string | null;
  /** When the credential stops working (null: never), so a cached principal is never used past it. */
  expiresAt: Date | null;
}

export interface AuthDeps {
  db: Db;
  jwt: JwtVerifier | undefined;
  onUserCreated?: OnUserCreated;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Parses `Authorization: Bearer <token>`; anything else is 401. */
export function bearerToken(header: string | undefined): string {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  if (!m?.[1]) throw unauthorized();
  return m[1];
}

export async function authenticate(deps: AuthDeps, token: string): Promise<Principal> {
  if (token.startsWith(SESSION_PREFIX)) return fromSession(deps.db, token);
  if (token.startsWith(API_KEY_PREFIX)) return fromApiKey(deps.db, token);
  if (deps.jwt && JWT_SHAPE.test(token)) return fromJwt(deps, token);
  throw unauthorized();
}

async function fromSession(db: Db, token: string): Promise<Principal> {
  const row = await db
    .selectFrom('platform.sessions as s')
    .innerJoin('platform.users as u', 'u.id', 's.user_id')
    .select(['u.id', 'u.email', 'u.name', 's.expires_at'])
    .where('s.token_hash', '=', hashToken(token))
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) throw unauthorized();
  return { user: toPublicUser(row), kind: 'session', apiKeyId: null, scopedWorkspaceId: null, expiresAt: row.expires_at };
}

async function fromApiKey(db: Db, token: string): Promise<Principal> {
  const now = new Date();
  const row = await db
    .selectFrom('platform.api_keys as k')
    .innerJoin('platform.users as u', 'u.id', 'k.user_id')
    .select(['u.id', 'u.email', 'u.name', 'k.id as key_id', 'k.last_used_at', 'k.expires_at'])
    .where('k.token_hash', '=', hashToken(token))
    .where('k.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', now)]))
    .executeTakeFirst();
  if (!row) throw unauthorized();
  // last_used_at at minute resolution: one write per key per minute, not per request.
  if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() > 60_000) {
    await db.updateTable('platform.api_keys').set({ last_used_at: now }).where('id', '=', row.key_id).execute();
  }
  return {
    user: toPublicUser(row),
    kind: 'api_key',
    apiKeyId: row.key_id,
    scopedWorkspaceId: null,
    expiresAt: row.expires_at,
  };
}

async function fromJwt(deps: AuthDeps, token: string): Promise<Principal> {
  let claims: Awaited<ReturnType<JwtVerifier>>;
  try {
    claims = await (deps.jwt as JwtVerifier)(token);
  } catch {
    throw unauthorized();
  }
  if (claims.workspaceId !== undefined && !isUuid(claims.workspaceId)) throw unauthorized();
  const user = await userForJwt(deps, claims.sub, claims.email, claims.name);
  return { user, kind: 'jwt', apiKeyId: null, scopedWorkspaceId: claims.workspaceId ?? null, expiresAt: claims.expiresAt };
}

/** A JWT subject maps to one user: found by subject, else linked by email, else created from the claims. */
async function userForJwt(deps: AuthDeps, sub: string, email?: string, name?: string): Promise<PublicUser> {
  const { db } = deps;
  const bySub = await db.selectFrom('platform.users').selectAll().where('jwt_subject', '=', sub).executeTakeFirst();
  if (bySub) return toPublicUser(bySub);
  if (!email) throw unauthorized('JWT has no email claim for a user not seen before');
  return db.transaction().execute(async (tx) => {
    // Serialise concurrent first sign-ins of the same subject.
    await sql`SELECT pg_advisory_xact_lock(hashtext(${'jwt:' + sub}))`.execute(tx);
    const again = await tx.selectFrom('platform.users').selectAll().where('jwt_subject', '=', sub).executeTakeFirst();
    if (again) return toPublicUser(again);
    const existing = await findUserByEmail(tx, email);
    if (existing) {
      if (existing.jwt_subject && existing.jwt_subject !== sub) throw unauthorized();
      await tx.updateTable('platform.users').set({ jwt_subject: sub }).where('id', '=', existing.id).execute();
      return toPublicUser(existing);
    }
    const user = await tx
      .insertInto('platform.users')
      .values({ id: newId(), email, name: name ?? email, jwt_subject: sub })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (deps.onUserCreated) await deps.onUserCreated(tx, user);
    return toPublicUser(user);
  });
}
