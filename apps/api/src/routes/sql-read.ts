import { ServiceError, validationError } from '@wds/errors';
import { analyze, isLogicalName, MAX_SQL_BYTES } from '@wds/sql-rewriter';
import type { SqlLimits } from '@wds/workspace-sql';
import * as v from 'valibot';
import { defineRoute, type MemberCtx } from '../http/route.js';
import { sqlCallerOf as callerOf } from '../http/sql-caller.js';

/**
 * Reads of the workspace's tables that change nothing, so hosts can approve them without asking a person
 * (docs/mcp.md#read-tools): `query_sql` runs SELECT only, `list_tables` and `describe_table` read the workspace's
 * scoped information schema (the rewriter lists only this workspace's tables, under their logical names).
 */

const Sql = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(MAX_SQL_BYTES));
const Rows = v.array(v.record(v.string(), v.unknown()));

const limitsOf = (ctx: MemberCtx): SqlLimits => {
  const { config } = ctx.services;
  const left = ctx.transport.remainingMs();
  return {
    statementTimeoutMs: left === undefined ? config.SQL_STATEMENT_TIMEOUT_MS : Math.min(config.SQL_STATEMENT_TIMEOUT_MS, left),
    maxRows: config.SQL_MAX_ROWS,
  };
};

/** A statement that only reads: one SELECT with no data-modifying part (a `WITH … DELETE` CTE is a write). */
function assertSelect(sql: string): void {
  const a = analyze(sql);
  if (a.kind !== 'select' || a.writes) {
    throw validationError(
      'query_sql runs SELECT statements only: use execute_sql for INSERT, UPDATE, DELETE and DDL (it may need approval)',
      `Not a read: a ${a.writes && a.kind === 'select' ? 'SELECT with a data-modifying part' : a.kind.toUpperCase()} statement`,
    );
  }
}

const TableColumn = v.object({
  name: v.string(),
  data_type: v.string(),
  udt_name: v.nullable(v.string()),
  nullable: v.boolean(),
  default: v.nullable(v.string()),
  max_length: v.nullable(v.number()),
});

const TableSummary = v.object({ name: v.string(), columns: v.array(v.string()) });

async function read(ctx: MemberCtx, sql: string): Promise<Record<string, unknown>[]> {
  const r = await ctx.services.sql.execute(callerOf(ctx), sql, limitsOf(ctx));
  return (r.rows ?? []) as Record<string, unknown>[];
}

export const sqlReadRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql/query',
    operation: 'query_sql',
    response: v.object({ rows: Rows, executed_sql: v.string() }),
    summary: 'Run one SELECT on the workspace tables, under the caller’s row policies; any other statement is refused (execute_sql runs those)',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql }),
    transaction: false,
    auditsItself: true,
    invalidates: 'none',
    mcp: { selfBounded: true },
    handler: async (ctx) => {
      assertSelect(ctx.body.sql);
      const audit = { userId: ctx.principal.user.id, apiKeyId: ctx.principal.apiKeyId, requestId: ctx.requestId, transport: ctx.transport.name };
      const r = await ctx.services.sql.execute(callerOf(ctx), ctx.body.sql, limitsOf(ctx), audit);
      // The guard is assertSelect, before anything runs; this only keeps a mismatch of the two analyses from
      // answering as a read (it would be a bug in the rewriter, to report).
      if (r.kind !== 'select' || r.affected_rows !== undefined) throw new ServiceError('INTERNAL_ERROR', 'query_sql ran a statement that is not a read');
      return { rows: (r.rows ?? []) as Record<string, unknown>[], executed_sql: r.executed_sql };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/workspaces/:id/tables',
    operation: 'list_tables',
    response: v.array(TableSummary),
    summary: "The workspace's tables by name, each with its column names in order",
    auth: 'user',
    workspace: 'path',
    role: 'member',
    handler: async (ctx) => {
      const tables = await read(ctx, 'SELECT table_name FROM information_schema.tables ORDER BY table_name');
      const columns = await read(ctx, 'SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position');
      const byTable = new Map<string, string[]>(tables.map((t) => [String(t.table_name), []]));
      for (const c of columns) byTable.get(String(c.table_name))?.push(String(c.column_name));
      return [...byTable].map(([name, cols]) => ({ name, columns: cols }));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/workspaces/:id/tables/:table',
    operation: 'describe_table',
    response: v.object({ name: v.string(), columns: v.array(TableColumn) }),
    summary: 'One table of the workspace: its columns in order, with type, nullability, default and length',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    handler: async (ctx) => {
      const table = ctx.params.table;
      // A logical name is [a-z_][a-z0-9_]*: safe inside a string literal; anything else names no table.
      if (!isLogicalName(table)) throw new ServiceError('NOT_FOUND', `No table ${JSON.stringify(table.slice(0, 100))}`, 'list_tables names the tables');
      const rows = await read(
        ctx,
        `SELECT column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length FROM information_schema.columns WHERE table_name = '${table}' ORDER BY ordinal_position`,
      );
      if (rows.length === 0) throw new ServiceError('NOT_FOUND', `No table ${table}`, 'list_tables names the tables');
      return {
        name: table,
        columns: rows.map((r) => ({
          name: String(r.column_name),
          data_type: String(r.data_type),
          udt_name: r.udt_name === null ? null : String(r.udt_name),
          nullable: r.is_nullable === 'YES',
          default: r.column_default === null ? null : String(r.column_default),
          max_length: r.character_maximum_length === null ? null : Number(r.character_maximum_length),
        })),
      };
    },
  }),
];
