/**
 * Drive sync of a workspace: its settings and roots, the sync state machine (idle → queued → running →
 * completed | failed), the walk that mirrors Drive into platform.drive_nodes, and bringing single files in (import
 * into storage, read as text, browse folders). Callers have checked that the user may act in the workspace; every
 * query here is scoped to the workspace id it is given, and every Drive call uses that workspace's credential.
 */
import { type Db, type DriveSyncState, newId, sql, type Uuid } from '@wds/db';
import { ServiceError, validationError } from '@wds/errors';
import { DOWNLOAD_MAX_BYTES, DRIVE_PROVIDER, formatBytes, missingCredential, type ProviderClient } from '@wds/providers';
import type { BlobStore, FileView } from '@wds/storage';
import { isTextType, MEDIA_TYPE, storedFilename, utf8Prefix } from './content.js';
import { checkDriveId, DriveClient, type DriveFile, driveError, EXPORT_FORMATS, FOLDER_MIME, GOOGLE_APPS_PREFIX, scrubTokens } from './drive-client.js';
import { addRoot, listRoots, removeRoot } from './roots.js';
import { checkSettings, storedSettings } from './settings.js';
import type { ConfigView, RootView, StatusView } from './views.js';
import { Superseded, walkRoot } from './walk.js';

/** The largest `read` (and its default). */
export const READ_MAX_BYTES = 10 * 1024 * 1024;
/** At most this many folders (and shared drives) in one picker answer. */
export const PICKER_MAX_ITEMS = 1000;
const MAX_ERROR_CHARS = 1000;

export interface DriveSyncOptions {
  db: Db;
  providers: ProviderClient;
  blobs: BlobStore;
  /** The provider whose credential is used (default drive_workspace). */
  provider?: string;
  /** files.list page size (default 1000, Drive's maximum); drives.list uses at most 100. */
  pageSize?: number;
  /** A queued or running sync without a heartbeat for this long may be requested again (default 15 min). */
  staleAfterMs?: number;
  /**
   * Whether the workspace has a credential for the provider, without opening it (@wds/setup `hasCredential`). With
   * it, `checkCredential` refuses a sync that could only fail in the background; without it, that check passes.
   */
  hasCredential?: (db: Db, workspaceId: string, provider: string) => Promise<boolean>;
}

export type SyncResult =
  | { state: 'completed'; sync_id: string; roots: number; nodes: number; removed: number }
  | { state: 'failed'; sync_id: string; error: string }
  /** A newer run took over (a restart): this one stopped without writing more. */
  | { state: 'superseded'; sync_id: string };

export interface ReadResult {
  id: string;
  name: string;
  mime_type: string;
  content: string;
  truncated: boolean;
}

export interface PickerResult {
  folders: Array<{ id: string; name: string }>;
  shared_drives?: Array<{ id: string; name: string }>;
}

/** What a failed sync shows in status: the error's message and details, no tokens, bounded. */
function summarize(err: ServiceError): string {
  const text = err.details ? `${err.message} (${err.details})` : err.message;
  return scrubTokens(text).slice(0, MAX_ERROR_CHARS);
}

export class DriveSync {
  private readonly db: Db;
  private readonly providers: ProviderClient;
  private readonly blobs: BlobStore;
  private readonly provider: string;
  private readonly pageSize: number;
  private readonly staleAfterMs: number;
  private readonly hasCredential: DriveSyncOptions['hasCredential'];

  constructor(opts: DriveSyncOptions) {
    this.db = opts.db;
    this.providers = opts.providers;
    this.blobs = opts.blobs;
    this.provider = opts.provider ?? DRIVE_PROVIDER;
    this.pageSize = opts.pageSize ?? 1000;
    this.staleAfterMs = opts.staleAfterMs ?? 15 * 60_000;
    this.hasCredential = opts.hasCredential;
  }

  /** CONFLICT naming the provider when the workspace has no credential for it (see `hasCredential`). */
  async checkCredential(workspaceId: string): Promise<void> {
    if (this.hasCredential && !(await this.hasCredential(this.db, workspaceId, this.provider))) throw missingCredential(workspaceId, this.provider);
  }

  /** A Drive v3 client acting with the workspace's credential. */
  drive(workspaceId: string): DriveClient {
    return new DriveClient(this.providers, workspaceId, this.provider);
  }

  async getConfig(workspaceId: string): Promise<ConfigView> {
    const row = await this.db.selectFrom('platform.drive_sync_configs').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
    if (!row) return { settings: storedSettings({}), state: 'idle', last_synced_at: null, last_sync_error: null, updated_at: null };
    return {
      settings: storedSettings(row.settings),
      state: row.state,
      last_synced_at: row.last_synced_at?.toISOString() ?? null,
      last_sync_error: row.last_sync_error,
      updated_at: row.updated_at.toISOString(),
    };
  }

