import { AUDIT_INSERT, auditInTransactionSql, auditValuesSql, loadAuditKey } from '@wds/audit';
import { InvalidationBus, TopicCache } from '@wds/cache';
import { ServiceError } from '@wds/errors';
import { type Filter, type Policy, type PolicyGroup, type Subject, decide } from '@wds/policy-engine';
import {
  MAX_SHAPED_SQL_CHARS,
  ROW_CHECK_COLUMN,
  type StatementKind,
  type Constant,
  type Template,
  analyzeParsed,
  buildTemplate,
  checkSqlText,
  constantsOf,
  learnLexical,
  lexicalShape,
  fillTemplate,
  loadParser,
  parseOne,
  printVerified,
  rewriteTree,
  shapeOf,
} from '@wds/sql-rewriter';
import pg from 'pg';
import type { ByteBudget } from './byte-budget.js';
import { WorkspaceConnector } from './connections.js';
import { type SqlContext, loadContext } from './context.js';
import { auditFailedError, isAuditFailure, isConnectionError, mapDatabaseError, rowCapError } from './errors.js';
import { AnalysisWorker } from './offload.js';
import { type StatementSummary, analyseStatement, decideAll, filterFrom, summarize } from './statement.js';
import { RewriteCache, type RewriteCacheLimits, type RewriteCacheStats } from './rewrite-cache.js';
import { runCountingRows } from './discard-rows.js';
import { WorkspacePrincipals } from './principals.js';
import { TenantPools, type TenantPoolsOptions } from './tenant-pools.js';
import { userValueTypes } from './values.js';
import { AuditGroup } from './audit-group.js';
import { forgetPrepared, runCappedRead } from './capped-read.js';
import { installRowCapture, visibleRowsForStatement, visibleRowsStatement } from './row-capture.js';
import { type ReadScope, mayRunDdlOf, readScopeOf } from './read-scope.js';
import { type StatementExplanation, bindUser, both, explainAccess, viewAsDecisions } from './explain.js';
import { type RowExplanation, explainRowOf } from './explain-row.js';

/** Users one visibleRowsFor statement checks at most (the rest in the next). */
export const VISIBLE_ROWS_USERS = 200;

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
/**
 * A policy not saved yet, for view-as (docs/sql-and-policies.md#view-as): it takes the place of `replaces` (the saved
 * policy being edited) or is added; `group` is its policy group as saved.
 */
export interface DraftPolicy {
  policy: Policy;
  group: PolicyGroup;
  replaces: string | null;
}

/** The policy context as it would be with the draft saved. */
function withDraft(ctx: SqlContext, draft: DraftPolicy): Pick<SqlContext, 'policies' | 'groups'> {
  return {
    policies: [...ctx.policies.filter((p) => p.id !== draft.replaces), draft.policy],
    groups: [...ctx.groups.filter((g) => g.id !== draft.group.id), draft.group],
  };
}

export interface SqlAuditActor {
  userId: string | null;
  apiKeyId: string | null;
  requestId: string | null;
  /** The interface the statement came through. */
  transport?: 'http' | 'mcp';
  /** Recorded with the entry besides the tables and counts (an approved proposal's id). */
  details?: Record<string, unknown>;
}

export interface SqlResult {
  kind: StatementKind;
  tables: string[];
  executed_sql: string;
  rows?: Record<string, unknown>[];
  affected_rows?: number;
}

