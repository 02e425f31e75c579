import '@wds/testkit';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '@wds/crypto';
import { createDb, type Db, migrateToLatest, newId, sql, asUuid, type Uuid } from '@wds/db';
import { ServiceError } from '@wds/errors';
import { OutboundGuard } from '@wds/effect-runner';
import { DRIVE_PROVIDER, ProviderClient, parseProviders } from '@wds/providers';
import { putCredential } from '@wds/setup';
import { createFsBlobStore, type FsBlobStore } from '@wds/storage';
import { createDatabase, DRIVE_DOC_MIME, DRIVE_FOLDER_MIME, type FakeDrive, startFakeDrive } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, expectTypeOf } from 'vitest';
import { DriveSync, storedFilename, utf8Prefix } from '../src/index.js';

let db: Db;
let fake: FakeDrive;
let blobDir: string;
let blobs: FsBlobStore;
let sync: DriveSync;
const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));

const SHEET_MIME = 'application/vnd.google-apps.spreadsheet';
const googleError = (code: number, reason: string, message: string) => ({ error: { code, message, errors: [{ reason, message, domain: 'global' }], status: 'X' } });

async function caught(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a ServiceError');
}

async function workspace(connected = true) {
  const id = newId();
  await db.insertInto('platform.workspaces').values({ id, name: `ws-${id}` }).execute();
  const grant = fake.grant();
  if (connected) await putCredential(db, box, id, DRIVE_PROVIDER, grant.credential);
  return { id, grant };
}

/** The workspace's nodes as 'root name:file id<parent id|name|size', sorted. */
async function nodes(workspaceId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('platform.drive_nodes as n')
    .innerJoin('platform.drive_sync_roots as r', 'r.id', 'n.root_id')
    .select(['r.name as root', 'n.drive_file_id', 'n.parent_id', 'n.name', 'n.size'])
    .where('n.workspace_id', '=', workspaceId)
    .execute();
  return rows.map((r) => `${r.root}:${r.drive_file_id}<${r.parent_id}|${r.name}|${r.size ?? '-'}`).sort();
}

const file = (id: string, name: string, parent: string, content: string, extra: Partial<Parameters<FakeDrive['addFile']>[0]> = {}) =>
  fake.addFile({ id, name, mimeType: 'text/plain', parents: [parent], content, modifiedTime: '2024-05-01T10:00:00.000Z', ...extra });

/** A folder tree under `<p>-top` and a shared drive `<p>-sd`, each with a nested folder. */
function seedTree(p: string) {
  fake.addFolder(`${p}-top`, 'Top', 'root');
  file(`${p}-a`, 'a.txt', `${p}-top`, 'A');
  file(`${p}-b`, 'b.pdf', `${p}-top`, 'PDF', { mimeType: 'application/pdf' });
  file(`${p}-c`, 'c.bin', `${p}-top`, 'CCC', { mimeType: 'application/octet-stream' });
  file(`${p}-t`, 'trashed.txt', `${p}-top`, 'T', { trashed: true });
  fake.addFolder(`${p}-sub`, 'Sub', `${p}-top`);
  file(`${p}-x`, 'x.txt', `${p}-sub`, 'XX');
  fake.addFolder(`${p}-deep`, 'Deep', `${p}-sub`);
  fake.addFile({ id: `${p}-doc`, name: 'Design notes', mimeType: DRIVE_DOC_MIME, parents: [`${p}-deep`], exports: { 'text/plain': 'Hello doc' } });
  fake.drives.push({ id: `${p}-sd`, name: `Team ${p}` });
  file(`${p}-sf`, 'shared.txt', `${p}-sd`, 'S', { driveId: `${p}-sd` });
  fake.addFolder(`${p}-sdf`, 'Shared folder', `${p}-sd`, `${p}-sd`);
  file(`${p}-si`, 'inner.txt', `${p}-sdf`, 'II', { driveId: `${p}-sd` });
}

