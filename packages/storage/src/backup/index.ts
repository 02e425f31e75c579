export { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, type BackupManifest, type BackupOptions, createBackup, readManifest, type RestoreOptions, restoreBackup } from './backup.js';
export { type BlobRef, blobPath } from './blobs.js';
export { BLOB_DELETION_LOCK, withBlobDeletionLock } from './lock.js';