/** A statement as it will run: its summary, the rewritten text, and the template it came from (if it did). */
interface Prepared {
  a: StatementSummary;
  executed: string;
  template?: Template;
  constants?: Constant[];
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

function checkDdl(a: StatementSummary, caller: SqlCaller, ctx: SqlContext): void {
  if (a.kind !== 'ddl') return;
  if (!mayRunDdlOf(ctx, caller)) {
    throw new ServiceError(
      'DDL_FORBIDDEN',
      'Schema changes need the admin role or membership of the DDL policy group',
      caller.subject.kind === 'stf' ? 'STFs cannot run DDL' : undefined,
    );
  }
}

export interface WorkspaceSqlOptions {
  /** The service's database URL; workspace roles log in to the same server and database. */
  databaseUrl: string;
  /** What workspace role passwords derive from; by default a hash of the service's own database password. */
  roleSecret?: string | undefined;
  /** Cross-process invalidation: DDL publishes `ws:<id>`; without a bus nothing is cached. */
  bus?: InvalidationBus;
  /** How long policies and table columns may be served from memory (invalidation keeps them current). */
  contextTtlMs?: number;
  /** Connections of user SQL, per workspace and in total; see TenantPools. */
  pools?: Partial<Omit<TenantPoolsOptions, 'connect'>>;
  /** Bytes a row and a whole result may have (SQL_MAX_ROW_BYTES, SQL_MAX_RESPONSE_BYTES). */
  budget?: Partial<ByteBudget>;
  /** The statement and lock timeout of reads run in one round trip (SQL_STATEMENT_TIMEOUT_MS); default 10 s. */
  statementTimeoutMs?: number;
  /** How many statement shapes and subjects the rewrite cache keeps; see rewrite-cache.ts. */
  rewriteCache?: RewriteCacheLimits;
  /** The audit entry of a committed read (group commit), or the invalidation notice of a DDL, could not be written. */
  onAfterCommitError?: (err: unknown, statement: { workspaceId: string; kind: StatementKind }) => void;
  /** The audit entry of a statement could not be written in its transaction: the statement was rolled back (503). */
  onAuditError?: (err: unknown, statement: { workspaceId: string; kind: StatementKind }) => void;
  /**
   * Counts each `execute`: a statement that ran by kind (read, write, ddl) and its seconds, one refused or failed by
   * its error code (@wds/metrics' Metrics fits); optional.
   */
  metrics?: {
    sqlStatement(kind: 'read' | 'write' | 'ddl', seconds: number): void;
    sqlRejected(code: string): void;
  };
}

export const DEFAULT_POOLS: Omit<TenantPoolsOptions, 'connect'> = {
  maxPerWorkspace: 4,
  maxTotal: 20,
  maxQueuePerWorkspace: 64,
  acquireTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
};
/** SQLSTATEs of a prepared template that a parameter, not the statement, can cause (see `read`). */
const PARAMETER_TYPING = new Set([
  '42P18', // indeterminate_datatype
  '42P08', // ambiguous_parameter
  '42804', // datatype_mismatch
  '42601', // syntax_error (a type modifier must be a constant)
  '42725', // ambiguous_function
  '42883', // undefined_function
  '42846', // cannot_coerce
]);
/** feature_not_supported: "cached plan must not change result type". */
const CACHED_PLAN_CHANGED = '0A000';
const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** Read audit entries not yet written past which a read waits for its own (see `execute`). */
export const READ_AUDIT_BACKLOG = 2000;

export const DEFAULT_BUDGET: ByteBudget = { maxRowBytes: 16 * 1024 * 1024, maxResponseBytes: 64 * 1024 * 1024 };

/** Several statements in one transaction, for the `sql()` calls of one STF run. */
export interface SqlSession {
  /** Rows for a SELECT or a statement with RETURNING, the affected count otherwise. DDL is refused. */
  query(sql: string): Promise<Record<string, unknown>[] | number>;
  /** Commits when `ok`, rolls back otherwise, and releases the connection; later calls do nothing. */
  end(ok: boolean): Promise<void>;
}

/**
 * Runs workspace SQL. The service pool (`pool`) reads policies and writes audit entries; user statements run on
 * connections logged in as the workspace's own role (see roles.ts), from per-workspace pools with an overall cap.
 */
export class WorkspaceSql {
  private readonly contexts: TopicCache<SqlContext> | undefined;
  private readonly pools: TenantPools;
  /** The statement and lock timeout every workspace connection has as its own setting. */
  private readonly sessionTimeoutMs: number;
  /** The audit entries of reads, written by group commit. */
  private readonly readAudits: AuditGroup;
  /** Long statements are analysed and rewritten here, off the event loop (statement.ts, OFFLOAD_BYTES). */
  private readonly worker = new AnalysisWorker();
  /** Rewrite templates of statement shapes seen before (rewrite-cache.ts). */
  private readonly rewrites: RewriteCache;
  /** Templates whose prepared form failed where their filled text did not: they run filled (see `read`). */
  private readonly inlineOnly = new WeakSet<Template>();
  /** Reads run as a template's prepared statement, and reads of a template run filled after the prepared form failed. */
  private preparedReads = 0;
  /** Statements whose template was found by their lexical shape, without a parse. */
  private lexicalHits = 0;
  private filledReads = 0;
  /** What the entries of writes are signed with (`platform.audit_key`), read once. */
  private auditKey: Promise<string> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: WorkspaceSqlOptions,
  ) {
    if (opts.bus) this.contexts = new TopicCache(opts.bus, { ttlMs: opts.contextTtlMs ?? 30_000 });
    this.sessionTimeoutMs = Math.max(1, Math.floor(opts.statementTimeoutMs ?? 10_000));
    this.readAudits = new AuditGroup(pool, AUDIT_INSERT);
    this.rewrites = new RewriteCache(opts.rewriteCache);
    const limits = { ...DEFAULT_POOLS, ...opts.pools };
    const connector = new WorkspaceConnector(pool, {
      databaseUrl: opts.databaseUrl,
      roleSecret: opts.roleSecret,
      budget: { ...DEFAULT_BUDGET, ...opts.budget },
      connectTimeoutMs: Math.min(limits.acquireTimeoutMs, 10_000),
      // What a statement outside a transaction (a read) runs under: read-only, the time limits, only pg_catalog on
      // the search path. User SQL cannot change settings (no SET statement, no set_config); writes open their
      // transaction with BEGIN READ WRITE and SET LOCAL. Standard strings, as the rewrite templates write them.
      sessionOptions: `-c statement_timeout=${this.sessionTimeoutMs} -c lock_timeout=${this.sessionTimeoutMs} -c search_path=pg_catalog -c default_transaction_read_only=on -c standard_conforming_strings=on`,
    });
    // The caps are per workspace creator (principals.ts): one user's many workspaces get one share.
    const principals = new WorkspacePrincipals(pool);
    this.pools = new TenantPools({ ...limits, connect: (id) => connector.connect(id), principalOf: (id) => principals.of(id) });
  }

  /** Waits until the audit entries of every read answered so far are written (or have failed). */
  flushReadAudits(): Promise<void> {
    return this.readAudits.flush();
  }

