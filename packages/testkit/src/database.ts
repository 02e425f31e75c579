import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface CreateDatabaseOptions {
  /** Database to copy; it must have no open connections while being copied. */
  template?: string;
  /** Start of the generated name, e.g. the package name; reduced to [a-z0-9_]. */
  prefix?: string;
}

/** Creates a uniquely named database on the server of `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string, opts: CreateDatabaseOptions = {}): Promise<string> {
  const prefix = (opts.prefix ?? 'test').toLowerCase().replace(/[^a-z0-9_]+/g, '_').slice(0, 40);
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const template = opts.template ? ` TEMPLATE ${pg.escapeIdentifier(opts.template)}` : '';
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template}`));
  return withDatabase(serverUrl, name);
}

/**
 * A database owned by a new login role that is no superuser but may create roles — the service's rights on a managed
 * database — and the URL that connects to it as that role.
 */
export async function createServiceRoleDatabase(serverUrl: string, opts: { prefix?: string } = {}): Promise<string> {
  const role = `${(opts.prefix ?? 'wds_svc').toLowerCase().replace(/[^a-z0-9_]+/g, '_').slice(0, 40)}_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await withClient(serverUrl, async (client) => {
    await client.query(`CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN CREATEROLE PASSWORD '${password}'`);
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(role)} OWNER ${pg.escapeIdentifier(role)}`);
  });
  const u = new URL(withDatabase(serverUrl, role));
  u.username = role;
  u.password = password;
  return u.toString();
}

/** Drops the database of `url`, closing any connections still open to it. */
export async function dropDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  await withClient(withDatabase(url, 'postgres'), (client) =>
    client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
