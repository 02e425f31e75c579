import { MAX_SQL_BYTES } from '@wds/sql-rewriter';
import { describeTable, listTables, queryRead } from '@wds/workspace-sql';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { sqlCallerOf as callerOf, sqlLimitsOf as limitsOf } from '../http/sql-caller.js';

/**
 * Reads of the workspace's tables that change nothing, so hosts can approve them without asking a person
 * (docs/mcp.md#read-tools): `query_sql` runs SELECT only, `list_tables` and `describe_table` read the workspace's
 * scoped information schema (@wds/workspace-sql's catalog.ts).
 */

const Sql = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(MAX_SQL_BYTES));
const Rows = v.array(v.record(v.string(), v.unknown()));

const TableColumn = v.object({
  name: v.string(),
  data_type: v.string(),
  udt_name: v.nullable(v.string()),
  nullable: v.boolean(),
  default: v.nullable(v.string()),
  max_length: v.nullable(v.number()),
});

const TableSummary = v.object({ name: v.string(), columns: v.array(v.string()) });

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
    handler: (ctx) =>
      queryRead(ctx.services.sql, callerOf(ctx), ctx.body.sql, limitsOf(ctx), {
        userId: ctx.principal.user.id,
        apiKeyId: ctx.principal.apiKeyId,
        requestId: ctx.requestId,
        transport: ctx.transport.name,
      }),
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
    handler: (ctx) => listTables(ctx.services.sql, callerOf(ctx), limitsOf(ctx)),
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
    handler: (ctx) => describeTable(ctx.services.sql, callerOf(ctx), ctx.params.table, limitsOf(ctx)),
  }),
];
