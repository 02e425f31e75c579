import '@wds/testkit';
import { UploadError } from '@wds/uploads';
import { rm } from 'node:fs/promises';
import { createDb, type Db, migrateToLatest, newId, asUuid } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createFsBlobStore,
  type FileView,
  type FsBlobStore,
  getFile,
  openFileDownload,
  type StorableInputRules,
  storeUpload,
  type UploadDeps,
} from '../src/index.js';
import { filesUnder, readAll, sha256, tempDir } from './support.js';

let db: Db;
let dir: string;
let blobs: FsBlobStore;
const W = newId();
const rules: StorableInputRules = { textProblem: () => undefined, checkJsonValue: () => undefined };


async function* bytes(b: Buffer): AsyncGenerator<Uint8Array> {
  yield b;
}

/** The deps of an upload, recording whether the too-large hook ran. */
function deps(extra: Partial<UploadDeps> = {}): UploadDeps & { tooLarge: boolean } {
  const d = {
    db,
    blobs,
    maxBytes: 1024,
    rules,
    tooLarge: false,
    onTooLarge: () => {
      d.tooLarge = true;
    },
    ...extra,
  };
  return d;
}

const blobFiles = async () => (await filesUnder(dir)).filter((f) => !f.startsWith('tmp/'));

async function failure(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'storage_upload' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: W, name: 'w' }).execute();
  dir = await tempDir('upload');
  blobs = createFsBlobStore(dir, { cleanTempOnStart: false });
});
afterAll(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('storeUpload', () => {
  it('stores the bytes, then the checked record, then runs onStored', async () => {
    const data = Buffer.from('hello, file');
    const stored: FileView[] = [];
    const file = await storeUpload(deps(), {
      workspaceId: W,
      createdBy: null,
      receive: async (put) => ({ blob: await put(bytes(data)), fields: { filename: 'a.txt', content_type: 'text/plain', metadata: { k: 1 } } }),
      onStored: (f) => {
        stored.push(f);
      },
    });
    expect(file).toMatchObject({ workspace_id: W, filename: 'a.txt', content_type: 'text/plain', size: data.length, sha256: sha256(data), metadata: { k: 1 } });
    expect(stored).toEqual([file]);
    const { blob_key } = await getFile(db, W, asUuid(file.id));
    expect(await readAll(await blobs.get(blob_key))).toEqual(data);
  });

  it('bad fields after the bytes were written: 400, and the bytes are removed', async () => {
    const before = await blobFiles();
    const err = await failure(
      storeUpload(deps(), {
        workspaceId: W,
        createdBy: null,
        receive: async (put) => ({ blob: await put(bytes(Buffer.from('x'))), fields: { filename: '..', content_type: undefined, metadata: undefined } }),
      }),
    );
    expect(err.toBody()).toEqual({ error: 'Invalid request', code: 'VALIDATION_ERROR', details: 'filename: must not be . or ..' });
    expect(await blobFiles()).toEqual(before);
  });

  it('a malformed body is 400 with the parser message; the bytes already written are removed', async () => {
    const before = await blobFiles();
    const err = await failure(
      storeUpload(deps(), {
        workspaceId: W,
        createdBy: null,
        receive: async (put) => {
          await put(bytes(Buffer.from('x')));
          throw new UploadError('content: required');
        },
      }),
    );
    expect(err.toBody()).toEqual({ error: 'Invalid request', code: 'VALIDATION_ERROR', details: 'content: required' });
    expect(await blobFiles()).toEqual(before);
  });

  it('over maxBytes: onTooLarge, then 413, and nothing is kept', async () => {
    const before = await blobFiles();
    const d = deps({ maxBytes: 10 });
    const err = await failure(
      storeUpload(d, {
        workspaceId: W,
        createdBy: null,
        receive: async (put) => ({ blob: await put(bytes(Buffer.alloc(11))), fields: { filename: 'a', content_type: undefined, metadata: undefined } }),
      }),
    );
    expect(d.tooLarge).toBe(true);
    expect(err.toBody()).toEqual({ error: 'The file is larger than the limit', code: 'PAYLOAD_TOO_LARGE', details: 'at most 10 bytes' });
    expect(await blobFiles()).toEqual(before);
  });

  it('an error of onStored removes the bytes and is passed on as it is', async () => {
    const before = await blobFiles();
    const boom = new Error('boom');
    const err = await storeUpload(deps(), {
      workspaceId: W,
      createdBy: null,
      receive: async (put) => ({ blob: await put(bytes(Buffer.from('y'))), fields: { filename: 'b', content_type: undefined, metadata: undefined } }),
      onStored: () => {
        throw boom;
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(boom);
    expect(await blobFiles()).toEqual(before);
  });
});

describe('openFileDownload', () => {
  it('the whole file, a range, an unsatisfiable range, and a record without its blob', async () => {
    const data = Buffer.from('0123456789');
    const file = await storeUpload(deps(), {
      workspaceId: W,
      createdBy: null,
      receive: async (put) => ({ blob: await put(bytes(data)), fields: { filename: 'd.bin', content_type: undefined, metadata: undefined } }),
    });
    const whole = await openFileDownload({ db, blobs }, W, asUuid(file.id), undefined);
    expect(whole.range).toBeUndefined();
    expect(whole.file).toEqual(file);
    expect('content' in whole && (await readAll(whole.content))).toEqual(data);

    const part = await openFileDownload({ db, blobs }, W, asUuid(file.id), 'bytes=2-4');
    expect(part.range).toEqual({ start: 2, end: 4 });
    expect('content' in part && (await readAll(part.content))).toEqual(Buffer.from('234'));

    expect(await openFileDownload({ db, blobs }, W, asUuid(file.id), 'bytes=10-')).toEqual({ file, range: 'unsatisfiable' });

    await blobs.delete((await getFile(db, W, asUuid(file.id))).blob_key);
    expect((await failure(openFileDownload({ db, blobs }, W, asUuid(file.id), undefined))).toBody()).toEqual({ error: 'File content not found', code: 'NOT_FOUND' });
    expect((await failure(openFileDownload({ db, blobs }, W, newId(), undefined))).toBody()).toEqual({ error: 'File not found', code: 'NOT_FOUND' });
  });
});
