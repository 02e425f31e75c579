/**
 * @wds/drive-sync: a workspace's Google Drive, through its connected provider credential — sync roots and the
 * mirrored node tree, the sync state machine, importing and reading single files, and the folder picker.
 */
export { isTextType, storedFilename, utf8Prefix } from './content.js';
export {
  checkDriveId,
  DriveClient,
  type DriveFile,
  type DriveList,
  type DriveListParams,
  driveError,
  EXPORT_FORMATS,
  FOLDER_MIME,
  type SharedDrive,
  scrubTokens,
  summarizeDriveError,
} from './drive-client.js';
export {
  DriveSync,
  type DriveSyncOptions,
  PICKER_MAX_ITEMS,
  type PickerResult,
  READ_MAX_BYTES,
  type ReadResult,
  type SyncResult,
} from './drive-sync.js';
export { checkNewRoot, DRIVE_TYPES, type DriveType, type NewRoot } from './roots.js';
export { ConfigView, RootView, StatusView } from './views.js';
export { checkSettings, DEFAULT_SETTINGS, type DriveSyncSettings } from './settings.js';
export { DRIVE_SYNC_QUEUE, type DriveSyncServices, handleDriveSyncJobs, requireDriveSync, startDriveSync } from './jobs.js';
