import { workspaceRole } from '@wds/sql-rewriter';
import pg from 'pg';
import { type ByteBudget, budgetedStream } from './byte-budget.js';
import { ensureWorkspaceRole, rolePassword, roleSecret } from './roles.js';

export interface WorkspaceConnectorOptions {
  /** The service's database URL: workspace roles log in to the same server and database. */
  databaseUrl: string;
  /** What role passwords derive from (SQL_ROLE_SECRET or SECRETS_KEY); by default the service's own DB password. */
  roleSecret?: string | undefined;
  budget: ByteBudget;
  /** A login that takes longer fails (it holds a connection slot meanwhile). */
  connectTimeoutMs?: number;
  /** Startup settings of every connection (`-c name=value …`); they win over any `options` in the database URL. */
  sessionOptions?: string;
}

/** PostgreSQL's answers when a role does not exist or its password differs (a new workspace, a changed secret). */
const LOGIN_FAILED = new Set(['28000', '28P01']);

/**
 * Opens connections logged in as a workspace's own role, creating or repairing the role once per process (and
 * again when a login fails). Every connection reads its results through the byte budget.
 */
export class WorkspaceConnector {
  private readonly ready = new Map<string, Promise<void>>();
  private readonly secret: string;

  constructor(
    private readonly service: pg.Pool,
    private readonly opts: WorkspaceConnectorOptions,
  ) {
    this.secret = roleSecret(opts.databaseUrl, opts.roleSecret);
  }

  async connect(workspaceId: string): Promise<pg.Client> {
    await this.ensureRole(workspaceId);
    try {
      return await this.open(workspaceId);
    } catch (err) {
      if (!LOGIN_FAILED.has((err as { code?: string }).code ?? '')) throw err;
      this.ready.delete(workspaceRole(workspaceId));
      await this.ensureRole(workspaceId);
      return this.open(workspaceId);
    }
  }

  private ensureRole(workspaceId: string): Promise<void> {
    const role = workspaceRole(workspaceId);
    let done = this.ready.get(role);
    if (!done) {
      done = (async () => {
        const client = await this.service.connect();
        try {
          await ensureWorkspaceRole(client, workspaceId, rolePassword(this.secret, role));
        } finally {
          client.release();
        }
      })();
      this.ready.set(role, done);
      done.catch(() => this.ready.delete(role));
    }
    return done;
  }

  private async open(workspaceId: string): Promise<pg.Client> {
    const role = workspaceRole(workspaceId);
    const url = new URL(this.opts.databaseUrl);
    url.username = role;
    url.password = rolePassword(this.secret, role);
    // The URL's own startup options would override these (pg reads the connection string last).
    url.searchParams.delete('options');
    const client = new pg.Client({
      connectionString: url.toString(),
      ...(this.opts.sessionOptions ? { options: this.opts.sessionOptions } : {}),
      application_name: 'wds-sql',
      connectionTimeoutMillis: this.opts.connectTimeoutMs ?? 10_000,
      stream: budgetedStream(this.opts.budget),
    });
    // A connection that dies while nobody is waiting on it must not become an unhandled 'error' event.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    return client;
  }
}
