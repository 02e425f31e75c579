import {
  columnStatus,
  embedFiles,
  embeddingDeps,
  embedTables,
  fileStatus,
  generateColumn,
  searchColumn,
  searchFiles,
  searchTables,
  tableStatus,
} from '@wds/semantic-search';
import {
  ColumnEmbeddingStatus,
  ColumnEmbeddingsGenerated,
  ColumnSearchResult,
  FileEmbeddingStatus,
  FileEmbeddingsQueued,
  FileSearchResult,
  TableEmbeddingStatus,
  TableSearchResult,
} from '../http/views/index.js';
import * as v from 'valibot';
import { assertDdlAllowed, assertStorageEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { sqlCallerOf } from '../http/sql-caller.js';
import { Uuid } from '../http/schemas.js';

/** Embeddings and semantic search (docs/embeddings.md#the-three-surfaces): path-scoped, X-Workspace-ID optional. */
const base = '/api/v1/workspaces/:id/embeddings';
const member = { auth: 'user', workspace: 'path', role: 'member' } as const;

const Name = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(63));
const Query = v.pipe(v.string('must be a string'), v.trim(), v.nonEmpty('must not be empty'), v.maxLength(10_000));
const Limit = v.optional(v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1), v.maxValue(100)), 10);
const FileIds = v.pipe(v.array(Uuid, 'must be an array of file ids'), v.minLength(1, 'at least one file id'), v.maxLength(50, 'at most 50 file ids'));
const TableNames = v.pipe(v.array(Name, 'must be an array of table names'), v.minLength(1, 'at least one table name'), v.maxLength(100));

/** files/embed and files/regenerate: the same request; regenerate also redoes files already embedded. */
const embedFilesRoute = (action: string, operation: 'embed_files' | 'regenerate_file_embeddings', summary: string, force: boolean) =>
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/files/${action}`,
    operation,
    response: FileEmbeddingsQueued,
    summary,
    body: v.object({ file_ids: FileIds }),
    status: 202,
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      ctx.audit({ details: { file_ids: ctx.body.file_ids } });
      return embedFiles(embeddingDeps(ctx.services), ctx.access.workspace.id, ctx.body.file_ids, force);
    },
  });

export const embeddingRoutes = [
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/generate`,
    operation: 'generate_column_embeddings',
    response: ColumnEmbeddingsGenerated,
    summary: 'Embed a text column: adds <column>_embedding the first time, then embeds rows without a vector or with changed text (DDL)',
    body: v.object({ table_name: Name, column_name: Name }),
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertDdlAllowed(ctx);
      // An MCP caller that asked for progress hears of each batch written.
      const r = await generateColumn(embeddingDeps(ctx.services), ctx.access.workspace.id, ctx.body.table_name, ctx.body.column_name, (n) =>
        ctx.transport.progress?.(n, undefined, `${n} rows embedded`),
      );
      ctx.audit({ resourceId: `${ctx.body.table_name}.${ctx.body.column_name}`, details: { generated_count: r.generated_count, column_added: r.column_added } });
      return r;
    },
  }),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/status`,
    operation: 'get_column_embedding_status',
    response: ColumnEmbeddingStatus,
    summary: 'Embedded, pending and total rows of each embedded column of a table',
    query: v.object({ table_name: Name }),
    handler: (ctx) => columnStatus(embeddingDeps(ctx.services), sqlCallerOf(ctx), ctx.query.table_name),
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/similarity-search`,
    operation: 'search_column_embeddings',
    response: ColumnSearchResult,
    summary: 'Rows most similar to a query by an embedded column, with scores; only rows the caller may read',
    body: v.object({ table_name: Name, column_name: Name, query: Query, limit: Limit }),
    handler: (ctx) =>
      searchColumn(embeddingDeps(ctx.services), sqlCallerOf(ctx), ctx.body.table_name, ctx.body.column_name, ctx.body.query, ctx.body.limit),
  }),
  embedFilesRoute('embed', 'embed_files', 'Queue files for embedding (1–50 ids; storage editors); poll files/status', false),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/files/status`,
    operation: 'get_file_embedding_status',
    response: FileEmbeddingStatus,
    summary: 'Embedding state of every file: pending, processing, completed, failed or skipped',
    handler: (ctx) => fileStatus(embeddingDeps(ctx.services), ctx.access.workspace.id),
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/files/search`,
    operation: 'search_files',
    response: FileSearchResult,
    summary: 'Files whose text is most similar to a query, with the best-matching passage and its score',
    body: v.object({ query: Query, limit: Limit }),
    handler: (ctx) => searchFiles(embeddingDeps(ctx.services), ctx.access.workspace.id, ctx.body.query, ctx.body.limit),
  }),
  embedFilesRoute('regenerate', 'regenerate_file_embeddings', 'Embed files again, whatever their state (1–50 ids; storage editors)', true),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/tables/embed`,
    operation: 'embed_tables',
    response: TableEmbeddingStatus,
    summary: 'Queue every row of the tables for embedding (DDL); poll tables/status',
    body: v.object({ table_names: TableNames }),
    status: 202,
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertDdlAllowed(ctx);
      ctx.audit({ resourceId: ctx.body.table_names.join(','), details: { table_names: ctx.body.table_names } });
      return embedTables(embeddingDeps(ctx.services), ctx.access.workspace.id, ctx.body.table_names, false);
    },
  }),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/tables/status`,
    operation: 'get_table_embedding_status',
    response: TableEmbeddingStatus,
    summary: 'Per table: total live rows, embedded rows, pending rows, failed rows',
    handler: (ctx) => tableStatus(embeddingDeps(ctx.services), sqlCallerOf(ctx)),
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/tables/search`,
    operation: 'search_tables',
    response: TableSearchResult,
    summary: 'Rows of any embedded table most similar to a query, with scores; only rows the caller may read',
    body: v.object({ query: Query, limit: Limit, table_names: v.optional(TableNames) }),
    handler: (ctx) => searchTables(embeddingDeps(ctx.services), sqlCallerOf(ctx), ctx.body.query, ctx.body.limit, ctx.body.table_names),
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/tables/regenerate`,
    operation: 'regenerate_table_embeddings',
    response: TableEmbeddingStatus,
    summary: 'Embed every row again: the given tables, or every embedded table of the workspace (DDL)',
    body: v.object({ table_names: v.optional(TableNames) }),
    status: 202,
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertDdlAllowed(ctx);
      const deps = embeddingDeps(ctx.services);
      const names = ctx.body.table_names ?? (await tableStatus(deps, sqlCallerOf(ctx))).tables.map((t) => t.table_name);
      ctx.audit({ resourceId: names.join(',') || null, details: { table_names: names } });
      if (names.length === 0) return { tables: [] };
      return embedTables(deps, ctx.access.workspace.id, names, true);
    },
  }),
];