  /** What the rewrite cache did so far (rewrite-cache.ts), and how its reads ran. */
  get rewriteCacheStats(): RewriteCacheStats & { preparedReads: number; filledReads: number; lexicalHits: number } {
    return { ...this.rewrites.stats, preparedReads: this.preparedReads, filledReads: this.filledReads, lexicalHits: this.lexicalHits };
  }

  /** The user SQL connections across all workspaces, as pg.Pool counts them (no workspace ids). */
  poolCounts(): { totalCount: number; idleCount: number; waitingCount: number } {
    const s = this.pools.stats();
    return { totalCount: s.open, idleCount: s.idle, waitingCount: s.waiting };
  }

  /** Closes the workspace connections (idle ones now, leased ones when they are returned) and the analysis worker. */
  async close(): Promise<void> {
    await Promise.all([this.pools.close(), this.worker.close(), this.readAudits.close()]);
  }

  /** Opens the transaction user SQL runs in, with the time limits; the role's own settings pin the schema. */
  private static async begin(client: pg.Client, limits: SqlLimits): Promise<void> {
    const timeout = Math.max(1, Math.floor(limits.statementTimeoutMs));
    await client.query(
      `BEGIN READ WRITE; SET LOCAL search_path = pg_catalog; SET LOCAL statement_timeout = ${timeout}; SET LOCAL lock_timeout = ${timeout}`,
    );
  }

  private context(caller: SqlCaller, tables: string[]): Promise<SqlContext> {
    const load = () => loadContext(this.pool, caller.workspaceId, tables, caller.ddlGroupId);
    if (!this.contexts) return load();
    const key = `${caller.workspaceId}\u0000${caller.ddlGroupId ?? ''}\u0000${[...tables].sort().join(',')}`;
    return this.contexts.through(key, [`ws:${caller.workspaceId}`], load);
  }

  async preview(caller: SqlCaller, sql: string, withPolicies: boolean): Promise<PreviewResult> {
    const a = await analyseStatement(sql, caller.workspaceId, this.worker);
    try {
      const ctx = await this.context(caller, a.tables);
      const input = { workspaceId: caller.workspaceId, catalog: ctx.catalog, userId: caller.subject.userId };
      const result: PreviewResult = {
        proposal_id: crypto.randomUUID(),
        original_sql: sql,
        transformed_sql: await a.rewrite(input),
        operation: a.kind,
        affected_tables: a.tables,
        requires_approval: a.kind !== 'select' || a.writes,
      };
      if (withPolicies) {
        try {
          // The same analysis serves both forms (rewriting is pure).
          result.policy_sql = await a.rewrite({ ...input, decisions: decideAll(a.access, ctx, caller.subject) });
        } catch (err) {
          if (!(err instanceof ServiceError) || err.code !== 'POLICY_DENIED') throw err;
          result.policy_sql = null;
          result.policy_denied = err.details ?? err.message;
        }
      }
      return result;
    } finally {
      a.release();
    }
  }

  /** Analysis, policies and DDL rights, rewrite: the statement as it will run for the caller. */
  private async prepare(caller: SqlCaller, sql: string, allowDdl: boolean): Promise<Prepared> {
    if (sql.length <= MAX_SHAPED_SQL_CHARS) return this.prepareShaped(caller, sql, allowDdl);
    const a = await analyseStatement(sql, caller.workspaceId, this.worker);
    try {
      if (a.kind === 'ddl' && !allowDdl) {
        throw new ServiceError('DDL_FORBIDDEN', 'STF code cannot change the schema', 'DDL is refused inside STF runs');
      }
      const ctx = await this.context(caller, a.tables);
      checkDdl(a, caller, ctx);
      const decisions = decideAll(a.access, ctx, caller.subject);
      const executed = await a.rewrite({ workspaceId: caller.workspaceId, catalog: ctx.catalog, decisions, userId: caller.subject.userId });
      return { a, executed };
    } finally {
      a.release();
    }
  }

