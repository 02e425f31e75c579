import { MAX_SQL_BYTES } from '@wds/sql-rewriter';
import * as v from 'valibot';
import { autoEmbedRows } from '@wds/semantic-search';
import { defineRoute } from '../http/route.js';
import { SqlPreview, SqlResult } from '../http/views/index.js';
import { sqlCallerOf as callerOf } from '../http/sql-caller.js';

// Characters here; the parser's own limit counts UTF-8 bytes (MAX_SQL_BYTES) and holds for every entry point.
const Sql = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(MAX_SQL_BYTES));

export const sqlRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql',
    operation: 'execute_sql',
    response: SqlResult,
    summary: 'Run one SQL statement on the workspace tables, with policy and DDL checks',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql }),
    transaction: false,
    auditsItself: true,
    // Only DDL changes what is cached about the workspace; WorkspaceSql publishes that itself.
    invalidates: 'none',
    // Over MCP the statement's timeout is the call's time left: PostgreSQL cancels and rolls it back (audit included).
    mcp: { selfBounded: true },
    handler: async (ctx) => {
      const { config } = ctx.services;
      // An MCP call's statement ends with the call's time (mcp_timeout_ms): it never runs on after the answer.
      const left = ctx.transport.remainingMs();
      const statementTimeoutMs = left === undefined ? config.SQL_STATEMENT_TIMEOUT_MS : Math.min(config.SQL_STATEMENT_TIMEOUT_MS, left);
      const r = await ctx.services.sql.execute(
        callerOf(ctx),
        ctx.body.sql,
        { statementTimeoutMs, maxRows: config.SQL_MAX_ROWS },
        { userId: ctx.principal.user.id, apiKeyId: ctx.principal.apiKeyId, requestId: ctx.requestId, transport: ctx.transport.name },
      );
      if (r.kind !== 'select' && r.kind !== 'ddl') await autoEmbedRows(ctx.services, ctx.access.workspace, r.tables);
      if (r.kind === 'select' && r.affected_rows === undefined) return { rows: r.rows ?? [], executed_sql: r.executed_sql };
      return {
        affected_rows: r.affected_rows ?? 0,
        executed_sql: r.executed_sql,
        ...(r.rows ? { rows: r.rows } : {}),
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/:id/sql/preview',
    operation: 'preview_sql',
    response: SqlPreview,
    summary: 'The rewritten SQL without running it; policies are not evaluated unless with_policies is true',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    body: v.object({ sql: Sql, with_policies: v.optional(v.boolean()) }),
    handler: (ctx) => ctx.services.sql.preview(callerOf(ctx), ctx.body.sql, ctx.body.with_policies ?? false),
  }),
];
