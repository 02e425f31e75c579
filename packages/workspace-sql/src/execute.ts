import { auditInsertSql } from '@wds/audit';
import { InvalidationBus, TopicCache } from '@wds/cache';
import { ServiceError } from '@wds/errors';
import { type Subject, compileFilter, decide, describeDenial } from '@wds/policy-engine';
import {
  type Analysis,
  type FilterFn,
  ROW_CHECK_COLUMN,
  type StatementKind,
  analyze,
  loadParser,
  rewrite,
  toLogicalText,
} from '@wds/sql-rewriter';
import type pg from 'pg';
import { type SqlContext, loadContext } from './context.js';
import { ensureWorkspaceRole } from './roles.js';
import { userValueTypes } from './values.js';

export interface SqlLimits {
  /** Per statement, enforced by PostgreSQL. */
  statementTimeoutMs: number;
  /** Rows a statement may return; more is an error, not a silent cut. */
  maxRows: number;
}

export interface SqlCaller {
  workspaceId: string;
  /** The workspace's `ddl_policy_group_id`. */
  ddlGroupId: string | null;
  /** Workspace admins may run DDL. */
  isAdmin: boolean;
  subject: Subject;
}

/** Who to record in the audit entry written in the statement's own transaction. */
export interface SqlAuditActor {
  userId: string | null;
  apiKeyId: string | null;
  requestId: string | null;
}

export interface SqlResult {
  kind: StatementKind;
  tables: string[];
  executed_sql: string;
  rows?: Record<string, unknown>[];
  affected_rows?: number;
}

export interface PreviewResult {
  proposal_id: string;
  original_sql: string;
  transformed_sql: string;
  operation: StatementKind;
  affected_tables: string[];
  requires_approval: boolean;
  /** With `with_policies`: the SQL as it would run for the caller, or why it would be denied. */
  policy_sql?: string | null;
  policy_denied?: string;
}

/** Decides every (table, operation) the statement needs; the first denial ends the request. */
function policyFilter(a: Analysis, ctx: SqlContext, subject: Subject): FilterFn {
  const filters = new Map<string, ReturnType<typeof decide>>();
  for (const { table, operation } of a.access) {
    const d = decide({ policies: ctx.policies, groups: ctx.groups, subject, table, operation });
    if (!d.allowed) throw new ServiceError('POLICY_DENIED', 'Denied by policy', describeDenial(d, table, operation));
    filters.set(`${table}:${operation}`, d);
  }
  return (table, operation, qualifier) => {
    const d = filters.get(`${table}:${operation}`);
    if (!d?.allowed || !d.filter) return null;
    return compileFilter(d.filter, { qualifier, userId: subject.userId });
  };
}

function checkDdl(a: Analysis, caller: SqlCaller, ctx: SqlContext): void {
  if (a.kind !== 'ddl') return;
  const s = caller.subject;
  const allowed = s.kind === 'user' && (caller.isAdmin || ctx.ddlUserIds.includes(s.userId));
  if (!allowed) {
    throw new ServiceError(
      'DDL_FORBIDDEN',
      'Schema changes need the admin role or membership of the DDL policy group',
      s.kind === 'stf' ? 'STFs cannot run DDL' : undefined,
    );
  }
}

export interface WorkspaceSqlOptions {
  /** Cross-process invalidation: DDL publishes `ws:<id>`; without a bus nothing is cached. */
  bus?: InvalidationBus;
  /** How long policies and table columns may be served from memory (invalidation keeps them current). */
  contextTtlMs?: number;
}

/** Several statements in one transaction, for the `sql()` calls of one STF run. */
export interface SqlSession {
  /** Rows for a SELECT or a statement with RETURNING, the affected count otherwise. DDL is refused. */
  query(sql: string): Promise<Record<string, unknown>[] | number>;
  /** Commits when `ok`, rolls back otherwise, and releases the connection; later calls do nothing. */
  end(ok: boolean): Promise<void>;
}

