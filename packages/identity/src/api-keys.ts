import { type ApiKey, type Db, newId } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import { API_KEY_PREFIX, displayPrefix, generateToken, hashToken } from './tokens.js';
import type { ApiKeyCreated, ApiKeyMetadata } from './views.js';

const toMetadata = (k: ApiKey): ApiKeyMetadata => ({
  id: k.id,
  name: k.name,
  prefix: k.key_prefix,
  created_at: k.created_at.toISOString(),
  expires_at: k.expires_at?.toISOString() ?? null,
  last_used_at: k.last_used_at?.toISOString() ?? null,
});

export async function createApiKey(
  db: Db,
  userId: string,
  input: { name: string; expiresAt?: Date },
): Promise<ApiKeyCreated> {
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) {
    throw validationError('expires_at: must be in the future');
  }
  const key = generateToken(API_KEY_PREFIX);
  const row = await db
    .insertInto('platform.api_keys')
    .values({
      id: newId(),
      user_id: userId,
      name: input.name,
      token_hash: hashToken(key),
      key_prefix: displayPrefix(key),
      expires_at: input.expiresAt ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...toMetadata(row), key };
}

export async function listApiKeys(db: Db, userId: string, page: { limit: number; offset: number }) {
  const rows = await db
    .selectFrom('platform.api_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toMetadata);
}

/** Revocation takes effect at once: authentication reads the key row on every request. */
export async function revokeApiKey(db: Db, userId: string, id: string): Promise<ApiKeyMetadata> {
  const row = await db
    .updateTable('platform.api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('API key');
  return toMetadata(row);
}