  /**
   * `prepare` for a short statement, in this thread: a statement whose shape (its tree without its constants' values)
   * was rewritten before for this caller under the current policy context is its template filled with this
   * statement's constants; any other is analysed and rewritten in full, and its template kept (rewrite-cache.ts).
   */
  private async prepareShaped(caller: SqlCaller, sql: string, allowDdl: boolean): Promise<Prepared> {
    checkSqlText(sql);
    // A statement whose lexical shape was seen before (the same text but inside plain literals) skips the parse too.
    const lexical = lexicalShape(sql);
    const known = lexical && this.rewrites.lexicalShape(caller.workspaceId, lexical.key);
    const lexConstants = known && lexical && constantsOf(known.map, lexical);
    if (known && lexConstants && !known.entry.refused) {
      const ctx = await this.context(caller, known.entry.summary.tables);
      const template = this.rewrites.template(known.entry, ctx, caller.subject);
      if (template) {
        this.lexicalHits++;
        return { a: known.entry.summary, executed: fillTemplate(template, lexConstants), template, constants: lexConstants };
      }
    }
    await loadParser();
    const parsed = parseOne(sql);
    const shape = shapeOf(parsed, sql);
    const entry = shape && this.rewrites.shape(caller.workspaceId, shape.key);
    const learn = () => {
      if (!lexical || !shape) return;
      const e = this.rewrites.shape(caller.workspaceId, shape.key);
      const map = e && !e.refused ? learnLexical(shape, lexical, sql) : undefined;
      if (e && map) this.rewrites.learn(e, lexical.key, map);
    };
    if (shape && entry && !entry.refused) {
      const ctx = await this.context(caller, entry.summary.tables);
      const template = this.rewrites.template(entry, ctx, caller.subject);
      if (template) {
        learn();
        return { a: entry.summary, executed: fillTemplate(template, shape.constants), template, constants: shape.constants };
      }
    }
    const a = analyzeParsed(parsed);
    if (a.kind === 'ddl' && !allowDdl) {
      throw new ServiceError('DDL_FORBIDDEN', 'STF code cannot change the schema', 'DDL is refused inside STF runs');
    }
    const ctx = await this.context(caller, a.tables);
    checkDdl(a, caller, ctx);
    const decisions = decideAll(a.access, ctx, caller.subject);
    const options = { workspaceId: caller.workspaceId, catalog: ctx.catalog, filter: filterFrom(decisions, caller.subject.userId) };
    const tree = rewriteTree(a, options);
    const executed = printVerified(tree);
    const summary = summarize(a);
    // DDL is never templated (its option values are read); without the bus no context is cached, so neither is a template.
    if (shape && a.kind !== 'ddl' && this.opts.bus?.healthy && !entry?.refused) {
      this.rewrites.remember(caller.workspaceId, shape.key, summary, ctx, caller.subject, buildTemplate(a, options, tree, shape));
      learn();
    }
    return { a: summary, executed };
  }

  /**
   * A read as the caller and `member` at once (view as, docs/sql-and-policies.md#view-as): each table filtered by both
   * select policies, so the caller sees only rows they could read themselves that the member could read too. Reads
   * only; never a template (templates are one subject's). With `draft`, the member's side is decided as if the draft
   * were saved (in place of the policy it edits); the caller's side stays the saved policies.
   */
  private async prepareViewAs(caller: SqlCaller, member: Subject, sql: string, draft?: DraftPolicy): Promise<Prepared> {
    const a = await analyseStatement(sql, caller.workspaceId, this.worker);
    try {
      if (a.kind !== 'select' || a.writes) throw new ServiceError('VALIDATION_ERROR', 'Viewing as another member runs reads only', 'as_user_id takes a SELECT that writes nothing');
      const ctx = await this.context(caller, a.tables);
      const decisions = viewAsDecisions(a.access, ctx, caller.subject, member, draft ? withDraft(ctx, draft) : ctx);
      const executed = await a.rewrite({ workspaceId: caller.workspaceId, catalog: ctx.catalog, decisions, userId: caller.subject.userId });
      return { a, executed };
    } finally {
      a.release();
    }
  }

  /**
   * Why a statement would run as it would for `caller.subject`, or be denied (docs/sql-and-policies.md#explain):
   * for each (table, operation) the decision, the policies behind it and the predicate put in, and the statement as
   * it would run. Nothing runs.
   */
  async explain(caller: SqlCaller, sql: string): Promise<StatementExplanation> {
    const a = await analyseStatement(sql, caller.workspaceId, this.worker);
    try {
      const ctx = await this.context(caller, a.tables);
      const { access, decisions } = explainAccess(a.access, ctx, caller.subject);
      const denial = access.find((x) => x.decision !== 'allow')?.denial ?? null;
      const input = { workspaceId: caller.workspaceId, catalog: ctx.catalog, userId: caller.subject.userId };
      return {
        user_id: caller.subject.userId ?? '',
        operation: a.kind,
        ddl_allowed: a.kind === 'ddl' ? mayRunDdlOf(ctx, caller) : null,
        access,
        transformed_sql: decisions ? await a.rewrite({ ...input, decisions }) : null,
        denied: denial,
      };
    } finally {
      a.release();
    }
  }