const treeNodes = (p: string) => [
  `Team:${p}-sdf<${p}-sd|Shared folder|-`,
  `Team:${p}-sf<${p}-sd|shared.txt|1`,
  `Team:${p}-si<${p}-sdf|inner.txt|2`,
  `Top:${p}-a<${p}-top|a.txt|1`,
  `Top:${p}-b<${p}-top|b.pdf|3`,
  `Top:${p}-c<${p}-top|c.bin|3`,
  `Top:${p}-deep<${p}-sub|Deep|-`,
  `Top:${p}-doc<${p}-deep|Design notes|-`,
  `Top:${p}-sub<${p}-top|Sub|-`,
  `Top:${p}-x<${p}-sub|x.txt|2`,
];

async function addTreeRoots(workspaceId: string, p: string) {
  await sync.addRoot(workspaceId, { drive_id: `${p}-top`, drive_type: 'folder', name: 'Top' });
  await sync.addRoot(workspaceId, { drive_id: `${p}-sd`, drive_type: 'shared_drive', name: 'Team' });
}

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'drivesync' }), { max: 8 }).db;
  await migrateToLatest(db);
  fake = await startFakeDrive();
  blobDir = await mkdtemp(join(tmpdir(), 'drive-sync-blobs-'));
  blobs = createFsBlobStore(blobDir, { cleanTempOnStart: false });
  const registry = parseProviders(
    JSON.stringify({ drive_workspace: { base_url: fake.url, token_url: fake.tokenUrl, client_id: fake.clientId, client_secret: fake.clientSecret } }),
    { allowHttpLoopback: true },
  );
  const providers = new ProviderClient({ db, sealer: box, registry, guard: new OutboundGuard({ allowlist: ['127.0.0.1'] }), allowHttpLoopback: true });
  // Small pages, so every listing in these tests pages.
  sync = new DriveSync({ db, providers, blobs, pageSize: 2 });
});

afterAll(async () => {
  await fake?.close();
  await db?.destroy();
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
});

