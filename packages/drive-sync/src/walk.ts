/**
 * One sync walk of one root: breadth-first over its folders, page by page, upserting what Drive lists under the
 * walk's generation (sync_id); after a complete walk, nodes of older generations are gone from Drive and are
 * deleted. Every write first checks, under a lock on the workspace's config row, that this walk still owns the
 * sync (config.sync_id): a newer run — a restart after a crash, say — takes over, and the older one stops with
 * Superseded before writing anything more.
 */
import type { Db } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { type DriveClient, type DriveFile, type DriveListParams, FOLDER_MIME } from './drive-client.js';
import type { RootView } from './views.js';

/** A newer sync run owns the workspace's sync now; this one stops without writing. */
export class Superseded extends Error {
  constructor() {
    super('A newer sync run took over');
    this.name = 'Superseded';
  }
}

const DRIVE_ID = /^[A-Za-z0-9_-]{1,256}$/;
/** Drive file ids end up inside `q` strings: only ids of this shape are stored or walked. */
const usable = (f: DriveFile): boolean => typeof f.id === 'string' && DRIVE_ID.test(f.id) && typeof f.name === 'string' && typeof f.mimeType === 'string';

/** Where a root's listing runs: its shared drive, or the user's corpus. */
function rootScope(root: RootView): Partial<DriveListParams> {
  const all = { supportsAllDrives: true, includeItemsFromAllDrives: true };
  return root.shared_drive_id ? { ...all, corpora: 'drive', driveId: root.shared_drive_id } : { ...all, corpora: 'user' };
}

async function assertOwner(db: Db, workspaceId: string, syncId: string): Promise<void> {
  const owner = await db
    .selectFrom('platform.drive_sync_configs')
    .select('workspace_id')
    .where('workspace_id', '=', workspaceId)
    .where('sync_id', '=', syncId)
    .forUpdate()
    .executeTakeFirst();
  if (!owner) throw new Superseded();
}

/** Upserts one listed page under the ownership check and beats the heartbeat; false when the root was removed meanwhile. */
async function writePage(db: Db, workspaceId: string, rootId: string, syncId: string, parentId: string, files: DriveFile[]): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await assertOwner(trx, workspaceId, syncId);
    const root = await trx.selectFrom('platform.drive_sync_roots').select('id').where('id', '=', rootId).where('workspace_id', '=', workspaceId).forShare().executeTakeFirst();
    if (!root) return false;
    if (files.length > 0) {
      await trx
        .insertInto('platform.drive_nodes')
        .values(
          files.map((f) => ({
            workspace_id: workspaceId,
            root_id: rootId,
            drive_file_id: f.id,
            name: f.name,
            mime_type: f.mimeType,
            parent_id: parentId,
            modified_time: f.modifiedTime && !Number.isNaN(Date.parse(f.modifiedTime)) ? f.modifiedTime : null,
            size: f.size !== undefined && /^\d{1,18}$/.test(f.size) ? f.size : null,
            sync_id: syncId,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['workspace_id', 'root_id', 'drive_file_id']).doUpdateSet((eb) => ({
            name: eb.ref('excluded.name'),
            mime_type: eb.ref('excluded.mime_type'),
            parent_id: eb.ref('excluded.parent_id'),
            modified_time: eb.ref('excluded.modified_time'),
            size: eb.ref('excluded.size'),
            sync_id: eb.ref('excluded.sync_id'),
          })),
        )
        .execute();
    }
    await trx.updateTable('platform.drive_sync_configs').set({ updated_at: new Date() }).where('workspace_id', '=', workspaceId).execute();
    return true;
  });
}

/** Deletes the root's nodes the walk did not see; the walk must own the sync. */
async function prune(db: Db, workspaceId: string, rootId: string, syncId: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await assertOwner(trx, workspaceId, syncId);
    const result = await trx
      .deleteFrom('platform.drive_nodes')
      .where('workspace_id', '=', workspaceId)
      .where('root_id', '=', rootId)
      .where('sync_id', '<>', syncId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}

export interface WalkResult {
  nodes: number;
  removed: number;
}

/** Walks one root; undefined when the root was removed during the walk. Throws Superseded or the provider's error. */
export async function walkRoot(db: Db, drive: DriveClient, workspaceId: string, root: RootView, syncId: string, pageSize: number): Promise<WalkResult | undefined> {
  const scope = rootScope(root);
  const queue = [root.drive_id];
  const queued = new Set(queue);
  const stored = new Set<string>();
  while (queue.length > 0) {
    const folder = queue.shift()!;
    const tokens = new Set<string>();
    let pageToken: string | undefined;
    do {
      const page = await drive.listFiles({ q: `'${folder}' in parents and trashed = false`, pageSize, ...(pageToken ? { pageToken } : {}), ...scope });
      // one row per id and statement (ON CONFLICT cannot touch a row twice)
      const files = [...new Map(page.files.filter(usable).map((f) => [f.id, f])).values()];
      if (!(await writePage(db, workspaceId, root.id, syncId, folder, files))) return undefined;
      for (const f of files) {
        stored.add(f.id);
        if (f.mimeType === FOLDER_MIME && !queued.has(f.id)) {
          queued.add(f.id);
          queue.push(f.id);
        }
      }
      pageToken = page.nextPageToken || undefined;
      if (pageToken !== undefined) {
        if (tokens.has(pageToken)) throw new ServiceError('UPSTREAM_ERROR', 'Google Drive files.list repeated a page token');
        tokens.add(pageToken);
      }
    } while (pageToken !== undefined);
  }
  return { nodes: stored.size, removed: await prune(db, workspaceId, root.id, syncId) };
}
