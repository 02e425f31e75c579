/**
 * A backup of a deployment: the database (platform tables, workspace schemas and tables, grants; the roles they
 * name) and the blobs its file records reference, consistent with each other, in one directory:
 *
 *   manifest.json        written last: a directory without it is not a backup
 *   database.dump        pg_dump, custom format
 *   blobs/<aa>/<sha256>  each referenced blob once per content
 *   files/<name>         service files kept with it (the embedded DATA_DIR's secrets-key and admin-token)
 *
 * Consistency: the blob references are read in the very snapshot pg_dump dumps (an exported snapshot), so every
 * blob the dump references is copied and none it does not. Blobs are only ever deleted before their record exists
 * (a failed upload); a record's blob is never deleted today, and anything that will (a purge) must hold the blob
 * deletion lock, which a backup holds shared from before its snapshot until its last blob is copied.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { assertEmptyDatabase, createDb, type DumpedRole, dumpDatabase, openSnapshot, type PgTools, restoreDatabase, sql } from '@wds/db';
import type { BlobStore } from '../blob-store.js';
import { BLOB_DELETION_LOCK } from './lock.js';
import { type BlobRef, checkBlobsPresent, copyBlobsOut, restoreBlobs } from './blobs.js';

export const BACKUP_FORMAT = 'wds-backup';
export const BACKUP_FORMAT_VERSION = 1;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  created_at: string;
  database: {
    file: 'database.dump';
    sha256: string;
    size: number;
    server_version: string;
    server_major: number;
    pg_dump_version: string;
    /** The role the service connected as; what it owned belongs to the restoring role afterwards. */
    service_role: string;
    roles: { name: string; granted_to_service: boolean }[];
  };
  /**
   * `items`: the blobs in the backup. `missing`: blobs file records reference that were not in the store when the
   * backup was taken (absent in backups made before; restored without bytes: their downloads answer 404).
   */
  blobs: { count: number; bytes: number; items: BlobRef[]; missing?: BlobRef[] };
  files: { name: string; sha256: string; size: number }[];
}

export interface BackupOptions {
  /** The service's database (superuser or the service's own role). */
  databaseUrl: string;
  blobs: BlobStore;
  /** A new or empty directory. */
  dir: string;
  tools: PgTools;
  /** Service files to keep (name → path); missing ones are skipped. */
  files?: Record<string, string>;
  log?: (msg: string) => void;
}

async function sha256File(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return { sha256: hash.digest('hex'), size: (await stat(path)).size };
}

/** Makes `dir` a new or empty directory of the owner's; undoes what a failed backup wrote into it. */
async function prepareEmptyDir(dir: string): Promise<{ undo(): Promise<void> }> {
  // mkdir answers the first directory it created: `dir` itself or a parent of it, or none when `dir` existed.
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  const entries = await readdir(dir);
  if (entries.length) throw new Error(`${dir} is not empty: back up into a new directory`);
  // An empty directory that existed already keeps its mode otherwise: a backup holds secrets.
  await chmod(dir, 0o700);
  return {
    async undo() {
      if (created) await rm(created, { recursive: true, force: true });
      else for (const entry of await readdir(dir)) await rm(join(dir, entry), { recursive: true, force: true });
    },
  };
}

/** The file records' blobs, read in the dump's snapshot (none when the database has no files table yet). */
async function referencedBlobs(query: <R>(text: string) => Promise<R[]>): Promise<BlobRef[]> {
  const [table] = await query<{ exists: boolean }>(`SELECT to_regclass('platform.files') IS NOT NULL AS exists`);
  if (!table?.exists) return [];
  const rows = await query<{ key: string; sha256: string; size: string | number; variants: number }>(
    `SELECT blob_key AS key, min(sha256) AS sha256, min(size) AS size, count(DISTINCT (sha256, size))::int AS variants
       FROM platform.files GROUP BY blob_key ORDER BY blob_key`,
  );
  return rows.map((r) => {
    if (r.variants !== 1) throw new Error(`blob ${r.key} is referenced by file records that disagree on its content`);
    return { key: r.key, sha256: r.sha256, size: Number(r.size) };
  });
}