describe('config and roots', () => {
  it('settings default, validate and round-trip', async () => {
    const { id } = await workspace();
    expect(await sync.getConfig(id)).toEqual({
      settings: { include_shared_drives: false, max_file_bytes: 100 * 1024 * 1024 },
      state: 'idle',
      last_synced_at: null,
      last_sync_error: null,
      updated_at: null,
    });
    const put = await sync.putConfig(id, { include_shared_drives: true, max_file_bytes: 1000 });
    expect(put.settings).toEqual({ include_shared_drives: true, max_file_bytes: 1000 });
    expect((await sync.putConfig(id, {})).settings).toEqual({ include_shared_drives: false, max_file_bytes: 100 * 1024 * 1024 });
    for (const [bad, message] of [
      [null, /settings: must be a JSON object/],
      [[], /settings: must be a JSON object/],
      [{ include_shared_drives: 'yes' }, /include_shared_drives: must be true or false/],
      [{ max_file_bytes: 0 }, /max_file_bytes: an integer from 1 to 104857600/],
      [{ max_file_bytes: 200 * 1024 * 1024 }, /max_file_bytes/],
      [{ max_file_bytes: 1.5 }, /max_file_bytes/],
      [{ folders: [] }, /unknown key folders/],
    ] as const) {
      const err = await caught(sync.putConfig(id, bad));
      expect(err.code).toBe('VALIDATION_ERROR');
      expect(err.details).toMatch(message);
    }
  });

  it('roots validate, refuse duplicates and stay in their workspace', async () => {
    const a = await workspace();
    const b = await workspace();
    const top = await sync.addRoot(a.id, { drive_id: 'fold-1', drive_type: 'folder', name: ' Reports ' });
    expect(top).toMatchObject({ drive_id: 'fold-1', drive_type: 'folder', name: 'Reports', shared_drive_id: null });
    const sd = await sync.addRoot(a.id, { drive_id: 'drive-1', drive_type: 'shared_drive', name: 'Team' });
    expect(sd.shared_drive_id).toBe('drive-1');
    const inShared = await sync.addRoot(a.id, { drive_id: 'fold-2', drive_type: 'folder', name: 'In team', shared_drive_id: 'drive-1' });
    expect(inShared.shared_drive_id).toBe('drive-1');
    expect((await sync.addRoot(a.id, { drive_id: 'root', drive_type: 'my_drive', name: 'My Drive' })).drive_type).toBe('my_drive');

    const dup = await caught(sync.addRoot(a.id, { drive_id: 'fold-1', drive_type: 'folder', name: 'Again' }));
    expect(dup.code).toBe('CONFLICT');
    // the same Drive folder may be a root of another workspace
    await sync.addRoot(b.id, { drive_id: 'fold-1', drive_type: 'folder', name: 'B reports' });

    for (const [bad, message] of [
      [{ drive_id: 'x', drive_type: 'team', name: 'n' }, /drive_type: one of folder, shared_drive, my_drive/],
      [{ drive_id: "x' or 'a'='a", drive_type: 'folder', name: 'n' }, /drive_id: a Drive id/],
      [{ drive_id: 'x', drive_type: 'folder', name: '  ' }, /name: 1 to 255 characters/],
      [{ drive_id: 'x', drive_type: 'folder', name: 'a\nb' }, /name: /],
      [{ drive_id: 'x', drive_type: 'my_drive', name: 'n', shared_drive_id: 'd' }, /shared_drive_id: only for a shared_drive or a folder in a shared drive/],
      [{ drive_id: 'x', drive_type: 'shared_drive', name: 'n', shared_drive_id: 'y' }, /shared_drive_id: for a shared_drive root it is drive_id itself/],
      ['root', /root: must be a JSON object/],
    ] as const) {
      const err = await caught(sync.addRoot(a.id, bad));
      expect(err.code).toBe('VALIDATION_ERROR');
      expect(err.details).toMatch(message);
    }

    expect((await sync.listRoots(a.id)).map((r) => r.drive_id)).toEqual(['fold-1', 'drive-1', 'fold-2', 'root']);
    expect((await sync.listRoots(b.id)).map((r) => r.name)).toEqual(['B reports']);
    // A cannot remove B's root; unknown and malformed ids are NOT_FOUND too
    const bRoot = (await sync.listRoots(b.id))[0]!;
    for (const rootId of [bRoot.id, newId()]) expect((await caught(sync.removeRoot(a.id, asUuid(rootId)))).code).toBe('NOT_FOUND');
    // A text that is not a UUID never reaches it: the id is a Uuid (the route layer answers 404 for one in a path).
    expectTypeOf(sync.removeRoot).parameter(1).toEqualTypeOf<Uuid>();
    await sync.removeRoot(a.id, asUuid(top.id));
    expect((await sync.listRoots(a.id)).map((r) => r.drive_id)).toEqual(['drive-1', 'fold-2', 'root']);
    expect(await sync.listRoots(b.id)).toHaveLength(1);
  });
});

describe('requestSync', () => {
  it('moves idle/completed/failed to queued once; queued or running refuse unless stale', async () => {
    const { id } = await workspace();
    expect(await sync.requestSync(id)).toEqual({ started: true });
    expect((await sync.status(id)).state).toBe('queued');
    expect(await sync.requestSync(id)).toEqual({ started: false });
    expect((await sync.runSync(id)).state).toBe('completed');
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => sync.requestSync(id)));
    expect(results.filter((r) => r.started)).toHaveLength(1);

    await db.updateTable('platform.drive_sync_configs').set({ state: 'running' }).where('workspace_id', '=', id).execute();
    expect(await sync.requestSync(id)).toEqual({ started: false });
    await db.updateTable('platform.drive_sync_configs').set({ updated_at: sql<Date>`now() - interval '1 hour'` as never }).where('workspace_id', '=', id).execute();
    expect(await sync.requestSync(id)).toEqual({ started: true });

    await db.updateTable('platform.drive_sync_configs').set({ state: 'failed' }).where('workspace_id', '=', id).execute();
    expect(await sync.requestSync(id)).toEqual({ started: true });
  });
});

