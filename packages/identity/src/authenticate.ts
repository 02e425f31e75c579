import { OPERATIONS, recordAudit } from '@wds/audit';
import { type Db, isUuid, newId, sql, type User } from '@wds/db';
import { ServiceError, unauthorized } from '@wds/errors';
import type { JwtClaims, JwtVerifier } from './jwt.js';
import { API_KEY_PREFIX, SESSION_PREFIX, hashToken } from './tokens.js';
import { type OnUserCreated, findUserByEmail, isEmail, toPublicUser } from './users.js';
import type { PublicUser } from './views.js';

export type CredentialKind = 'session' | 'api_key' | 'jwt';

/** Who is calling, and with what. */
export interface Principal {
  user: PublicUser;
  kind: CredentialKind;
  apiKeyId: string | null;
  /** The session of a session token (what logout revokes); null for other credentials. */
  sessionId: string | null;
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

/**
 * Whether a credential is a person's interactive login: a session token, or a JWT of the authentication server that
 * no `workspace_id` claim scopes to one workspace. API keys (agents, automation) and scoped JWTs are not.
 */
export const isInteractiveLogin = (p: Principal): boolean => p.kind === 'session' || (p.kind === 'jwt' && p.scopedWorkspaceId === null);

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * Whether an Authorization header carries a credential no one can guess: a session token or API key (256 random
 * bits) or a JWT (a signature). Checking one costs an indexed lookup or a signature check, never a secret someone
 * chose, so a failure budget that is spent may still let it be checked (a valid one through) without helping guessers.
 */
export function isUnguessableBearer(header: string | undefined): boolean {
  const token = tokenOf(header);
  return token !== undefined && (token.startsWith(SESSION_PREFIX) || token.startsWith(API_KEY_PREFIX) || JWT_SHAPE.test(token));
}

const tokenOf = (header: string | undefined): string | undefined => header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1] || undefined;

/** Parses `Authorization: Bearer <token>`; anything else is 401. */
export function bearerToken(header: string | undefined): string {
  const token = tokenOf(header);
  if (!token) throw unauthorized();
  return token;
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
    .select(['u.id', 'u.email', 'u.name', 's.id as session_id', 's.expires_at'])
    .where('s.token_hash', '=', hashToken(token))
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) throw unauthorized();
  return {
    user: toPublicUser(row),
    kind: 'session',
    apiKeyId: null,
    sessionId: row.session_id,
    scopedWorkspaceId: null,
    expiresAt: row.expires_at,
  };
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
    sessionId: null,
    scopedWorkspaceId: null,
    expiresAt: row.expires_at,
  };
}

async function fromJwt(deps: AuthDeps, token: string): Promise<Principal> {
  let claims: JwtClaims;
  try {
    claims = await (deps.jwt as JwtVerifier)(token);
  } catch {
    throw unauthorized();
  }
  if (claims.workspaceId !== undefined && !isUuid(claims.workspaceId)) throw unauthorized();
  const user = await userForJwt(deps, claims);
  return {
    user,
    kind: 'jwt',
    apiKeyId: null,
    sessionId: null,
    scopedWorkspaceId: claims.workspaceId ?? null,
    expiresAt: claims.expiresAt,
  };
}

/** What became of a subject not seen before (audited as `link_jwt_identity`). */
type Linking = { outcome: 'linked' | 'created'; user: User } | { outcome: 'refused'; user: User; reason: string };

/**
 * A JWT subject maps to one user: found by subject. A subject not seen before needs an email its identity provider
 * vouches for (`email_verified`), since that email decides who it becomes: the user of that email when no other
 * subject holds it, else a new user (with that email's pending invitations). An email claim anyone can edit
 * ("nOAuth") therefore never reaches an existing account, and a link, once made, is never replaced.
 */