/**
 * Backs the deployment up into `opts.dir` (new or empty). Blobs missing from the store are listed in the manifest
 * (`blobs.missing`) and the backup finishes; anything else that fails (the dump, a blob whose bytes differ from its
 * record, a full disk) fails the backup and removes what it wrote: the directory is as it was before.
 */
export async function createBackup(opts: BackupOptions): Promise<BackupManifest> {
  const target = await prepareEmptyDir(opts.dir);
  try {
    return await writeBackup(opts);
  } catch (err) {
    await target.undo().catch(() => undefined);
    throw err;
  }
}

async function writeBackup(opts: BackupOptions): Promise<BackupManifest> {
  const log = opts.log ?? (() => {});
  const snapshot = await openSnapshot(opts.databaseUrl, {
    beforeSnapshot: async (query) => {
      await query(`SELECT pg_advisory_lock_shared(${BLOB_DELETION_LOCK})`);
    },
  });
  let database: BackupManifest['database'];
  let refs: BlobRef[];
  let bytes: number;
  let missing: BlobRef[];
  try {
    refs = await referencedBlobs(snapshot.query);
    const file = join(opts.dir, 'database.dump');
    log(`dumping the database (PostgreSQL ${snapshot.serverVersion}, pg_dump ${opts.tools.version})`);
    await dumpDatabase({ url: opts.databaseUrl, snapshot, tools: opts.tools, file });
    await chmod(file, 0o600);
    database = {
      file: 'database.dump',
      ...(await sha256File(file)),
      server_version: snapshot.serverVersion,
      server_major: snapshot.serverMajor,
      pg_dump_version: opts.tools.version,
      service_role: snapshot.serviceRole,
      roles: snapshot.roles.map((r) => ({ name: r.name, granted_to_service: r.grantedToService })),
    };
    log(`copying ${refs.length} blobs`);
    ({ bytes, missing } = await copyBlobsOut(opts.blobs, refs, opts.dir));
  } finally {
    await snapshot.close();
  }
  // Every file record whose content is missing (records may share one blob's content).
  const lost = new Set(missing.map((m) => m.sha256));
  const missingRefs = refs.filter((r) => lost.has(r.sha256));
  const items = refs.filter((r) => !lost.has(r.sha256));
  for (const m of missingRefs) log(`blob ${m.key} (sha256 ${m.sha256}, ${m.size} bytes) is referenced by a file record but missing from the store: not in the backup`);

  const files: BackupManifest['files'] = [];
  for (const [name, path] of Object.entries(opts.files ?? {})) {
    if (!(await stat(path).catch(() => undefined))?.isFile()) continue;
    await mkdir(join(opts.dir, 'files'), { recursive: true, mode: 0o700 });
    await copyFile(path, join(opts.dir, 'files', name));
    files.push({ name, ...(await sha256File(join(opts.dir, 'files', name))) });
  }

  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    database,
    blobs: { count: items.length, bytes, items, missing: missingRefs },
    files,
  };
  const tmp = join(opts.dir, 'manifest.json.tmp');
  await writeFile(tmp, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(opts.dir, 'manifest.json'));
  return manifest;
}

export async function readManifest(dir: string): Promise<BackupManifest> {
  const text = await readFile(join(dir, 'manifest.json'), 'utf8').catch(() => {
    throw new Error(`${dir} has no manifest.json: not a backup, or an unfinished one`);
  });
  const manifest = JSON.parse(text) as BackupManifest;
  if (manifest.format !== BACKUP_FORMAT) throw new Error(`${dir}/manifest.json is not a ${BACKUP_FORMAT} manifest`);
  if (manifest.format_version !== BACKUP_FORMAT_VERSION) {
    throw new Error(`backup format version ${manifest.format_version} is not supported (this version reads ${BACKUP_FORMAT_VERSION})`);
  }
  // Whatever names a path or a role is checked before anything is read or created: no path leaves the backup, and
  // no role of PostgreSQL's own (pg_*) is granted. The contents are trusted all the same (docs/backups.md).
  const bad = (what: string) => new Error(`${dir}/manifest.json: ${what}`);
  const SHA = /^[0-9a-f]{64}$/;
  if (manifest.database?.file !== 'database.dump') throw bad('database.file must be database.dump');
  if (!SHA.test(manifest.database.sha256 ?? '')) throw bad('database.sha256 is not a SHA-256');
  for (const b of [...(manifest.blobs?.items ?? []), ...(manifest.blobs?.missing ?? [])]) {
    if (!SHA.test(b.sha256 ?? '')) throw bad(`blob ${String(b.key)}: sha256 is not a SHA-256`);
  }
  for (const f of manifest.files ?? []) {
    if (!/^[a-z][a-z0-9-]*$/.test(f.name ?? '') || !SHA.test(f.sha256 ?? '')) throw bad(`file ${String(f.name)}: not a service file`);
  }
  for (const r of manifest.database.roles ?? []) {
    if (typeof r.name !== 'string' || r.name.startsWith('pg_') || r.name.length > 63) throw bad(`role ${String(r.name)}: not a role a backup may create`);
  }
  return manifest;
}