describe('runSync', () => {
  it('walks folders and shared drives breadth-first with paging', async () => {
    const p = 's1';
    seedTree(p);
    const { id } = await workspace();
    await addTreeRoots(id, p);
    const start = fake.requests.length;
    const result = await sync.runSync(id);
    expect(result).toMatchObject({ state: 'completed', roots: 2, nodes: 10, removed: 0 });
    expect(await nodes(id)).toEqual(treeNodes(p));

    const status = await sync.status(id);
    expect(status).toMatchObject({ state: 'completed', node_count: 10, last_sync_error: null });
    expect(Date.parse(status.last_synced_at!)).toBeGreaterThan(Date.now() - 60_000);
    const row = await db.selectFrom('platform.drive_nodes').select(['modified_time', 'mime_type', 'sync_id']).where('workspace_id', '=', id).where('drive_file_id', '=', `${p}-a`).executeTakeFirstOrThrow();
    expect(row.modified_time?.toISOString()).toBe('2024-05-01T10:00:00.000Z');
    expect(row.sync_id).toBe(result.sync_id);

    const lists = fake.requests.slice(start).filter((r) => r.path === '/drive/v3/files');
    const topPages = lists.filter((r) => r.query.q === `'${p}-top' in parents and trashed = false`);
    // four live children (and a trashed one) in pages of two
    expect(topPages.map((r) => r.query.pageToken ?? null)).toEqual([null, 'p2']);
    const shared = lists.filter((r) => r.query.q === `'${p}-sd' in parents and trashed = false`);
    expect(shared[0]?.query).toMatchObject({ corpora: 'drive', driveId: `${p}-sd`, supportsAllDrives: 'true', includeItemsFromAllDrives: 'true' });
    // breadth-first: the top folder's pages, then its subfolder, then the subfolder's subfolder
    const order = lists.map((r) => /^'([^']+)'/.exec(r.query.q ?? '')?.[1]);
    expect([...new Set(order)]).toEqual([`${p}-top`, `${p}-sub`, `${p}-deep`, `${p}-sd`, `${p}-sdf`]);
  });

  it('a resync removes what Drive no longer has and updates what changed', async () => {
    const p = 's2';
    seedTree(p);
    const { id } = await workspace();
    await addTreeRoots(id, p);
    expect((await sync.runSync(id)).state).toBe('completed');

    for (const gone of [`${p}-sub`, `${p}-x`, `${p}-deep`, `${p}-doc`, `${p}-si`]) fake.removeFile(gone);
    fake.files.get(`${p}-a`)!.name = 'renamed.txt';
    file(`${p}-n`, 'new.txt', `${p}-top`, 'NEW');
    const result = await sync.runSync(id);
    expect(result).toMatchObject({ state: 'completed', nodes: 6, removed: 5 });
    expect(await nodes(id)).toEqual([
      `Team:${p}-sdf<${p}-sd|Shared folder|-`,
      `Team:${p}-sf<${p}-sd|shared.txt|1`,
      `Top:${p}-a<${p}-top|renamed.txt|1`,
      `Top:${p}-b<${p}-top|b.pdf|3`,
      `Top:${p}-c<${p}-top|c.bin|3`,
      `Top:${p}-n<${p}-top|new.txt|3`,
    ]);
    // removing a root removes its nodes
    const team = (await sync.listRoots(id)).find((r) => r.name === 'Team')!;
    await sync.removeRoot(id, asUuid(team.id));
    expect((await nodes(id)).filter((n) => n.startsWith('Team:'))).toEqual([]);
  });

  it('a run that failed mid-walk, then another, ends with exactly the right nodes', async () => {
    const p = 's3';
    seedTree(p);
    const { id } = await workspace();
    await addTreeRoots(id, p);
    await sync.runSync(id);
    for (const gone of [`${p}-c`, `${p}-deep`, `${p}-doc`, `${p}-sf`]) fake.removeFile(gone);
    file(`${p}-n`, 'new.txt', `${p}-top`, 'NEW');

    // the third listing fails: the first two pages of the top folder are written, nothing is pruned
    const held = fake.hold('/drive/v3/files', { after: 2 });
    const running = sync.runSync(id);
    await held.reached;
    fake.fail({ path: '/drive/v3/files', status: 500, body: googleError(500, 'backendError', 'Backend Error') });
    held.release();
    const failed = await running;
    expect(failed).toMatchObject({ state: 'failed', error: 'Google Drive files.list failed: HTTP 500 backendError: Backend Error' });
    const partial = await nodes(id);
    expect(partial).toContain(`Top:${p}-c<${p}-top|c.bin|3`); // not pruned: the walk did not finish
    expect(partial).toContain(`Top:${p}-n<${p}-top|new.txt|3`); // written by the failed run
    expect((await sync.status(id)).state).toBe('failed');

    expect((await sync.runSync(id)).state).toBe('completed');
    const expected = treeNodes(p).filter((n) => ![`${p}-c<`, `${p}-deep<`, `${p}-doc<`, `${p}-sf<`].some((g) => n.includes(`:${g}`)));
    expect(await nodes(id)).toEqual([...expected, `Top:${p}-n<${p}-top|new.txt|3`].sort());
  });

  it('a restarted run takes over from one that is still hanging; the old one stops without writing', async () => {
    const p = 's4';
    seedTree(p);
    const { id } = await workspace();
    await addTreeRoots(id, p);
    await sync.runSync(id);
    for (const gone of [`${p}-x`, `${p}-si`]) fake.removeFile(gone);

    const held = fake.hold('/drive/v3/files', { after: 1 });
    const stuck = sync.runSync(id);
    await held.reached; // the first run has written one page and hangs on its second listing
    const restarted = await sync.runSync(id);
    expect(restarted.state).toBe('completed');
    const expected = treeNodes(p).filter((n) => !n.includes(`:${p}-x<`) && !n.includes(`:${p}-si<`));
    expect(await nodes(id)).toEqual(expected);

    // the tree changes again before the old run wakes up: it must not write what it then sees
    file(`${p}-late`, 'late.txt', `${p}-top`, 'L');
    held.release();
    expect((await stuck).state).toBe('superseded');
    expect(await nodes(id)).toEqual(expected);
    const status = await sync.status(id);
    expect(status.state).toBe('completed');
    expect(status.last_sync_error).toBeNull();
  });

  it("shows the provider's error in status, without tokens; a missing credential fails naming the provider", async () => {
    const p = 's5';
    seedTree(p);
    const { id, grant } = await workspace();
    await addTreeRoots(id, p);
    fake.fail({ path: '/drive/v3/files', status: 403, body: googleError(403, 'insufficientFilePermissions', `The user does not have sufficient permissions for file ${p}-top.`) });
    const result = await sync.runSync(id);
    expect(result.state).toBe('failed');
    const status = await sync.status(id);
    expect(status.state).toBe('failed');
    expect(status.last_sync_error).toBe(`Google Drive files.list failed: HTTP 403 insufficientFilePermissions: The user does not have sufficient permissions for file ${p}-top.`);
    expect(JSON.stringify(status)).not.toContain(grant.accessToken);
    expect(JSON.stringify(status)).not.toContain(grant.refreshToken);

    // a provider echoing a token into its error does not get it into status
    fake.fail({ path: '/drive/v3/files', status: 400, body: googleError(400, 'badRequest', `Bearer ${grant.accessToken} is odd; so is ${grant.accessToken}`) });
    await sync.runSync(id);
    const echoed = await sync.status(id);
    expect(echoed.last_sync_error).toMatch(/^Google Drive files.list failed: HTTP 400 badRequest: Bearer \[redacted\] is odd; so is \[redacted\]$/);

    const bare = await workspace(false);
    await sync.addRoot(bare.id, { drive_id: `${p}-top`, drive_type: 'folder', name: 'Top' });
    const missing = await sync.runSync(bare.id);
    expect(missing).toMatchObject({ state: 'failed' });
    expect((await sync.status(bare.id)).last_sync_error).toMatch(/^Workspace has no credential for provider drive_workspace; an operator connects it with PUT/);
  });

  it("one workspace's sync never touches another's nodes", async () => {
    const p = 's6';
    seedTree(p);
    const a = await workspace();
    const b = await workspace();
    await addTreeRoots(a.id, p);
    await addTreeRoots(b.id, p);
    await sync.runSync(b.id);
    const bNodes = await nodes(b.id);
    await sync.removeRoot(a.id, asUuid((await sync.listRoots(a.id))[0]!.id));
    fake.removeFile(`${p}-sf`);
    await sync.runSync(a.id);
    expect(await nodes(b.id)).toEqual(bNodes);
    expect((await nodes(a.id)).every((n) => n.startsWith('Team:'))).toBe(true);
    expect((await sync.status(a.id)).node_count).toBe(2);
    expect((await sync.status(b.id)).node_count).toBe(10);
  });
});

