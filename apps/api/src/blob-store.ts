import { join } from 'node:path';
import { type BlobStore, createFsBlobStore, createS3BlobStore } from '@wds/storage';
import type { Config } from './config.js';

/** The blob store the configuration names: the filesystem (default, STORAGE_DIR or DATA_DIR/blobs) or S3. */
export function createBlobStore(config: Config, dataDir: string): BlobStore {
  if (config.STORAGE_BACKEND === 's3') {
    if (!config.S3_BUCKET) throw new Error('Invalid configuration: STORAGE_BACKEND=s3 needs S3_BUCKET');
    return createS3BlobStore({
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
      prefix: config.S3_PREFIX,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
      ...(config.S3_ACCESS_KEY_ID ? { accessKeyId: config.S3_ACCESS_KEY_ID } : {}),
      ...(config.S3_SECRET_ACCESS_KEY ? { secretAccessKey: config.S3_SECRET_ACCESS_KEY } : {}),
    });
  }
  return createFsBlobStore(config.STORAGE_DIR ?? join(dataDir, 'blobs'));
}
