import '@wds/testkit';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '@wds/crypto';
import { createDb, type Db, migrateToLatest, newId } from '@wds/db';
import { OutboundGuard } from '@wds/effect-runner';
import { DRIVE_PROVIDER, ProviderClient, parseProviders } from '@wds/providers';
import { hasCredential, putCredential } from '@wds/setup';
import { createFsBlobStore } from '@wds/storage';
import { createDatabase, type FakeDrive, startFakeDrive } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DRIVE_SYNC_QUEUE, DriveSync, type DriveSyncServices, handleDriveSyncJobs, requireDriveSync, startDriveSync } from '../src/index.js';

let db: Db;
let fake: FakeDrive;
let blobDir: string;
let drive: DriveSync;
const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'drivejobs' }), { max: 4 }).db;
  await migrateToLatest(db);
  fake = await startFakeDrive();
  blobDir = await mkdtemp(join(tmpdir(), 'drive-jobs-blobs-'));
  const registry = parseProviders(
    JSON.stringify({ drive_workspace: { base_url: fake.url, token_url: fake.tokenUrl, client_id: fake.clientId, client_secret: fake.clientSecret } }),
    { allowHttpLoopback: true },
  );
  const providers = new ProviderClient({ db, sealer: box, registry, guard: new OutboundGuard({ allowlist: ['127.0.0.1'] }), allowHttpLoopback: true });
  drive = new DriveSync({ db, providers, blobs: createFsBlobStore(blobDir, { cleanTempOnStart: false }), hasCredential });
});
afterAll(async () => {
  await fake?.close();
  await db?.destroy();
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
});

async function workspace(connected: boolean): Promise<string> {
  const id = newId();
  await db.insertInto('platform.workspaces').values({ id, name: `ws-${id}` }).execute();
  if (connected) await putCredential(db, box, id, DRIVE_PROVIDER, fake.grant().credential);
  return id;
}

/** The service as drive sync sees it, with a job queue that records what is attached and queued. */
function service(withDrive = true) {
  const queued: { name: string; data: object; key: string | undefined }[] = [];
  const handled: string[] = [];
  const s: DriveSyncServices = {
    providers: { drive: withDrive ? drive : undefined },
    jobs: {
      enqueue: async (name, data, key) => {
        queued.push({ name, data, key });
        return true;
      },
      handle: (name) => void handled.push(name),
    },
  };
  return { s, queued, handled };
}

describe('drive sync as a background job', () => {
  it('is 503 without a drive sync (no secrets key), and then attaches no handler', () => {
    const { s, handled } = service(false);
    expect(() => requireDriveSync(s)).toThrow(expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }));
    handleDriveSyncJobs(s);
    expect(handled).toEqual([]);
  });

  it('refuses a workspace without a credential at once, naming the provider, and queues nothing', async () => {
    const id = await workspace(false);
    const { s, queued } = service();
    await expect(startDriveSync(s, id)).rejects.toThrow(expect.objectContaining({ code: 'CONFLICT', message: expect.stringContaining(DRIVE_PROVIDER) }));
    expect(queued).toEqual([]);
    expect((await drive.status(id)).state).toBe('idle');
  });

  it('marks the sync queued and queues one job per workspace; a second request while it waits queues none', async () => {
    const id = await workspace(true);
    const { s, queued, handled } = service();
    handleDriveSyncJobs(s);
    expect(handled).toEqual([DRIVE_SYNC_QUEUE]);
    expect(await startDriveSync(s, id)).toBe(true);
    expect(await startDriveSync(s, id)).toBe(false);
    expect(queued).toEqual([{ name: DRIVE_SYNC_QUEUE, data: { workspaceId: id }, key: `drive:${id}` }]);
    expect((await drive.status(id)).state).toBe('queued');
  });
});