async function userForJwt(deps: AuthDeps, claims: JwtClaims): Promise<PublicUser> {
  const { db } = deps;
  const { sub } = claims;
  const bySub = await db.selectFrom('platform.users').selectAll().where('jwt_subject', '=', sub).executeTakeFirst();
  if (bySub) return toPublicUser(bySub);
  const email = claims.email;
  if (!email) throw unauthorized('JWT has no email claim for a user not seen before');
  if (!claims.emailVerified) {
    // An attempt on an existing account by an email anyone could have typed: its owner may want to know.
    const target = await findUserByEmail(db, email);
    if (target) await auditLinking(db, claims, { outcome: 'refused', user: target, reason: 'the email is not verified' });
    throw new ServiceError('UNAUTHORIZED', 'JWT email is not verified', 'a subject not seen before needs email_verified: true from the identity provider');
  }
  // ASCII only, as the admin interface and invitations take them: then lower() is the one equivalence of two
  // spellings, in JavaScript and in PostgreSQL alike (no Unicode case folding or normalisation forms to disagree on).
  if (!isEmail(email) || !/^[\x21-\x7e]+$/.test(email)) throw unauthorized('JWT email claim is not an email address');
  const linking = await db.transaction().execute(async (tx): Promise<Linking | PublicUser> => {
    // Serialise first sign-ins of the same subject, then of the same email (always in this order: no deadlock), so
    // two subjects racing for one email cannot both take it.
    await sql`SELECT pg_advisory_xact_lock(hashtext(${'jwt:' + sub}))`.execute(tx);
    await sql`SELECT pg_advisory_xact_lock(hashtext(${'jwt-email:' + email.toLowerCase()}))`.execute(tx);
    const again = await tx.selectFrom('platform.users').selectAll().where('jwt_subject', '=', sub).executeTakeFirst();
    if (again) return toPublicUser(again);
    const existing = await findUserByEmail(tx, email);
    if (existing) {
      if (existing.jwt_subject !== null) return { outcome: 'refused', user: existing, reason: 'the user of this email is linked to another subject' };
      await tx.updateTable('platform.users').set({ jwt_subject: sub }).where('id', '=', existing.id).where('jwt_subject', 'is', null).execute();
      await auditLinking(tx, claims, { outcome: 'linked', user: existing });
      return { outcome: 'linked', user: existing };
    }
    const user = await tx
      .insertInto('platform.users')
      .values({ id: newId(), email, name: claims.name ?? email, jwt_subject: sub })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (deps.onUserCreated) await deps.onUserCreated(tx, user);
    await auditLinking(tx, claims, { outcome: 'created', user });
    return { outcome: 'created', user };
  });
  if (!('outcome' in linking)) return linking;
  if (linking.outcome === 'refused') {
    // Recorded outside the transaction that found it (nothing else of it commits): the real owner may want to know.
    await auditLinking(db, claims, linking);
    throw new ServiceError('UNAUTHORIZED', 'JWT subject not accepted', linking.reason);
  }
  return toPublicUser(linking.user);
}

/**
 * Refusals this process has audited: a refused token is never cached, so each of its requests is refused again, and
 * one entry per subject, account and reason says all (bounded: forgotten all at once when full).
 */
const auditedRefusals = new Set<string>();
const MAX_AUDITED_REFUSALS = 10_000;

/** Every link of a subject to a user, made or refused, in the audit log (no workspace: it concerns the user). */
async function auditLinking(db: Db, claims: JwtClaims, l: Linking): Promise<void> {
  if (l.outcome === 'refused') {
    const key = JSON.stringify([l.user.id, claims.issuer ?? null, claims.sub, l.reason]);
    if (auditedRefusals.has(key)) return;
    if (auditedRefusals.size >= MAX_AUDITED_REFUSALS) auditedRefusals.clear();
    auditedRefusals.add(key);
  }
  await recordAudit(db, {
    workspaceId: null,
    userId: l.user.id,
    apiKeyId: null,
    action: 'link_jwt_identity',
    resourceType: OPERATIONS.link_jwt_identity.resource,
    resourceId: l.user.id,
    details: {
      outcome: l.outcome,
      subject: claims.sub,
      issuer: claims.issuer ?? null,
      email: claims.email ?? null,
      ...(l.outcome === 'refused' ? { reason: l.reason } : {}),
    },
  });
}
