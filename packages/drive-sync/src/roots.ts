/**
 * Sync roots: the Drive folders, shared drives and My Drive a workspace syncs. Every read and write is scoped to
 * the workspace, so another workspace's root, an unknown id and a malformed id are the same NOT_FOUND.
 */
import { type Db, newId, type Uuid } from '@wds/db';
import { conflict, notFound, validationError } from '@wds/errors';
import { checkDriveId } from './drive-client.js';
import type { RootView } from './views.js';

export type DriveType = 'folder' | 'shared_drive' | 'my_drive';
export const DRIVE_TYPES: readonly DriveType[] = ['folder', 'shared_drive', 'my_drive'];

/**
 * - folder: `drive_id` is the folder's id; `shared_drive_id` when the folder is in a shared drive.
 * - shared_drive: `drive_id` is the shared drive's id; `shared_drive_id` may be left out (it is the same id).
 * - my_drive: `drive_id` is 'root' or the My Drive folder id; no `shared_drive_id`.
 */
export interface NewRoot {
  drive_id: string;
  drive_type: DriveType;
  name: string;
  shared_drive_id?: string | null;
}

const MAX_NAME = 255;

export function checkNewRoot(input: unknown): Required<NewRoot> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw validationError('root: must be a JSON object');
  const { drive_id, drive_type, name, shared_drive_id } = input as Record<string, unknown>;
  const problems: string[] = [];
  const attempt = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      problems.push((err as { details?: string }).details ?? String(err));
    }
  };
  attempt(() => checkDriveId(drive_id, 'drive_id'));
  if (!DRIVE_TYPES.includes(drive_type as DriveType)) problems.push(`drive_type: one of ${DRIVE_TYPES.join(', ')}`);
  if (typeof name !== 'string' || name.trim() === '' || [...name].length > MAX_NAME || /\p{Cc}/u.test(name)) {
    problems.push(`name: 1 to ${MAX_NAME} characters, no control characters`);
  }
  const sharedGiven = shared_drive_id !== undefined && shared_drive_id !== null;
  if (sharedGiven) attempt(() => checkDriveId(shared_drive_id, 'shared_drive_id'));
  if (sharedGiven && drive_type === 'my_drive') problems.push('shared_drive_id: only for a shared_drive or a folder in a shared drive');
  if (sharedGiven && drive_type === 'shared_drive' && shared_drive_id !== drive_id) problems.push('shared_drive_id: for a shared_drive root it is drive_id itself (or leave it out)');
  if (problems.length > 0) throw validationError(problems.join('; '));
  return {
    drive_id: drive_id as string,
    drive_type: drive_type as DriveType,
    name: (name as string).trim(),
    shared_drive_id: drive_type === 'shared_drive' ? (drive_id as string) : sharedGiven ? (shared_drive_id as string) : null,
  };
}

type RootRow = { id: string; drive_id: string; drive_type: DriveType; name: string; shared_drive_id: string | null; created_at: Date };
const toView = (r: RootRow): RootView => ({ ...r, created_at: r.created_at.toISOString() });
const COLUMNS = ['id', 'drive_id', 'drive_type', 'name', 'shared_drive_id', 'created_at'] as const;

export async function listRoots(db: Db, workspaceId: string): Promise<RootView[]> {
  const rows = await db.selectFrom('platform.drive_sync_roots').select(COLUMNS).where('workspace_id', '=', workspaceId).orderBy('id').execute();
  return rows.map(toView);
}

export async function addRoot(db: Db, workspaceId: string, input: unknown): Promise<RootView> {
  const root = checkNewRoot(input);
  try {
    const row = await db
      .insertInto('platform.drive_sync_roots')
      .values({ id: newId(), workspace_id: workspaceId, ...root })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return toView(row);
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw conflict('This Drive item is already a sync root of the workspace', `drive_id ${root.drive_id}`);
    throw err;
  }
}

/** Removes the root and its nodes; NOT_FOUND for another workspace's root or an unknown id. */
export async function removeRoot(db: Db, workspaceId: string, rootId: Uuid): Promise<void> {
  const result = await db.deleteFrom('platform.drive_sync_roots').where('id', '=', rootId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw notFound('Sync root');
}