export class WorkspaceSql {
  private readonly rolesReady = new Set<string>();
  private readonly contexts: TopicCache<SqlContext> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: WorkspaceSqlOptions = {},
  ) {
    if (opts.bus) this.contexts = new TopicCache(opts.bus, opts.contextTtlMs ?? 30_000);
  }

  /** Opens the transaction user SQL runs in: the workspace's role, its schema only, and the time limits. */
  private async begin(client: pg.PoolClient, caller: SqlCaller, limits: SqlLimits): Promise<void> {
    const role = await ensureWorkspaceRole(client, caller.workspaceId, this.rolesReady);
    const timeout = Math.max(1, Math.floor(limits.statementTimeoutMs));
    await client.query(
      `BEGIN; SET LOCAL ROLE "${role}"; SET LOCAL search_path = user_data; ` +
        `SET LOCAL statement_timeout = ${timeout}; SET LOCAL lock_timeout = ${timeout}`,
    );
  }

  private context(caller: SqlCaller, tables: string[]): Promise<SqlContext> {
    const load = () => loadContext(this.pool, caller.workspaceId, tables, caller.ddlGroupId);
    if (!this.contexts) return load();
    const key = `${caller.workspaceId}\u0000${caller.ddlGroupId ?? ''}\u0000${[...tables].sort().join(',')}`;
    return this.contexts.through(key, [`ws:${caller.workspaceId}`], load);
  }

  async preview(caller: SqlCaller, sql: string, withPolicies: boolean): Promise<PreviewResult> {
    await loadParser();
    const a = analyze(sql);
    const ctx = await this.context(caller, a.tables);
    const transformed = rewrite(a, { workspaceId: caller.workspaceId, catalog: ctx.catalog });
    const result: PreviewResult = {
      proposal_id: crypto.randomUUID(),
      original_sql: sql,
      transformed_sql: transformed,
      operation: a.kind,
      affected_tables: a.tables,
      requires_approval: a.kind !== 'select' || a.writes,
    };
    if (withPolicies) {
      try {
        const again = analyze(sql);
        result.policy_sql = rewrite(again, {
          workspaceId: caller.workspaceId,
          catalog: ctx.catalog,
          filter: policyFilter(again, ctx, caller.subject),
        });
      } catch (err) {
        if (!(err instanceof ServiceError) || err.code !== 'POLICY_DENIED') throw err;
        result.policy_sql = null;
        result.policy_denied = err.details ?? err.message;
      }
    }
    return result;
  }

  /** Runs one statement; with `audit`, the `execute_sql_<kind>` entry commits in the same transaction. */
  async execute(caller: SqlCaller, sql: string, limits: SqlLimits, audit?: SqlAuditActor): Promise<SqlResult> {
    await loadParser();
    const a = analyze(sql);
    const ctx = await this.context(caller, a.tables);
    checkDdl(a, caller, ctx);
    const executed = rewrite(a, {
      workspaceId: caller.workspaceId,
      catalog: ctx.catalog,
      filter: policyFilter(a, ctx, caller.subject),
    });
    const client = await this.pool.connect();
    try {
      await this.begin(client, caller, limits);
      const entry = audit && {
        workspaceId: caller.workspaceId,
        userId: audit.userId,
        apiKeyId: audit.apiKeyId,
        requestId: audit.requestId,
        action: `execute_sql_${a.kind}`,
        resourceType: 'table',
        resourceId: a.tables.join(',') || null,
      };
      const literal = (x: string) => client.escapeLiteral(x);
      // A schema change makes every process's cached columns of this workspace stale (delivered on commit).
      const stale = a.kind === 'ddl' ? `ws:${caller.workspaceId}` : undefined;
      // Appended to the last round trip: back to the service role, the audit row, the notice, then COMMIT.
      const finish = (details: Record<string, unknown>) =>
        [
          'RESET ROLE',
          ...(entry ? [auditInsertSql({ ...entry, details }, literal)] : []),
          ...(stale ? [InvalidationBus.notifySql(stale, literal)] : []),
          'COMMIT',
        ].join('; ');
      const result = await this.run(client, a, executed, limits, finish);
      if (stale) this.opts.bus?.invalidate(stale);
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw mapDatabaseError(err, limits);
    } finally {
      client.release();
    }
  }

  /**
   * Opens a transaction for the `sql()` calls of one STF run, under the caller's subject (the STF in a workflow,
   * the user for instant-run). A failing statement is rolled back to its savepoint and throws; the session goes on.
   */
  async openSession(caller: SqlCaller, limits: SqlLimits): Promise<SqlSession> {
    await loadParser();
    const client = await this.pool.connect();
    let open = true;
    let n = 0;
    try {
      await this.begin(client, caller, limits);
    } catch (err) {
      client.release();
      throw err;
    }
    return {
      query: async (sql) => {
        if (!open) throw new ServiceError('EXECUTION_ERROR', 'The SQL session of this run has ended');
        const a = analyze(sql);
        if (a.kind === 'ddl') throw new ServiceError('DDL_FORBIDDEN', 'STF code cannot change the schema', 'DDL is refused inside STF runs');
        const ctx = await this.context(caller, a.tables);
        const executed = rewrite(a, { workspaceId: caller.workspaceId, catalog: ctx.catalog, filter: policyFilter(a, ctx, caller.subject) });
        const savepoint = `wds_s${++n}`;
        await client.query(`SAVEPOINT ${savepoint}`);
        try {
          let result: Record<string, unknown>[] | number;
          if (a.kind === 'select' && !a.writes) {
            const cursor = `wds_c${n}`;
            await client.query({ text: `DECLARE ${cursor} NO SCROLL CURSOR FOR ${executed}`, queryMode: 'extended' } as pg.QueryConfig);
            const [r] = (await client.query({
              text: `FETCH FORWARD ${limits.maxRows + 1} FROM ${cursor}; CLOSE ${cursor}`,
              types: userValueTypes,
            })) as unknown as pg.QueryResult[];
            if (!r || r.rows.length > limits.maxRows) throw rowCapError(limits);
            result = r.rows;
          } else {
            const r = await client.query({ text: executed, queryMode: 'extended', types: userValueTypes } as pg.QueryConfig);
            if (a.returning && r.rows.length > limits.maxRows) throw rowCapError(limits);
            result = a.returning
              ? r.rows.map(({ [ROW_CHECK_COLUMN]: _check, ...rest }) => rest)
              : (r.rowCount ?? 0);
          }
          await client.query(`RELEASE SAVEPOINT ${savepoint}`);
          return result;
        } catch (err) {
          await client.query(`ROLLBACK TO SAVEPOINT ${savepoint}`).catch(() => {});
          throw mapDatabaseError(err, limits);
        }
      },
      end: async (ok) => {
        if (!open) return;
        open = false;
        try {
          await client.query(ok ? 'COMMIT' : 'ROLLBACK');
        } finally {
          client.release();
        }
      },
    };
  }

  private async run(
    client: pg.PoolClient,
    a: Analysis,
    executed: string,
    limits: SqlLimits,
    finish: (details: Record<string, unknown>) => string,
  ): Promise<SqlResult> {
    const base = { kind: a.kind, tables: a.tables, executed_sql: executed };
    // The user statement always goes through the extended protocol, which refuses a second statement.
    if (a.kind === 'select' && !a.writes) {
      await client.query({ text: `DECLARE wds_cursor NO SCROLL CURSOR FOR ${executed}`, queryMode: 'extended' } as pg.QueryConfig);
      // A read-only transaction: fetching and committing in one round trip is safe.
      const [r] = (await client.query({
        text: `FETCH FORWARD ${limits.maxRows + 1} FROM wds_cursor; ${finish({ tables: a.tables })}`,
        types: userValueTypes,
      })) as unknown as pg.QueryResult[];
      if (!r || r.rows.length > limits.maxRows) throw rowCapError(limits);
      return { ...base, rows: r.rows };
    }
    const r = await client.query({ text: executed, queryMode: 'extended', types: userValueTypes } as pg.QueryConfig);
    if (a.returning && r.rows.length > limits.maxRows) throw rowCapError(limits);
    await client.query(finish({ tables: a.tables, ...(a.kind === 'ddl' ? {} : { affected_rows: r.rowCount ?? 0 }) }));
    if (a.kind === 'ddl') return { ...base, affected_rows: 0 };
    const out: SqlResult = { ...base, affected_rows: r.rowCount ?? 0 };
    if (a.kind === 'select') out.rows = r.rows;
    else if (a.returning) {
      out.rows = r.rows.map((row) => {
        const { [ROW_CHECK_COLUMN]: _check, ...rest } = row;
        return rest;
      });
    }
    return out;
  }
}

