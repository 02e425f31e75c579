import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { backup, restore } from './backup.js';
import { cliLoginLink } from './cli-login-link.js';
import { loadConfig } from './config.js';

const USAGE = `Usage:
  pnpm cli user create --email <email> --name <name>   create a user and print a session token
  pnpm cli session create --user-id <id>                print a new session token for a user
  pnpm cli user login-link --email <email>              print a one-time login link (15 minutes) for a user
  pnpm cli backup <dir>                                 back up the database and the files' bytes into a new directory
  pnpm cli restore <dir>                                restore a backup into an empty database (a new DATA_DIR)

user create and session create talk to a running server's admin interface: API_URL (default
http://127.0.0.1:8080) and ADMIN_TOKEN (default: the token the embedded database setup stored in DATA_DIR/admin-token).
user login-link works on the database itself (DATABASE_URL, or the embedded one in DATA_DIR, which may be running)
and points the link at CONSOLE_URL (default http://127.0.0.1:PORT); see docs/http-api.md#login-links.
backup and restore use the service's configuration (DATABASE_URL, or the embedded database in DATA_DIR, which
may be running; STORAGE_*) and pg_dump/pg_restore (PG_BIN_DIR, else PATH); see docs/backups.md.`;

async function adminToken(): Promise<string> {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const path = join(process.env.DATA_DIR || './.data', 'admin-token');
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    throw new Error(`No ADMIN_TOKEN set and no ${path}: start the server once, or set ADMIN_TOKEN`);
  }
}

async function call(path: string, body: unknown): Promise<Record<string, unknown>> {
  const base = process.env.API_URL || `http://${process.env.HOST || '127.0.0.1'}:${process.env.PORT || '8080'}`;
  const res = await fetch(new URL(path, base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-token': await adminToken() },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${res.status} ${json.code}: ${json.error}${json.details ? ` (${json.details})` : ''}`);
  return json;
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { email: { type: 'string' }, name: { type: 'string' }, 'user-id': { type: 'string' } },
  });
  const [noun, verb] = positionals;
  if ((noun === 'backup' || noun === 'restore') && verb && positionals.length === 2) {
    // `pnpm cli` runs in apps/api; a relative directory means the one the command was typed in.
    const dir = resolve(process.env.INIT_CWD ?? process.cwd(), verb);
    const log = (msg: string) => console.error(`${noun}: ${msg}`);
    // Whatever the tools create (pg_dump's file while it writes, restored secrets, a new DATA_DIR) is the owner's only.
    process.umask(0o077);
    const manifest = await (noun === 'backup' ? backup : restore)(loadConfig(process.env), dir, process.env, log);
    const missing = manifest.blobs.missing ?? [];
    console.log(
      JSON.stringify(
        { dir, created_at: manifest.created_at, server_version: manifest.database.server_version, blobs: manifest.blobs.count, missing_blobs: missing.length },
        null,
        2,
      ),
    );
    // Finished, but without some files' bytes: a status of its own, so a scheduled backup is noticed (docs/backups.md).
    if (missing.length > 0) {
      log(`${missing.length} blobs referenced by file records were missing from the store (listed in manifest.json, blobs.missing)`);
      process.exitCode = 3;
    }
  } else if (noun === 'user' && verb === 'create' && values.email && values.name) {
    const user = await call('/admin/v1/users', { email: values.email, name: values.name });
    const session = await call(`/admin/v1/users/${user.id}/sessions`, {});
    console.log(JSON.stringify({ user, session_token: session.token, expires_at: session.expires_at }, null, 2));
  } else if (noun === 'user' && verb === 'login-link' && values.email) {
    console.log(JSON.stringify(await cliLoginLink(loadConfig(process.env), values.email), null, 2));
  } else if (noun === 'session' && verb === 'create' && values['user-id']) {
    const session = await call(`/admin/v1/users/${values['user-id']}/sessions`, {});
    console.log(JSON.stringify({ session_token: session.token, expires_at: session.expires_at }, null, 2));
  } else {
    console.error(USAGE);
    process.exit(2);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