describe('materialize', () => {
  it('imports a binary file through the download host without forwarding the token', async () => {
    const p = 'm1';
    seedTree(p);
    const { id, grant } = await workspace();
    const userId = null;
    const start = fake.requests.length;
    const view = await sync.materialize(id, `${p}-b`, { userId });
    expect(view).toMatchObject({ workspace_id: id, filename: 'b.pdf', content_type: 'application/pdf', size: 3 });
    expect(view.metadata).toMatchObject({ source: 'drive_workspace', drive_file_id: `${p}-b`, drive_mime_type: 'application/pdf', drive_modified_time: '2024-05-01T10:00:00.000Z' });
    const row = await db.selectFrom('platform.files').select('blob_key').where('id', '=', view.id).executeTakeFirstOrThrow();
    const chunks: Buffer[] = [];
    for await (const c of await blobs.get(row.blob_key)) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('PDF');
    const downloads = fake.requests.slice(start).filter((r) => r.server === 'download');
    expect(downloads).toHaveLength(1);
    expect(downloads[0]?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(downloads[0]?.headers)).not.toContain(grant.accessToken);
  });

  it('exports native docs as text (document → .txt, spreadsheet → .csv), shared drive files too', async () => {
    const p = 'm2';
    seedTree(p);
    fake.addFile({ id: `${p}-sheet`, name: 'Budget', mimeType: SHEET_MIME, parents: [`${p}-sd`], driveId: `${p}-sd`, exports: { 'text/csv': 'a,b\n1,2\n' } });
    const { id } = await workspace();
    const doc = await sync.materialize(id, `${p}-doc`, { userId: null });
    expect(doc).toMatchObject({ filename: 'Design notes.txt', content_type: 'text/plain', size: 9 });
    expect(doc.metadata).toMatchObject({ drive_mime_type: DRIVE_DOC_MIME, exported_as: 'text/plain' });
    const sheet = await sync.materialize(id, `${p}-sheet`, { userId: null });
    expect(sheet).toMatchObject({ filename: 'Budget.csv', content_type: 'text/csv', size: 8 });
    const exportCall = fake.requests.find((r) => r.path === `/drive/v3/files/${p}-sheet/export`);
    expect(exportCall?.query.mimeType).toBe('text/csv');
  });

  it('refuses folders, unknown files, non-exportable native types and files over the cap (storing nothing)', async () => {
    const p = 'm3';
    seedTree(p);
    fake.addFile({ id: `${p}-form`, name: 'Survey', mimeType: 'application/vnd.google-apps.form', parents: [`${p}-top`] });
    const { id } = await workspace();
    expect((await caught(sync.materialize(id, `${p}-sub`, { userId: null }))).code).toBe('VALIDATION_ERROR');
    expect((await caught(sync.materialize(id, `${p}-form`, { userId: null }))).details).toMatch(/application\/vnd.google-apps.form cannot be exported/);
    const missing = await caught(sync.materialize(id, 'no-such-file', { userId: null }));
    expect(missing.code).toBe('NOT_FOUND');
    expect((await caught(sync.materialize(id, '../etc', { userId: null }))).code).toBe('VALIDATION_ERROR');
    await sync.putConfig(id, { max_file_bytes: 2 });
    const big = await caught(sync.materialize(id, `${p}-b`, { userId: null }));
    expect(big.code).toBe('PAYLOAD_TOO_LARGE');
    expect(big.message).toBe('The Drive file is larger than 2 bytes');
    // an export has no size in advance: the cap stops it while it streams
    fake.files.get(`${p}-doc`)!.exports = { 'text/plain': 'too long for two bytes' };
    expect((await caught(sync.materialize(id, `${p}-doc`, { userId: null }))).message).toBe('Provider response exceeds 2 bytes');
    expect(await db.selectFrom('platform.files').select('id').where('workspace_id', '=', id).execute()).toEqual([]);
  });
});

