import * as v from 'valibot';
import { Integer, NonNegative, Timestamp, Uuid } from './common.js';

/** The views of drive sync (@wds/drive-sync): configuration, roots, state, and single Drive files. */

/** The sync state machine: idle → queued → running → completed | failed. */
const DriveSyncState = v.picklist(['idle', 'queued', 'running', 'completed', 'failed']);
/** A Drive id (file, folder, shared drive, or the alias `root`): not a UUID. */
const DriveId = v.string();
/** A Drive folder or shared drive as the picker lists it. */
const DriveItem = v.object({ id: DriveId, name: v.string() });

/** get_drive_sync_config and put_drive_sync_config: the settings (defaults filled in) and the sync state (ConfigView). */
export const DriveSyncConfig = v.object({
  settings: v.object({
    /** The folder picker also lists shared drives. */
    include_shared_drives: v.boolean(),
    /** Largest file materialize imports, in bytes. */
    max_file_bytes: v.pipe(Integer, v.minValue(1)),
  }),
  state: DriveSyncState,
  last_synced_at: v.nullable(Timestamp),
  /** A failed sync's provider error, summarised without tokens. */
  last_sync_error: v.nullable(v.string()),
  /** null until the workspace's config is first written. */
  updated_at: v.nullable(Timestamp),
});
/** A synced Drive folder, shared drive or My Drive (RootView): list_drive_sync_roots lists them, add_drive_sync_root answers one. */
export const DriveSyncRoot = v.object({
  id: Uuid,
  drive_id: DriveId,
  drive_type: v.picklist(['folder', 'shared_drive', 'my_drive']),
  name: v.string(),
  /** The shared drive the root is in (a shared_drive root: its own drive_id); null in My Drive. */
  shared_drive_id: v.nullable(DriveId),
  created_at: Timestamp,
});
/** get_drive_sync_status: config, roots, mirrored node count, and the state with its last time and error (StatusView). */
export const DriveSyncStatus = v.object({
  config: DriveSyncConfig,
  roots: v.array(DriveSyncRoot),
  node_count: NonNegative,
  state: DriveSyncState,
  last_synced_at: v.nullable(Timestamp),
  last_sync_error: v.nullable(v.string()),
});
/** start_drive_sync: whether this call queued a sync (false while one is queued or running), and the state now. */
export const DriveSyncStarted = v.object({ started: v.boolean(), state: DriveSyncState });
/** read_drive_file: a Drive file's text (native documents exported), cut at max_bytes (ReadResult). */
export const DriveFileText = v.object({
  id: DriveId,
  name: v.string(),
  mime_type: v.string(),
  content: v.string(),
  /** The content was cut at max_bytes (at a UTF-8 character boundary). */
  truncated: v.boolean(),
});
/** drive_picker: folders under the parent, sorted by name, and the shared drives when asked for (PickerResult). */
export const DrivePicker = v.object({
  folders: v.array(DriveItem),
  /** Only with shared_drives=true. */
  shared_drives: v.optional(v.array(DriveItem)),
});
