import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, readManifest } from '../src/index.js';

const SHA = 'a'.repeat(64);
const good = () => ({
  format: BACKUP_FORMAT,
  format_version: BACKUP_FORMAT_VERSION,
  created_at: new Date().toISOString(),
  database: { file: 'database.dump', sha256: SHA, size: 1, server_version: '15', server_major: 15, pg_dump_version: '15', service_role: 'postgres', roles: [{ name: 'wds_ws_x', granted_to_service: true }] },
  blobs: { count: 1, bytes: 1, items: [{ key: 'k', sha256: SHA, size: 1 }] },
  files: [{ name: 'secrets-key', sha256: SHA, size: 1 }],
});

const dirs: string[] = [];
async function manifestIn(m: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'wds-manifest-'));
  dirs.push(dir);
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(m));
  return dir;
}
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('readManifest checks what names a path or a role before anything is read or created', () => {
  it('reads a well-formed manifest', async () => {
    expect((await readManifest(await manifestIn(good()))).blobs.count).toBe(1);
  });

  it.each([
    [
      'a dump path outside the backup',
      (m: ReturnType<typeof good>) => {
        (m.database as { file: string }).file = '../../etc/passwd';
      },
    ],
    [
      'a blob hash that is a path',
      (m: ReturnType<typeof good>) => {
        m.blobs.items[0]!.sha256 = '../../../etc/shadow';
      },
    ],
    [
      'a service file name that is a path',
      (m: ReturnType<typeof good>) => {
        m.files[0]!.name = '../admin-token';
      },
    ],
    [
      "one of PostgreSQL's own roles",
      (m: ReturnType<typeof good>) => {
        m.database.roles[0]!.name = 'pg_execute_server_program';
      },
    ],
  ])('refuses %s', async (_what, spoil) => {
    const m = good();
    spoil(m);
    await expect(readManifest(await manifestIn(m))).rejects.toThrow(/manifest\.json: /);
  });
});
