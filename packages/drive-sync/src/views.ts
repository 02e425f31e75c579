import { type DriveSyncState, field } from '@wds/db';
import * as v from 'valibot';
import type { DriveType } from './roots.js';

/** The views of drive sync: configuration, roots and state (apps/api re-exports them). */

/** The sync state machine: idle → queued → running → completed | failed. */
const DriveSyncStateView = v.picklist(['idle', 'queued', 'running', 'completed', 'failed'] as const satisfies readonly DriveSyncState[]);
/** A Drive id (file, folder, shared drive, or the alias `root`): not a UUID. */
const DriveId = v.string();

/** The settings (defaults filled in) and the sync state. */
export const ConfigView = v.object({
  settings: v.object({
    /** The folder picker also lists shared drives. */
    include_shared_drives: v.boolean(),
    /** Largest file materialize imports, in bytes. */
    max_file_bytes: v.pipe(field.Integer, v.minValue(1)),
  }),
  state: DriveSyncStateView,
  last_synced_at: v.nullable(field.Timestamp),
  /** A failed sync's provider error, summarised without tokens. */
  last_sync_error: v.nullable(v.string()),
  /** null until the workspace's config is first written. */
  updated_at: v.nullable(field.Timestamp),
});
export type ConfigView = v.InferOutput<typeof ConfigView>;

/** A synced Drive folder, shared drive or My Drive. */
export const RootView = v.object({
  id: field.Uuid,
  drive_id: DriveId,
  drive_type: v.picklist(['folder', 'shared_drive', 'my_drive'] as const satisfies readonly DriveType[]),
  name: v.string(),
  /** The shared drive the root is in (a shared_drive root: its own drive_id); null in My Drive. */
  shared_drive_id: v.nullable(DriveId),
  created_at: field.Timestamp,
});
export type RootView = v.InferOutput<typeof RootView>;

/** Config, roots, mirrored node count, and the state with its last time and error. */
export const StatusView = v.object({
  config: ConfigView,
  roots: v.array(RootView),
  node_count: field.NonNegative,
  state: DriveSyncStateView,
  last_synced_at: v.nullable(field.Timestamp),
  last_sync_error: v.nullable(v.string()),
});
export type StatusView = v.InferOutput<typeof StatusView>;
