import type { SecretBox } from '@wds/crypto';
import type { Db } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import type { SecretKeyView } from './views.js';

/** Environment-variable names: what every runtime can pass on. */
const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const MAX_VALUE_BYTES = 64 * 1024;

export const checkEnvKey = (key: string): void => {
  if (!ENV_KEY.test(key)) throw validationError('env_key: letters, digits and _, not starting with a digit, at most 128');
};

const bound = (stfId: string, key: string) => `stf:${stfId}:${key}`;

export async function listSecretKeys(db: Db, stfId: string): Promise<SecretKeyView[]> {
  const rows = await db
    .selectFrom('platform.stf_secrets')
    .select(['env_key', 'created_at', 'updated_at'])
    .where('stf_id', '=', stfId)
    .orderBy('env_key')
    .execute();
  return rows.map((r) => ({ env_key: r.env_key, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() }));
}

export async function upsertSecret(db: Db, box: SecretBox, stfId: string, key: string, value: string): Promise<SecretKeyView> {
  checkEnvKey(key);
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) throw validationError(`value: at most ${MAX_VALUE_BYTES} bytes`);
  const sealed = box.seal(value, bound(stfId, key));
  const row = await db
    .insertInto('platform.stf_secrets')
    .values({ stf_id: stfId, env_key: key, sealed_value: sealed })
    .onConflict((oc) => oc.columns(['stf_id', 'env_key']).doUpdateSet({ sealed_value: sealed, updated_at: new Date() }))
    .returning(['env_key', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow();
  return { env_key: row.env_key, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() };
}

export async function deleteSecret(db: Db, stfId: string, key: string): Promise<void> {
  const r = await db.deleteFrom('platform.stf_secrets').where('stf_id', '=', stfId).where('env_key', '=', key).executeTakeFirst();
  if (r.numDeletedRows === 0n) throw notFound('Secret');
}

/** The plaintext secrets of an STF, for a run only. */
export async function openSecrets(db: Db, box: SecretBox, stfId: string): Promise<Record<string, string>> {
  const rows = await db.selectFrom('platform.stf_secrets').select(['env_key', 'sealed_value']).where('stf_id', '=', stfId).execute();
  return openSealedSecrets(box, stfId, rows);
}

/** Opens sealed rows read elsewhere (a workflow run loads them with the step versions, in one query). */
export function openSealedSecrets(box: SecretBox, stfId: string, rows: { env_key: string; sealed_value: Buffer }[]): Record<string, string> {
  return Object.fromEntries(rows.map((r) => [r.env_key, box.open(r.sealed_value, bound(stfId, r.env_key))]));
}
