import { OPERATIONS, recordAudit } from '@wds/audit';
import { type Db, createDb, openEmbeddedDatabase } from '@wds/db';
import { type LoginLink, createLoginLink, findUserByEmail, loginLinkAuditDetails } from '@wds/identity';
import { resolve } from 'node:path';
import type { Config } from './config.js';
import { loginPageUrl } from './login-page.js';

/**
 * `pnpm cli user login-link --email …`: a one-time login link for the user of that email, made on the database itself
 * (DATABASE_URL, or the embedded database of DATA_DIR: used where it runs, started for the duration otherwise), so it
 * works with the server stopped and needs no admin token — whoever reaches the database holds more than one. Recorded
 * as `created_by: 'cli'`, with the audit entry the admin interface writes (no request, no transport).
 */
export async function cliLoginLink(config: Config, email: string): Promise<LoginLink> {
  return withDatabase(config, async (db) => {
    const user = await findUserByEmail(db, email);
    if (!user) throw new Error(`No user has the email ${JSON.stringify(email)} (pnpm cli user create makes one)`);
    return db.transaction().execute(async (tx) => {
      const link = await createLoginLink(tx, user.id, { pageUrl: loginPageUrl(config), createdBy: 'cli' });
      await recordAudit(tx, {
        workspaceId: null,
        userId: null,
        apiKeyId: null,
        action: 'create_login_link',
        resourceType: OPERATIONS.create_login_link.resource,
        resourceId: link.id,
        details: loginLinkAuditDetails(user.id, link, 'cli'),
      });
      return { url: link.url, expires_at: link.expires_at };
    });
  });
}

/** The deployment's database for one command, closed (and an embedded server it started stopped) afterwards. */
async function withDatabase<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const embedded = config.DATABASE_URL ? undefined : await openEmbeddedDatabase(resolve(config.DATA_DIR));
  const { db } = createDb(config.DATABASE_URL ?? (embedded as { url: string }).url, { max: 1 });
  try {
    return await work(db);
  } finally {
    await db.destroy();
    await embedded?.close();
  }
}