  /**
   * For one row of a SELECT's one table that `viewer` can read: whether it passes each condition of each select
   * policy of `caller.subject`, and their whole filter. A row the viewer cannot read is not found (404), exactly as
   * one that does not exist: nothing of it is told. Each check is a read of the row through the rewriter, as the
   * viewer, with the condition added to the viewer's own filter.
   */
  async explainRow(caller: SqlCaller, viewer: Subject, sql: string, rowId: string, limits: SqlLimits): Promise<RowExplanation> {
    const a = await analyseStatement(sql, caller.workspaceId, this.worker);
    let table: string;
    try {
      if (a.kind !== 'select' || a.writes || a.tables.length !== 1) {
        throw new ServiceError('VALIDATION_ERROR', 'A row is explained for a SELECT of one table', 'row_id names a row of the one table the statement reads');
      }
      table = a.tables[0] as string;
    } finally {
      a.release();
    }
    const probe = await analyseStatement(`SELECT 1 AS found FROM ${pg.escapeIdentifier(table)} WHERE id = ${pg.escapeLiteral(rowId)}`, caller.workspaceId, this.worker);
    try {
      const ctx = await this.context(caller, [table]);
      if (!ctx.catalog.get(table)?.has('id')) throw new ServiceError('VALIDATION_ERROR', `Table ${table} has no id column`, 'row_id names a row by its id');
      const mine = decide({ policies: ctx.policies, groups: ctx.groups, subject: viewer, table, operation: 'select' });
      const viewerFilter = mine.allowed && viewer.userId ? bindUser(mine.filter, viewer.userId) : undefined;
      // One connection for every check of the row, taken at the first and given back at the end.
      let lease: Awaited<ReturnType<TenantPools['acquire']>> | undefined;
      let broken = false;
      const passes = async (extra: Filter | null): Promise<boolean> => {
        if (viewerFilter === undefined) return false;
        const decisions = { [`${table}:select`]: both(viewerFilter, extra) };
        const text = await probe.rewrite({ workspaceId: caller.workspaceId, catalog: ctx.catalog, decisions, userId: viewer.userId });
        lease ??= await this.pools.acquire(caller.workspaceId);
        try {
          return (await runCappedRead(lease.client, text, 1, userValueTypes)).rows.length > 0;
        } catch (err) {
          broken = isConnectionError(err);
          throw mapDatabaseError(err, limits);
        }
      };
      try {
        if (!(await passes(null))) throw new ServiceError('NOT_FOUND', 'Row not found');
        return await explainRowOf(table, ctx, caller.subject, passes);
      } finally {
        lease?.release(broken);
      }
    } finally {
      probe.release();
    }
  }

  /**
   * Runs one statement; with `audit`, its `execute_sql_<kind>` entry: a write's (and a read's in a transaction of its
   * own) in the statement's transaction, committed with it or not at all; a one-round-trip read's by group commit
   * once it has answered (audit-group.ts). An entry that cannot be written rolls its statement back (503).
   */
  async execute(caller: SqlCaller, sql: string, limits: SqlLimits, audit?: SqlAuditActor, viewAs?: Subject, draft?: DraftPolicy): Promise<SqlResult> {
    const metrics = this.opts.metrics;
    if (!metrics) return this.executeOnce(caller, sql, limits, audit, viewAs, draft);
    const t = performance.now();
    try {
      const r = await this.executeOnce(caller, sql, limits, audit, viewAs, draft);
      metrics.sqlStatement(r.kind === 'ddl' ? 'ddl' : r.kind === 'select' && r.affected_rows === undefined ? 'read' : 'write', (performance.now() - t) / 1000);
      return r;
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      metrics.sqlRejected(typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'INTERNAL_ERROR');
      throw err;
    }
  }

  private async executeOnce(caller: SqlCaller, sql: string, limits: SqlLimits, audit?: SqlAuditActor, viewAs?: Subject, draft?: DraftPolicy): Promise<SqlResult> {
    if (draft && !viewAs) throw new ServiceError('VALIDATION_ERROR', 'A draft policy is previewed as a member', 'draft_policy needs as_user_id');
    const { a, executed, template, constants } = viewAs ? await this.prepareViewAs(caller, viewAs, sql, draft) : await this.prepare(caller, sql, true);
    // A read under the connections' own time limits takes one round trip; other limits (an MCP call's time left)
    // take the transaction that sets them.
    const read = a.kind === 'select' && !a.writes && Math.floor(limits.statementTimeoutMs) === this.sessionTimeoutMs;
    const entry = (actor: SqlAuditActor, affected: number | undefined) => ({
      workspaceId: caller.workspaceId,
      userId: actor.userId,
      apiKeyId: actor.apiKeyId,
      requestId: actor.requestId,
      transport: actor.transport,
      action: `execute_sql_${a.kind}`,
      resourceType: 'table',
      resourceId: a.tables.join(',') || null,
      details: {
        ...actor.details,
        tables: a.tables,
        ...(a.kind === 'ddl' || a.kind === 'select' ? {} : { affected_rows: affected ?? 0 }),
        ...(viewAs ? { as_user_id: viewAs.userId } : {}),
      },
    });
    // Every statement but a one-round-trip read writes its entry in its own transaction, just before COMMIT and in
    // COMMIT's round trip: the statement and its entry commit together or not at all (migrations 0022, 0023). The
    // entry is bound to the backend of this connection, so it can be written nowhere else.
    const key = audit && !read ? await this.signingKey(caller.workspaceId, a.kind) : undefined;
    const lease = await this.pools.acquire(caller.workspaceId);
    const pid = Number((lease.client as unknown as { processID?: number | null }).processID);
    const beforeCommit = audit && key ? (affected: number | undefined) => auditInTransactionSql(entry(audit, affected), pid, key, pg.escapeLiteral) : undefined;
    let broken = false;
    let result: SqlResult;
    try {
      if (read) {
        // One round trip: the limits are the connection's own settings, the row cap the protocol's row limit.
        const r = await this.read(lease.client, executed, limits.maxRows, template, constants);
        if (r.rows.length > limits.maxRows) throw rowCapError(limits);
        result = { kind: a.kind, tables: a.tables, executed_sql: executed, rows: r.rows };
      } else {
        await WorkspaceSql.begin(lease.client, limits);
        result = await WorkspaceSql.run(lease.client, a, executed, limits, undefined, beforeCommit);
      }
    } catch (err) {
      broken = isConnectionError(err);
      if (!broken && !read) await lease.client.query('ROLLBACK').catch(() => (broken = true));
      if (isAuditFailure(err)) {
        // The service's own fault (say, a key that changed under it): read the key again next time.
        this.auditKey = undefined;
        this.opts.onAuditError?.(err, { workspaceId: caller.workspaceId, kind: a.kind });
      }
      throw mapDatabaseError(err, limits);
    } finally {
      lease.release(broken);
    }
    const failed = (err: unknown) => this.opts.onAfterCommitError?.(err, { workspaceId: caller.workspaceId, kind: a.kind });
    if (read && audit) {
      // A read's entry goes through group commit (audit-group.ts) and the answer does not wait for it, unless
      // entries pile up (the database is slow): then readers wait, so the backlog stays bounded. The audit
      // listing flushes first (`flushReadAudits`), so an entry is listed once its read has answered. A crash
      // may lose the entries of reads answered just before it (docs/operations.md).
      const written = this.readAudits.write(auditValuesSql(entry(audit, undefined), pg.escapeLiteral)).catch(failed);
      if (this.readAudits.pending > READ_AUDIT_BACKLOG) await written;
    }
    // A schema change makes every process's cached columns of this workspace stale: after its commit (a lost
    // message only leaves other processes' columns until their cache's time limit).
    if (a.kind === 'ddl') {
      const stale = `ws:${caller.workspaceId}`;
      await this.pool.query(InvalidationBus.notifySql(stale, pg.escapeLiteral)).catch(failed);
      this.opts.bus?.invalidate(stale);
    }
    return result;
  }