describe('read', () => {
  it('returns exported text and text files, truncating at a character boundary', async () => {
    const p = 'r1';
    seedTree(p);
    fake.files.get(`${p}-doc`)!.exports = { 'text/plain': 'héllo wörld' };
    const { id } = await workspace();
    expect(await sync.read(id, `${p}-doc`, { maxBytes: 1000 })).toEqual({ id: `${p}-doc`, name: 'Design notes', mime_type: DRIVE_DOC_MIME, content: 'héllo wörld', truncated: false });
    // 'h' + the first byte of 'é'
    expect(await sync.read(id, `${p}-doc`, { maxBytes: 2 })).toMatchObject({ content: 'h', truncated: true });
    expect(await sync.read(id, `${p}-doc`, { maxBytes: 3 })).toMatchObject({ content: 'hé', truncated: true });
    expect(await sync.read(id, `${p}-x`, { maxBytes: 10 })).toMatchObject({ content: 'XX', truncated: false, mime_type: 'text/plain' });
    const binary = await caught(sync.read(id, `${p}-b`, { maxBytes: 10 }));
    expect(binary.code).toBe('VALIDATION_ERROR');
    expect(binary.details).toMatch(/application\/pdf, not text/);
    expect((await caught(sync.read(id, `${p}-x`, { maxBytes: 0 }))).code).toBe('VALIDATION_ERROR');
  });
});

