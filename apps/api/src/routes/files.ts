import { Readable } from 'node:stream';
import * as v from 'valibot';
import {
  contentDisposition,
  type FileView,
  getFile,
  listFiles,
  openFileDownload,
  softDeleteFile,
  storeUpload,
  type Upload,
} from '@wds/storage';
import { receiveJsonUpload, receiveMultipartUpload } from '@wds/uploads';
import { autoEmbedFile, extractFileText, forgetFile } from '@wds/semantic-search';
import { emitWorkflowEvents, fileUploaded } from '@wds/workflows';
import { assertStorageEditor } from '../http/permissions.js';
import { defineRoute, type MemberCtx } from '../http/route.js';
import { File, FileText } from '../http/views/index.js';
import { checkJsonValue, textProblem } from '../http/input.js';
import { PageQuery, intQuery } from '../http/schemas.js';

const base = '/api/v1/workspaces/:id/files';
/** Characters of extracted text per page. */
const TEXT_PAGE = { default: 100_000, max: 1_000_000 };
// docs/http-api.md#where-the-workspace-comes-from: the workspace of /workspaces/{id}/files/* comes from X-Workspace-ID
// (required); the path id is ignored.
const common = { auth: 'user', workspace: 'header', role: 'member' } as const;
/** The headers of a download (OpenAPI). */
const DOWNLOAD_HEADERS = {
  'Content-Disposition': { schema: { type: 'string' }, description: 'attachment, with the file name' },
  'Accept-Ranges': { schema: { const: 'bytes' } },
  ETag: { schema: { type: 'string' }, description: 'The SHA-256 of the file, quoted' },
};

/**
 * Stores an upload (bytes, then record: @wds/storage storeUpload), audited and then embedded when the workspace
 * embeds its files automatically.
 */
async function store(ctx: MemberCtx, receive: Upload['receive']) {
  const { services } = ctx;
  const onStored = async (file: FileView) => {
    ctx.audit({ resourceId: file.id, details: { filename: file.filename, size: file.size, content_type: file.content_type } });
    await autoEmbedFile(services, ctx.access.workspace, file.id);
  };
  return storeUpload(
    {
      db: ctx.db,
      blobs: services.blobs,
      maxBytes: services.config.MAX_FILE_BYTES,
      signal: ctx.transport.signal,
      rules: { textProblem, checkJsonValue },
      // Answer now and drop the connection: the rest of the body is not read.
      onTooLarge: () => ctx.transport.setHeader('Connection', 'close'),
    },
    {
      workspaceId: ctx.access.workspace.id,
      createdBy: ctx.principal.user.id,
      receive,
      // Workflow triggers on uploads: their events are written with the file's record.
      recorded: async (file, tx) => {
        await emitWorkflowEvents(tx, services.config, fileUploaded(file));
      },
      onStored,
    },
  );
}