  /**
   * The key the entries of writes are signed with, read once (again after a failed read or a refused entry). Not to
   * be had, nothing runs: 503.
   */
  private signingKey(workspaceId: string, kind: StatementKind): Promise<string> {
    if (!this.auditKey) {
      const loading = loadAuditKey(this.pool);
      this.auditKey = loading;
      loading.catch(() => {
        if (this.auditKey === loading) this.auditKey = undefined;
      });
    }
    return this.auditKey.catch((err: unknown) => {
      this.opts.onAuditError?.(err, { workspaceId, kind });
      throw isConnectionError(err) ? mapDatabaseError(err, { statementTimeoutMs: this.sessionTimeoutMs, maxRows: 0 }) : auditFailedError();
    });
  }

  /**
   * A read from a template runs as the template's prepared statement, its constants bound as parameters: the
   * connection parses it once, and the text PostgreSQL gets is the verified template itself. A parameter is not
   * always what a literal is (a type modifier must be a constant; a type PostgreSQL cannot infer), so when the
   * prepared form fails while being parsed or typed, the filled text runs instead, and the template runs filled from
   * then on. A prepared `SELECT *` outlives a column change (PostgreSQL then refuses to run the old plan with
   * 0A000): it is forgotten on that connection and prepared again, once. Reads only: a read-only statement can be
   * tried twice.
   */
  private async read(client: pg.Client, executed: string, maxRows: number, template?: Template, constants?: Constant[]): Promise<pg.QueryResult> {
    if (!template || !constants) return runCappedRead(client, executed, maxRows, userValueTypes);
    if (this.inlineOnly.has(template)) {
      this.filledReads++;
      return runCappedRead(client, executed, maxRows, userValueTypes);
    }
    const prepared = { name: template.name, values: constants.map((c) => c.value), parameterTypes: template.parameterTypes };
    const run = () => runCappedRead(client, template.text, maxRows, userValueTypes, prepared);
    try {
      let r: pg.QueryResult;
      try {
        r = await run();
      } catch (err) {
        if (codeOf(err) !== CACHED_PLAN_CHANGED) throw err;
        await forgetPrepared(client, template.name);
        r = await run();
      }
      this.preparedReads++;
      return r;
    } catch (err) {
      if (err instanceof ServiceError || !PARAMETER_TYPING.has(codeOf(err) ?? '')) throw err;
      this.inlineOnly.add(template);
      this.filledReads++;
      return runCappedRead(client, executed, maxRows, userValueTypes);
    }
  }

  /**
   * The service's own writes to a workspace's tables (say, an embedding column): in one transaction on a
   * connection of the workspace's role, so that nothing the workspace attached to its tables (a trigger, a check
   * constraint) ever runs with the service's rights.
   */
  async writeAsWorkspace(workspaceId: string, statements: { text: string; values?: unknown[] }[], timeoutMs = 300_000): Promise<void> {
    const lease = await this.pools.acquire(workspaceId);
    let broken = false;
    try {
      await WorkspaceSql.begin(lease.client, { statementTimeoutMs: timeoutMs, maxRows: 0 });
      await lease.client.query('SET LOCAL search_path = public'); // where extensions' types live (pgvector)
      // The service's own bookkeeping (an embedding column) is no row change of the workspace's: not captured.
      await lease.client.query("SET LOCAL wds.row_capture = 'off'");
      for (const s of statements) await lease.client.query(s.text, s.values);
      await lease.client.query('COMMIT');
    } catch (err) {
      broken = isConnectionError(err);
      if (!broken) await lease.client.query('ROLLBACK').catch(() => (broken = true));
      throw err;
    } finally {
      lease.release(broken);
    }
  }