export interface RestoreOptions {
  /** An EMPTY database; the role it names becomes the owner of what the old service role owned. */
  databaseUrl: string;
  blobs: BlobStore;
  dir: string;
  tools: PgTools;
  /** Where service files go back (name → path), e.g. the new DATA_DIR's secrets-key; an existing different file is refused. */
  files?: Record<string, string>;
  log?: (msg: string) => void;
}

/** Restores a backup: checks it whole first, then the database, the blobs (new keys) and the records' keys. */
export async function restoreBackup(opts: RestoreOptions): Promise<BackupManifest> {
  const log = opts.log ?? (() => {});
  const manifest = await readManifest(opts.dir);
  const { database } = manifest;
  const dump = join(opts.dir, database.file);
  const actual = await sha256File(dump);
  if (actual.sha256 !== database.sha256 || actual.size !== database.size) throw new Error(`${dump} does not match the manifest's checksum`);
  await checkBlobsPresent(manifest.blobs.items, opts.dir);
  if (opts.tools.major < Number.parseInt(database.pg_dump_version, 10)) {
    throw new Error(`pg_restore ${opts.tools.version} cannot read an archive of pg_dump ${database.pg_dump_version}: set PG_BIN_DIR to newer client programs`);
  }
  const restoring: { name: string; from: string; to: string }[] = [];
  for (const file of manifest.files) {
    const to = opts.files?.[file.name];
    if (!to) continue;
    const from = join(opts.dir, 'files', file.name);
    const got = await sha256File(from);
    if (got.sha256 !== file.sha256) throw new Error(`${from} does not match the manifest's checksum`);
    const existing = await readFile(to).catch(() => undefined);
    if (existing && !existing.equals(await readFile(from))) throw new Error(`${to} exists and differs from the backup's ${file.name}; restore into a new DATA_DIR`);
    restoring.push({ name: file.name, from, to });
  }

  const target = await assertEmptyDatabase(opts.databaseUrl);
  if (target.serverMajor < database.server_major) {
    throw new Error(`the backup is of PostgreSQL ${database.server_version}; the target server (${target.serverMajor}) is older`);
  }
  log(`restoring the database (${database.roles.length} roles)`);
  const roles: DumpedRole[] = database.roles.map((r) => ({ name: r.name, grantedToService: r.granted_to_service }));
  await restoreDatabase({ url: opts.databaseUrl, file: dump, tools: opts.tools, roles });

  log(`restoring ${manifest.blobs.count} blobs`);
  for (const m of manifest.blobs.missing ?? []) {
    log(`blob ${m.key} (sha256 ${m.sha256}) was missing when the backup was taken: its files are restored without content (downloads answer 404)`);
  }
  const keys = await restoreBlobs(opts.blobs, manifest.blobs.items, opts.dir);
  if (keys.size) {
    const { db } = createDb(opts.databaseUrl, { max: 1, applicationName: 'wds-restore' });
    try {
      const olds = [...keys.keys()];
      const news = olds.map((k) => keys.get(k) as string);
      await sql`UPDATE platform.files f SET blob_key = m.new_key
                  FROM unnest(${olds}::text[], ${news}::text[]) AS m(old_key, new_key)
                 WHERE f.blob_key = m.old_key`.execute(db);
    } finally {
      await db.destroy();
    }
  }

  for (const f of restoring) {
    await mkdir(join(f.to, '..'), { recursive: true });
    await copyFile(f.from, f.to);
  }
  return manifest;
}