const rowCapError = (limits: SqlLimits) =>
  new ServiceError(
    'EXECUTION_ERROR',
    `The result has more than ${limits.maxRows} rows (row cap)`,
    'add a LIMIT or a narrower WHERE; the cap is SQL_MAX_ROWS',
  );

/** Database errors become EXECUTION_ERROR with physical names turned back into logical ones. */
function mapDatabaseError(err: unknown, limits: SqlLimits): unknown {
  if (err instanceof ServiceError) return err;
  const e = err as { code?: string; message?: string; detail?: string; hint?: string };
  if (typeof e?.code !== 'string' || typeof e.message !== 'string') return err;
  if (e.code === 'WDS01') {
    const what = e.message.replace(/^row check failed: /, '');
    const [table, operation] = what.split(':');
    return new ServiceError(
      'POLICY_DENIED',
      'Denied by policy',
      `a row of table "${table}" would be outside your ${operation} policy; nothing was changed`,
    );
  }
  if (e.code === '57014') {
    return new ServiceError(
      'EXECUTION_ERROR',
      `The statement ran longer than ${limits.statementTimeoutMs} ms (statement timeout)`,
      'the limit is SQL_STATEMENT_TIMEOUT_MS',
    );
  }
  const details = [e.detail, e.hint].filter(Boolean).map((s) => toLogicalText(s as string)).join(' ');
  return new ServiceError('EXECUTION_ERROR', toLogicalText(e.message), details || `SQLSTATE ${e.code}`);
}

export { loadContext };