  /**
   * Which of `images` (rows of `table` as row capture recorded them, each the JSON text of one) `caller` may select, and as what: for each one
   * their select policy admits, its index in `images` and the row as a read of the table would show it (the same
   * columns and value types). None when the table is gone or no policy lets them read it. Evaluated by PostgreSQL,
   * on a read-only connection of the workspace's role, with the filter the rewriter would use (row-capture.ts).
   */
  async visibleRows(caller: SqlCaller, table: string, images: string[], signal?: AbortSignal): Promise<{ index: number; row: Record<string, unknown> }[]> {
    if (images.length === 0) return [];
    const ctx = await this.context(caller, [table]);
    const columns = ctx.catalog.get(table);
    if (!columns) return [];
    const d = decide({ policies: ctx.policies, groups: ctx.groups, subject: caller.subject, table, operation: 'select' });
    if (!d.allowed) return [];
    const text = await visibleRowsStatement(caller.workspaceId, table, d.filter, caller.subject.userId, columns.has('deleted_at'));
    return this.onImages(caller.workspaceId, images, signal, async (query) => {
      const r = await query(text);
      const names = r.fields.slice(1).map((f) => f.name);
      return r.rows.map((values) => ({
        index: Number(values[0]) - 1,
        row: Object.fromEntries(names.map((name, i) => [name, values[i + 1]])),
      }));
    });
  }

  /**
   * Runs `work` on one of the workspace's connections, with `query` sending a statement over `images` as `$1` (one
   * JSON array, serialised once: the images stay JSON text from the outbox to here, so a numeric's scale or a large
   * int8 survives). `signal`: how long to wait for the connection (its reason when it gives up).
   */
  private async onImages<T>(
    workspaceId: string,
    images: string[],
    signal: AbortSignal | undefined,
    work: (query: (text: string) => Promise<{ fields: { name: string }[]; rows: unknown[][] }>) => Promise<T>,
  ): Promise<T> {
    const values = [`[${images.join(',')}]`];
    const lease = await this.pools.acquire(workspaceId, signal);
    let broken = false;
    try {
      return await work(async (text) => {
        const r = await lease.client.query({ text, values, rowMode: 'array', types: userValueTypes });
        return { fields: r.fields, rows: r.rows as unknown[][] };
      });
    } catch (err) {
      broken = isConnectionError(err);
      throw mapDatabaseError(err, { statementTimeoutMs: this.sessionTimeoutMs, maxRows: images.length });
    } finally {
      lease.release(broken);
    }
  }

  /**
   * visibleRows for several users of one workspace in one statement (realtime's subscribers of a table): per user,
   * the images their select policy admits, as visibleRows answers them. Users whom no policy lets read the table get
   * none, and are not in the statement. A failure (one user's filter that cannot be evaluated over these rows) fails
   * the whole call: ask visibleRows per user to tell whose.
   */
  async visibleRowsFor(
    workspaceId: string,
    userIds: readonly string[],
    table: string,
    images: string[],
    signal?: AbortSignal,
  ): Promise<Map<string, { index: number; row: Record<string, unknown> }[]>> {
    const out = new Map<string, { index: number; row: Record<string, unknown> }[]>(userIds.map((u) => [u, []]));
    if (images.length === 0 || userIds.length === 0) return out;
    const caller: SqlCaller = { workspaceId, ddlGroupId: null, isAdmin: false, subject: { kind: 'user', userId: userIds[0] as string } };
    const ctx = await this.context(caller, [table]);
    const columns = ctx.catalog.get(table);
    if (!columns) return out;
    const readers: { userId: string; filter: Filter | null }[] = [];
    for (const userId of new Set(userIds)) {
      const d = decide({ policies: ctx.policies, groups: ctx.groups, subject: { kind: 'user', userId }, table, operation: 'select' });
      if (d.allowed) readers.push({ userId, filter: d.filter });
    }
    if (readers.length === 0) return out;
    return this.onImages(workspaceId, images, signal, async (query) => {
      // At most VISIBLE_ROWS_USERS boolean columns a statement (PostgreSQL takes 1664 result columns, the table's own
      // included).
      for (let from = 0; from < readers.length; from += VISIBLE_ROWS_USERS) {
        const some = readers.slice(from, from + VISIBLE_ROWS_USERS);
        const r = await query(await visibleRowsForStatement(workspaceId, table, some, columns.has('deleted_at')));
        const first = 1 + some.length;
        const names = r.fields.slice(first).map((f) => f.name);
        for (const values of r.rows) {
          const index = Number(values[0]) - 1;
          const row = Object.fromEntries(names.map((name, i) => [name, values[first + i]]));
          some.forEach((reader, k) => {
            // Only a true admits: NULL (unknown) is no more a yes here than in a WHERE.
            if (values[1 + k] === true) out.get(reader.userId)?.push({ index, row });
          });
        }
      }
      return out;
    });
  }

  /** How much of `table` the caller's reads cover (read-scope.ts), from the same policy context their statements use. */
  async readScope(caller: SqlCaller, table: string): Promise<ReadScope> {
    return readScopeOf(await this.context(caller, [table]), caller, table);
  }

  /** Whether the caller may run DDL in the workspace: the rule their DDL statements are checked by. */
  async mayRunDdl(caller: SqlCaller): Promise<boolean> {
    return mayRunDdlOf(await this.context(caller, []), caller);
  }

