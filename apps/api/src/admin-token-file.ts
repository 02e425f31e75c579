import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** With the embedded database and no ADMIN_TOKEN, the admin token is generated once and kept in DATA_DIR. */
export async function loadOrCreateAdminToken(dataDir: string): Promise<{ token: string; path: string; created: boolean }> {
  const path = resolve(join(dataDir, 'admin-token'));
  try {
    const token = (await readFile(path, 'utf8')).trim();
    if (token.length >= 16) return { token, path, created: false };
  } catch {}
  await mkdir(dataDir, { recursive: true });
  const token = `adm_${randomBytes(32).toString('base64url')}`;
  await writeFile(path, `${token}\n`, { mode: 0o600 });
  return { token, path, created: true };
}
