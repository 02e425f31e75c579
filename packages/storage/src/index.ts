export {
  type BlobStore,
  BlobTooLargeError,
  type ByteRange,
  type PutOptions,
  type PutResult,
  type StoredBlob,
  blobNotFound,
  isBlobKey,
  newBlobKey,
} from './blob-store.js';
export { type Counted, pumpHashed } from './hashing.js';
export { createFsBlobStore, type FsBlobStore, type FsBlobStoreOptions } from './fs-store.js';
export { createS3BlobStore, type S3BlobStore, type S3BlobStoreOptions } from './s3-store.js';
export { type NewFile, getFile, insertFile, listFiles, softDeleteFile } from './files.js';
export { FileView } from './views.js';
export { checkFilename, contentDisposition } from './disposition.js';
export { parseByteRange } from './byte-range.js';
export {
  type CheckedFileFields,
  DEFAULT_CONTENT_TYPE,
  type FileFields,
  MAX_METADATA_BYTES,
  type StorableInputRules,
  checkFileFields,
} from './file-fields.js';
export { type PutUpload, type Upload, type UploadDeps, storeUpload } from './file-upload.js';
export { type DownloadDeps, type FileDownload, openFileDownload } from './file-download.js';
export * from './backup/index.js';
export { type OrphanSweep, sweepOrphanBlobs } from './orphans.js';