  /**
   * Opens a transaction for the `sql()` calls of one STF run, under the caller's subject (the STF in a workflow,
   * the user for instant-run). It holds one of the workspace's connections until `end`. A failing statement is
   * rolled back to its savepoint and throws; the session goes on.
   */
  async openSession(caller: SqlCaller, limits: SqlLimits): Promise<SqlSession> {
    const lease = await this.pools.acquire(caller.workspaceId);
    const client = lease.client;
    let open = true;
    let broken = false;
    let n = 0;
    try {
      await WorkspaceSql.begin(client, limits);
    } catch (err) {
      lease.release(true);
      throw mapDatabaseError(err, limits);
    }
    // One statement at a time, in call order: savepoints nest, so interleaved calls would roll back each other's work,
    // and `end` must not return the connection while a statement still runs on it.
    let queue: Promise<unknown> = Promise.resolve();
    const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
      const next = queue.then(work);
      queue = next.catch(() => {});
      return next;
    };
    const query = async (sql: string) => {
      const { a, executed } = await this.prepare(caller, sql, false);
      if (!open) throw new ServiceError('EXECUTION_ERROR', 'The SQL session of this run has ended');
      if (broken) throw new ServiceError('SERVICE_UNAVAILABLE', 'The database connection of this run was lost');
      const savepoint = `wds_s${++n}`;
      try {
        await client.query(`SAVEPOINT ${savepoint}`);
        const r = await WorkspaceSql.run(client, a, executed, limits, `wds_c${n}`);
        await client.query(`RELEASE SAVEPOINT ${savepoint}`);
        if (a.kind === 'select' && !a.writes) return r.rows ?? [];
        return a.returning ? (r.rows ?? []) : (r.affected_rows ?? 0);
      } catch (err) {
        broken ||= isConnectionError(err);
        if (!broken) await client.query(`ROLLBACK TO SAVEPOINT ${savepoint}`).catch(() => (broken = true));
        throw mapDatabaseError(err, limits);
      }
    };
    return {
      query: (sql) => {
        if (!open) return Promise.reject(new ServiceError('EXECUTION_ERROR', 'The SQL session of this run has ended'));
        return inTurn(() => query(sql));
      },
      end: (ok) => {
        if (!open) return Promise.resolve();
        open = false;
        return inTurn(async () => {
          try {
            if (!broken) await client.query(ok ? 'COMMIT' : 'ROLLBACK');
          } catch (err) {
            broken = true;
            throw mapDatabaseError(err, limits);
          } finally {
            lease.release(broken);
          }
        });
      },
    };
  }

  /**
   * Runs the rewritten statement inside the open transaction and commits it (unless `cursor` is given: then it is
   * one statement of a longer session). The user statement always goes through the extended protocol, which
   * refuses a second statement; a read goes through a cursor so that the row cap is checked before rows pile up.
   */
  private static async run(
    client: pg.Client,
    a: StatementSummary,
    executed: string,
    limits: SqlLimits,
    cursor?: string,
    /** The service's own statement to run in the transaction before COMMIT (the audit entry), given the rows affected. */
    beforeCommit?: (affected: number | undefined) => string,
  ): Promise<SqlResult> {
    const base = { kind: a.kind, tables: a.tables, executed_sql: executed };
    const finish = (affected: number | undefined) => (beforeCommit ? `${beforeCommit(affected)}; COMMIT` : 'COMMIT');
    const commit = cursor ? '' : `; ${finish(undefined)}`;
    if (a.kind === 'select' && !a.writes) {
      const name = cursor ?? 'wds_cursor';
      await client.query({ text: `DECLARE ${name} NO SCROLL CURSOR FOR ${executed}`, queryMode: 'extended' } as pg.QueryConfig);
      const [r] = (await client.query({
        text: `FETCH FORWARD ${limits.maxRows + 1} FROM ${name}; CLOSE ${name}${commit}`,
        types: userValueTypes,
      })) as unknown as pg.QueryResult[];
      if (!r || r.rows.length > limits.maxRows) throw rowCapError(limits);
      return { ...base, rows: r.rows };
    }
    if (a.kind !== 'select' && !a.returning) {
      // Nothing to show: the rows (our row checks) are counted, never kept.
      const affected = await runCountingRows(client, executed);
      // A table a DDL statement created gets its row capture in the same transaction (row-capture.ts).
      if (a.kind === 'ddl') await installRowCapture(client);
      if (!cursor) await client.query(finish(a.kind === 'ddl' ? 0 : affected));
      return { ...base, affected_rows: a.kind === 'ddl' ? 0 : affected };
    }
    const r = await client.query({ text: executed, queryMode: 'extended', types: userValueTypes } as pg.QueryConfig);
    // A RETURNING of the user's own, or a SELECT whose CTE writes: rows to show, so the row cap holds.
    if (r.rows.length > limits.maxRows) throw rowCapError(limits);
    if (!cursor) await client.query(finish(r.rowCount ?? 0));
    const out: SqlResult = { ...base, affected_rows: r.rowCount ?? 0 };
    if (a.kind === 'select') out.rows = r.rows;
    else if (a.returning) out.rows = r.rows.map(({ [ROW_CHECK_COLUMN]: _check, ...rest }) => rest);
    return out;
  }
}

export { loadContext };