  /** Replaces the settings (see settings.ts for the keys); the sync state is untouched. */
  async putConfig(workspaceId: string, settings: unknown): Promise<ConfigView> {
    const checked = checkSettings(settings);
    const json = JSON.stringify(checked);
    await this.db
      .insertInto('platform.drive_sync_configs')
      .values({ workspace_id: workspaceId, settings: json })
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ settings: json, updated_at: new Date() }))
      .execute();
    return this.getConfig(workspaceId);
  }

  listRoots(workspaceId: string): Promise<RootView[]> {
    return listRoots(this.db, workspaceId);
  }

  /** VALIDATION_ERROR for a bad root, CONFLICT when its drive_id is already a root of the workspace. */
  addRoot(workspaceId: string, input: unknown): Promise<RootView> {
    return addRoot(this.db, workspaceId, input);
  }

  /** Removes the root and its nodes; NOT_FOUND when it is not a root of the workspace. */
  removeRoot(workspaceId: string, rootId: Uuid): Promise<void> {
    return removeRoot(this.db, workspaceId, rootId);
  }

  async status(workspaceId: string): Promise<StatusView> {
    const [config, roots, count] = await Promise.all([
      this.getConfig(workspaceId),
      this.listRoots(workspaceId),
      this.db.selectFrom('platform.drive_nodes').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow(),
    ]);
    return { config, roots, node_count: Number(count.n), state: config.state, last_synced_at: config.last_synced_at, last_sync_error: config.last_sync_error };
  }

  /**
   * Moves idle, completed or failed to queued, atomically: `started` is true for exactly one of concurrent callers,
   * and the caller then enqueues runSync. false while a sync is queued or running — unless that one has shown no
   * heartbeat for staleAfterMs (its process died), which may be requested again.
   */
  async requestSync(workspaceId: string): Promise<{ started: boolean }> {
    const staleSeconds = this.staleAfterMs / 1000;
    const result = await sql<{ workspace_id: string }>`
      INSERT INTO platform.drive_sync_configs AS c (workspace_id, state) VALUES (${workspaceId}, 'queued')
      ON CONFLICT (workspace_id) DO UPDATE SET state = 'queued', updated_at = now()
      WHERE c.state IN ('idle', 'completed', 'failed')
         OR (c.state IN ('queued', 'running') AND c.updated_at < now() - make_interval(secs => ${staleSeconds}))
      RETURNING c.workspace_id`.execute(this.db);
    return { started: result.rows.length === 1 };
  }

  /**
   * Runs a sync: state running under a new sync_id, every root walked, then completed (with last_synced_at) or
   * failed (with the provider's error summarised in last_sync_error). Provider errors are recorded and returned, not
   * thrown. Safe to run again after a crash: the new run takes over, ends with exactly Drive's nodes, and a
   * still-alive older run stops ('superseded') without writing more.
   */
  async runSync(workspaceId: string): Promise<SyncResult> {
    const syncId = newId();
    await this.db
      .insertInto('platform.drive_sync_configs')
      .values({ workspace_id: workspaceId, state: 'running', sync_id: syncId })
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ state: 'running', sync_id: syncId, updated_at: new Date() }))
      .execute();
    const finish = (set: { state: DriveSyncState; last_sync_error: string | null; last_synced_at?: Date }) =>
      this.db
        .updateTable('platform.drive_sync_configs')
        .set({ ...set, updated_at: new Date() })
        .where('workspace_id', '=', workspaceId)
        .where('sync_id', '=', syncId)
        .executeTakeFirst();
    const drive = this.drive(workspaceId);
    try {
      const roots = await this.listRoots(workspaceId);
      let nodes = 0;
      let removed = 0;
      for (const root of roots) {
        const walked = await walkRoot(this.db, drive, workspaceId, root, syncId, this.pageSize);
        nodes += walked?.nodes ?? 0;
        removed += walked?.removed ?? 0;
      }
      const done = await finish({ state: 'completed', last_sync_error: null, last_synced_at: new Date() });
      if (done.numUpdatedRows === 0n) return { state: 'superseded', sync_id: syncId };
      return { state: 'completed', sync_id: syncId, roots: roots.length, nodes, removed };
    } catch (err) {
      if (err instanceof Superseded) return { state: 'superseded', sync_id: syncId };
      if (err instanceof ServiceError) {
        const error = summarize(err);
        const recorded = await finish({ state: 'failed', last_sync_error: error });
        return recorded.numUpdatedRows === 0n ? { state: 'superseded', sync_id: syncId } : { state: 'failed', sync_id: syncId, error };
      }
      await finish({ state: 'failed', last_sync_error: 'Internal error during sync (see the service log)' }).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Imports a Drive file into storage: binary files as they are (alt=media, following Drive's redirect to its
   * download host), native docs exported as text (document and presentation → text/plain, spreadsheet → text/csv).
   * Name and content type come from Drive. PAYLOAD_TOO_LARGE above the workspace's max_file_bytes.
   */
  async materialize(workspaceId: string, driveFileId: string, opts: { userId: string | null }): Promise<FileView> {
    const drive = this.drive(workspaceId);
    const meta = await drive.getFile(checkDriveId(driveFileId, 'file id'));
    const { max_file_bytes: cap } = (await this.getConfig(workspaceId)).settings;
    const exported = this.exportFormat(meta);
    const declared = meta.size === undefined ? undefined : Number(meta.size);
    if (declared !== undefined && declared > cap) throw new ServiceError('PAYLOAD_TOO_LARGE', `The Drive file is larger than ${formatBytes(cap)}`, `${declared} bytes`);
    const request = exported ? drive.exportRequest(meta.id, exported.mimeType) : drive.mediaRequest(meta.id);
    const result = await this.providers.downloadToStorage({
      workspaceId,
      provider: this.provider,
      method: 'GET',
      ...request,
      maxBytes: cap,
      blobs: this.blobs,
      file: {
        filename: storedFilename(meta.name, exported?.extension),
        contentType: exported ? exported.mimeType : MEDIA_TYPE.test(meta.mimeType) ? meta.mimeType : 'application/octet-stream',
        metadata: {
          source: this.provider,
          drive_file_id: meta.id,
          drive_mime_type: meta.mimeType,
          ...(meta.modifiedTime ? { drive_modified_time: meta.modifiedTime } : {}),
          ...(exported ? { exported_as: exported.mimeType } : {}),
        },
        createdBy: opts.userId,
      },
    });
    if (!result.ok) throw driveError(exported ? 'files.export' : 'download', result.status, result.error_body);
    return result.file;
  }

  /** A file's text, at most maxBytes of it (native docs exported as text; binary files only when they are text). */
  async read(workspaceId: string, driveFileId: string, opts: { maxBytes?: number } = {}): Promise<ReadResult> {
    const maxBytes = opts.maxBytes ?? READ_MAX_BYTES;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > READ_MAX_BYTES) throw validationError(`maxBytes: an integer from 1 to ${READ_MAX_BYTES}`);
    const drive = this.drive(workspaceId);
    const meta = await drive.getFile(checkDriveId(driveFileId, 'file id'));
    const exported = this.exportFormat(meta);
    if (!exported && !isTextType(meta.mimeType)) {
      throw validationError(`the Drive file is ${meta.mimeType}, not text; import it into storage instead`, 'Not a text file');
    }
    const res = await drive.content(meta.id, { ...(exported ? { exportAs: exported.mimeType } : {}), maxBytes: DOWNLOAD_MAX_BYTES });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    try {
      for await (const chunk of res.body) {
        const buf = chunk as Buffer;
        if (size + buf.length > maxBytes) {
          chunks.push(buf.subarray(0, maxBytes - size));
          truncated = true;
          break;
        }
        chunks.push(buf);
        size += buf.length;
      }
    } finally {
      res.body.destroy();
    }
    const bytes = Buffer.concat(chunks);
    return { id: meta.id, name: meta.name, mime_type: meta.mimeType, content: truncated ? utf8Prefix(bytes) : bytes.toString('utf8'), truncated };
  }

  /** Folders under `parent` (default: My Drive's root), sorted by name; shared drives too when asked (default: the setting). */
  async picker(workspaceId: string, opts: { parent?: string; sharedDrives?: boolean } = {}): Promise<PickerResult> {
    const parent = opts.parent === undefined ? 'root' : checkDriveId(opts.parent, 'parent');
    const sharedDrives = opts.sharedDrives ?? (await this.getConfig(workspaceId)).settings.include_shared_drives;
    const drive = this.drive(workspaceId);
    const folders: Array<{ id: string; name: string }> = [];
    let pageToken: string | undefined;
    do {
      const page = await drive.listFiles({
        q: `'${parent}' in parents and mimeType = '${FOLDER_MIME}' and trashed = false`,
        pageSize: this.pageSize,
        ...(pageToken ? { pageToken } : {}),
        corpora: parent === 'root' ? 'user' : 'allDrives',
        supportsAllDrives: true,
        includeItemsFromAllDrives: true,
      });
      folders.push(...page.files.map((f) => ({ id: f.id, name: f.name })));
      pageToken = page.nextPageToken || undefined;
    } while (pageToken !== undefined && folders.length < PICKER_MAX_ITEMS);
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    const result: PickerResult = { folders: folders.slice(0, PICKER_MAX_ITEMS).sort(byName) };
    if (sharedDrives) {
      const drives: Array<{ id: string; name: string }> = [];
      let token: string | undefined;
      do {
        const page = await drive.listDrives({ pageSize: Math.min(this.pageSize, 100), ...(token ? { pageToken: token } : {}) });
        drives.push(...page.drives);
        token = page.nextPageToken || undefined;
      } while (token !== undefined && drives.length < PICKER_MAX_ITEMS);
      result.shared_drives = drives.slice(0, PICKER_MAX_ITEMS).sort(byName);
    }
    return result;
  }

  /** The export format of a native doc, undefined for a binary file; VALIDATION_ERROR for folders and other native types. */
  private exportFormat(meta: DriveFile): { mimeType: string; extension: string } | undefined {
    if (meta.mimeType === FOLDER_MIME) throw validationError('the Drive item is a folder', 'Not a file');
    if (!meta.mimeType.startsWith(GOOGLE_APPS_PREFIX)) return undefined;
    const format = EXPORT_FORMATS[meta.mimeType];
    if (!format) throw validationError(`Drive files of type ${meta.mimeType} cannot be exported as text`, 'Not exportable');
    return format;
  }
}
