import { type Db, isUuid } from '@wds/db';
import { notFound, validationError } from '@wds/errors';
import type { Page } from './limits.js';
import type { CredentialView } from './views.js';

/**
 * Provider credentials of a workspace (drive sync, SaaS proxy). Values are sealed by the caller's box (the
 * service's SecretBox: AES-256-GCM, associated data binding the value to its workspace and provider) and are never
 * returned by any listing; only `openCredential` gives the plaintext, for the code that calls the provider.
 */
export interface Sealer {
  seal(plaintext: string, associated: string): Buffer;
  open(sealed: Buffer, associated: string): string;
}

const PROVIDER = /^[a-z][a-z0-9_]{0,63}$/;
export const MAX_CREDENTIAL_BYTES = 64 * 1024;

export const isProviderName = (p: string): boolean => PROVIDER.test(p);

export function checkProvider(provider: string): void {
  if (!PROVIDER.test(provider)) {
    throw validationError('provider: lower-case letters, digits and _, starting with a letter, at most 64 characters');
  }
}

/** What a sealed value is bound to: a value copied to another workspace or provider does not open there. */
export const credentialBinding = (workspaceId: string, provider: string): string => `credential:${workspaceId}:${provider}`;

async function assertWorkspace(db: Db, workspaceId: string): Promise<void> {
  const ws = isUuid(workspaceId)
    ? await db.selectFrom('platform.workspaces').select('id').where('id', '=', workspaceId).where('deleted_at', 'is', null).executeTakeFirst()
    : undefined;
  if (!ws) throw notFound('Workspace');
}

/** Connected providers: names and when each was last set, by provider name. Never values. */
export async function listCredentials(db: Db, workspaceId: string, page: Page): Promise<CredentialView[]> {
  const rows = await db
    .selectFrom('platform.workspace_credentials')
    .select(['provider', 'updated_at'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('provider')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map((r) => ({ provider: r.provider, updated_at: r.updated_at.toISOString() }));
}

/** Stores (or replaces) a provider credential, sealed. 404 for an unknown or deleted workspace. */
export async function putCredential(db: Db, box: Sealer, workspaceId: string, provider: string, value: string): Promise<CredentialView> {
  checkProvider(provider);
  if (value === '') throw validationError('value: must not be empty');
  if (Buffer.byteLength(value) > MAX_CREDENTIAL_BYTES) throw validationError(`value: at most ${MAX_CREDENTIAL_BYTES} bytes`);
  await assertWorkspace(db, workspaceId);
  const sealed = box.seal(value, credentialBinding(workspaceId, provider));
  const row = await db
    .insertInto('platform.workspace_credentials')
    .values({ workspace_id: workspaceId, provider, sealed_value: sealed })
    .onConflict((oc) => oc.columns(['workspace_id', 'provider']).doUpdateSet({ sealed_value: sealed, updated_at: new Date() }))
    .returning(['provider', 'updated_at'])
    .executeTakeFirstOrThrow();
  return { provider: row.provider, updated_at: row.updated_at.toISOString() };
}

/** 404 for an unknown workspace or a provider without a credential. */
export async function deleteCredential(db: Db, workspaceId: string, provider: string): Promise<void> {
  checkProvider(provider);
  await assertWorkspace(db, workspaceId);
  const r = await db
    .deleteFrom('platform.workspace_credentials')
    .where('workspace_id', '=', workspaceId)
    .where('provider', '=', provider)
    .executeTakeFirst();
  if (r.numDeletedRows === 0n) throw notFound('Credential');
}

/** The plaintext credential, for the code that talks to the provider only; undefined when none is stored. */
export async function openCredential(db: Db, box: Sealer, workspaceId: string, provider: string): Promise<string | undefined> {
  const row = await credentialRow(db, workspaceId, provider);
  return row ? box.open(row.sealed_value, credentialBinding(workspaceId, provider)) : undefined;
}

const credentialRow = (db: Db, workspaceId: string, provider: string) =>
  db
    .selectFrom('platform.workspace_credentials')
    .select('sealed_value')
    .where('workspace_id', '=', workspaceId)
    .where('provider', '=', provider)
    .executeTakeFirst();

/** Whether the workspace has a credential for the provider (without opening it). */
export async function hasCredential(db: Db, workspaceId: string, provider: string): Promise<boolean> {
  return (await credentialRow(db, workspaceId, provider)) !== undefined;
}