describe('picker', () => {
  it('lists folders by name with paging, and shared drives when asked or configured', async () => {
    const p = 'k1';
    seedTree(p);
    fake.addFolder(`${p}-f3`, 'Zeta', `${p}-top`);
    fake.addFolder(`${p}-f1`, 'Alpha', `${p}-top`);
    fake.files.set(`${p}-ft`, { id: `${p}-ft`, name: 'Binned', mimeType: DRIVE_FOLDER_MIME, parents: [`${p}-top`], trashed: true });
    const { id } = await workspace();
    const start = fake.requests.length;
    const picked = await sync.picker(id, { parent: `${p}-top` });
    expect(picked).toEqual({
      folders: [
        { id: `${p}-f1`, name: 'Alpha' },
        { id: `${p}-sub`, name: 'Sub' },
        { id: `${p}-f3`, name: 'Zeta' },
      ],
    });
    expect(fake.requests.slice(start).filter((r) => r.path === '/drive/v3/files')).toHaveLength(2);

    expect((await sync.picker(id, { parent: `${p}-sd` })).folders).toEqual([{ id: `${p}-sdf`, name: 'Shared folder' }]);
    const withDrives = await sync.picker(id, { parent: `${p}-top`, sharedDrives: true });
    const names = withDrives.shared_drives!.map((d) => d.name);
    expect(names).toContain(`Team ${p}`);
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(withDrives.shared_drives!.length).toBe(fake.drives.length); // every page of drives.list
    await sync.putConfig(id, { include_shared_drives: true });
    expect((await sync.picker(id, { parent: `${p}-top` })).shared_drives).toBeDefined();
    expect((await caught(sync.picker(id, { parent: "x' in parents or 'a" }))).code).toBe('VALIDATION_ERROR');
  });
});

describe('helpers', () => {
  it('storedFilename and utf8Prefix', () => {
    expect(storedFilename('a/b\\c', '.txt')).toBe('a_b_c.txt');
    expect(storedFilename('notes.TXT', '.txt')).toBe('notes.TXT');
    expect(storedFilename('..')).toBe('drive-file');
    expect([...storedFilename('x'.repeat(300), '.csv')]).toHaveLength(255);
    expect(utf8Prefix(Buffer.from('a😀', 'utf8').subarray(0, 3))).toBe('a');
    expect(utf8Prefix(Buffer.from('aé', 'utf8'))).toBe('aé');
  });
});