export const fileRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_files',
    response: v.array(File),
    summary: 'Files of the workspace, newest first (metadata only)',
    query: PageQuery,
    handler: ({ db, access, query }) => listFiles(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'upload_file',
    response: File,
    summary: 'Upload a file as JSON { filename, content_type?, content: base64, metadata? } (storage editors; streamed; 413 above MAX_FILE_BYTES)',
    status: 201,
    transaction: false,
    openapi: {
      requestBody: {
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['filename', 'content'],
              properties: {
                filename: { type: 'string' },
                content_type: { type: 'string', description: 'Media type of the file (default from the filename)' },
                content: { type: 'string', contentEncoding: 'base64', description: 'The bytes of the file, base64' },
                metadata: { type: ['object', 'null'], description: 'Any JSON object kept with the file' },
              },
            },
          },
        },
      },
    },
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      // The body is never buffered: the body limit of other routes does not apply here.
      const source = ctx.transport.bodyStream();
      return store(ctx, (put) => receiveJsonUpload(source, put));
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: `${base}/multipart`,
    operation: 'upload_file',
    response: File,
    summary: 'Upload a file as multipart/form-data: part `file`, optional part `metadata` (JSON) (storage editors; streamed)',
    mcp: { exclude: 'an HTTP encoding of upload_file, which MCP reaches with the JSON form (content as base64)' },
    status: 201,
    transaction: false,
    openapi: {
      // The operation (audit, MCP) is upload_file, like the JSON form's; the document's operationIds are unique.
      operationId: 'upload_file_multipart',
      requestBody: {
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: {
                file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The file (its part\'s filename and content type are kept)' },
                metadata: { type: 'string', contentMediaType: 'application/json', description: 'A JSON object kept with the file' },
              },
            },
            encoding: { metadata: { contentType: 'application/json' } },
          },
        },
      },
    },
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const source = ctx.transport.bodyStream();
      return store(ctx, (put) => receiveMultipartUpload(source, ctx.transport.header('content-type'), put));
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:fileId`,
    operation: 'get_file',
    response: File,
    summary: 'A file (metadata)',
    handler: async ({ db, access, params }) => {
      const { blob_key: _key, ...file } = await getFile(db, access.workspace.id, params.fileId);
      return file;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:fileId/download`,
    operation: 'download_file',
    summary: 'The bytes of a file (streamed; one HTTP Range answered with 206)',
    // MCP: `range` (e.g. `bytes=0-1048575`) pages through a file larger than one result.
    mcp: { headers: { range: v.optional(v.pipe(v.string(), v.maxLength(100))) } },
    openapi: {
      headers: [{ name: 'Range', description: 'One byte range, e.g. `bytes=0-1048575` (answered with 206)', schema: { type: 'string', maxLength: 100 } }],
      responses: {
        '200': { description: 'The whole file, in its own content type', headers: DOWNLOAD_HEADERS, content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
        '206': {
          description: 'The requested range',
          headers: { ...DOWNLOAD_HEADERS, 'Content-Range': { schema: { type: 'string' }, description: '`bytes start-end/size`' } },
          content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
        },
        '416': { description: 'Range not satisfiable (no body)', headers: { 'Content-Range': { schema: { type: 'string' }, description: '`bytes */size`' } } },
      },
    },
    handler: async ({ services, transport, db, access, params }) => {
      const download = await openFileDownload({ db, blobs: services.blobs }, access.workspace.id, params.fileId, transport.header('range'));
      const { file } = download;
      const headers: Record<string, string> = {
        'content-type': file.content_type,
        'content-disposition': contentDisposition(file.filename),
        'accept-ranges': 'bytes',
        etag: `"${file.sha256}"`,
        'x-content-type-options': 'nosniff',
        'cache-control': 'private, no-store',
      };
      if (download.range === 'unsatisfiable') {
        return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${file.size}` } });
      }
      const { range, content } = download;
      const body = Readable.toWeb(Readable.from(content as AsyncIterable<Uint8Array>)) as ReadableStream<Uint8Array>;
      if (range) {
        return new Response(body, {
          status: 206,
          headers: { ...headers, 'content-length': String(range.end - range.start + 1), 'content-range': `bytes ${range.start}-${range.end}/${file.size}` },
        });
      }
      return new Response(body, { status: 200, headers: { ...headers, 'content-length': String(file.size) } });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:fileId/text`,
    operation: 'extract_file_text',
    response: FileText,
    summary: `The text of a file (text, Markdown, CSV/TSV, JSON, HTML, XML, PDF), a page of characters at a time: \`offset\` (default 0) and \`limit\` (default ${TEXT_PAGE.default}, at most ${TEXT_PAGE.max}); 415 for images and other binary files, 413 above EMBEDDING_MAX_FILE_BYTES`,
    query: v.object({ offset: intQuery(0, 0, Number.MAX_SAFE_INTEGER, 'offset'), limit: intQuery(TEXT_PAGE.default, 1, TEXT_PAGE.max, 'limit') }),
    openapi: { errors: [413, 415] },
    handler: ({ services, db, access, params, query }) =>
      extractFileText({ db, blobs: services.blobs, maxExtractBytes: services.config.EMBEDDING_MAX_FILE_BYTES }, access.workspace.id, params.fileId, query),
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: `${base}/:fileId`,
    operation: 'delete_file',
    summary: 'Soft-delete a file (storage editors)',
    status: 204,
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const file = await softDeleteFile(ctx.db, ctx.access.workspace.id, ctx.params.fileId);
      await forgetFile(ctx.db, ctx.access.workspace.id, file.id);
      ctx.audit({ resourceId: file.id, details: { filename: file.filename } });
    },
  }),
];
