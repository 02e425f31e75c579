import { type Db, newId } from '@wds/db';
import { conflict, notFound, validationError } from '@wds/errors';
import type { RedirectUriView } from './views.js';

const MAX_LENGTH = 2000;

/** HTTPS, no fragment (not even an empty `#`), at most 2000 characters. */
export function checkRedirectUri(uri: string): void {
  if (uri.length > MAX_LENGTH) throw validationError(`redirect_uri: at most ${MAX_LENGTH} characters`);
  if (uri.includes('#')) throw validationError('redirect_uri: must not contain a fragment');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw validationError('redirect_uri: must be an absolute URL');
  }
  if (url.protocol !== 'https:') throw validationError('redirect_uri: must use https');
  if (!url.hostname) throw validationError('redirect_uri: must have a host');
}

const toView = (r: { id: string; redirect_uri: string; created_at: Date }): RedirectUriView => ({
  id: r.id,
  redirect_uri: r.redirect_uri,
  created_at: r.created_at.toISOString(),
});

export async function listRedirectUris(db: Db, workspaceId: string): Promise<RedirectUriView[]> {
  const rows = await db
    .selectFrom('platform.redirect_uris')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .execute();
  return rows.map(toView);
}

export async function addRedirectUri(db: Db, workspaceId: string, uri: string): Promise<RedirectUriView> {
  checkRedirectUri(uri);
  const row = await db
    .insertInto('platform.redirect_uris')
    .values({ id: newId(), workspace_id: workspaceId, redirect_uri: uri })
    .onConflict((oc) => oc.columns(['workspace_id', 'redirect_uri']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw conflict('This redirect URI is already registered');
  return toView(row);
}

export async function removeRedirectUri(db: Db, workspaceId: string, uri: string): Promise<RedirectUriView> {
  const row = await db
    .deleteFrom('platform.redirect_uris')
    .where('workspace_id', '=', workspaceId)
    .where('redirect_uri', '=', uri)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Redirect URI');
  return toView(row);
}
