import { Readable } from 'node:stream';
import * as v from 'valibot';
import { newId } from '@wds/db';
import { notFound, ServiceError, validationError } from '@wds/errors';
import {
  BlobTooLargeError,
  checkFilename,
  contentDisposition,
  getFile,
  insertFile,
  listFiles,
  type PutResult,
  softDeleteFile,
} from '@wds/storage';
import { parseJsonUpload, parseMultipartUpload, UploadError } from '@wds/uploads';
import { forgetFile } from '@wds/semantic-search';
import { autoEmbedFile } from '../embedding-work.js';
import { assertStorageEditor } from '../http/permissions.js';
import { defineRoute, type HandlerCtx } from '../http/route.js';
import { checkJsonValue, textProblem } from '../http/input.js';
import { PageQuery } from '../http/schemas.js';

const base = '/api/v1/workspaces/:id/files';
// Spec §4.1: the workspace of /workspaces/{id}/files/* comes from X-Workspace-ID (required); the path id is ignored.
const common = { auth: 'user', workspace: 'header', role: 'member' } as const;
// Quoted parameter values are printable ASCII: no controls (NUL included), nothing PostgreSQL text refuses.
const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-z0-9_.-]+=("[\x20\x21\x23-\x7e]*"|[a-z0-9_.+-]+))*$/i;
const MAX_METADATA_BYTES = 64 * 1024;

function checkFields(fields: { filename: unknown; content_type: unknown; metadata: unknown }): {
  filename: string;
  contentType: string;
  metadata: Record<string, unknown>;
} {
  const problems: string[] = [];
  const { filename, content_type, metadata } = fields;
  if (typeof filename !== 'string') problems.push('filename: required, a string');
  else {
    const bad = checkFilename(filename) ?? textProblem(filename);
    if (bad) problems.push(`filename: ${bad}`);
  }
  if (content_type !== undefined && content_type !== null && (typeof content_type !== 'string' || !CONTENT_TYPE.test(content_type))) {
    problems.push('content_type: must be a media type such as application/pdf');
  }
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata)) problems.push('metadata: must be a JSON object');
    else {
      // Storable text and bounded depth first: measuring the size serializes it.
      checkJsonValue(metadata, 'metadata');
      if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) problems.push(`metadata: larger than ${MAX_METADATA_BYTES} bytes`);
    }
  }
  if (problems.length) throw validationError(problems.join('; '));
  return {
    filename: filename as string,
    contentType: typeof content_type === 'string' ? content_type : 'application/octet-stream',
    metadata: (metadata as Record<string, unknown> | null | undefined) ?? {},
  };
}

/**
 * Stores the bytes, then the record. A refusal after the bytes were written (bad fields) removes them; an upload
 * over the limit or a client gone mid-way leaves nothing (the blob store removes what it wrote).
 */
async function store(
  ctx: HandlerCtx<unknown, unknown>,
  receive: (put: (source: AsyncIterable<Uint8Array>) => Promise<PutResult>) => Promise<{ blob: PutResult; fields: { filename: unknown; content_type: unknown; metadata: unknown } }>,
) {
  const { services } = ctx;
  const max = services.config.MAX_FILE_BYTES;
  const signal = ctx.transport.signal;
  let written: PutResult | undefined;
  try {
    const { blob, fields } = await receive(async (source) => {
      written = await services.blobs.put(source, { maxBytes: max, signal });
      return written;
    });
    const checked = checkFields(fields);
    const file = await insertFile(ctx.db, {
      id: newId(),
      workspaceId: ctx.access.workspace.id,
      filename: checked.filename,
      contentType: checked.contentType,
      size: blob.size,
      sha256: blob.sha256,
      blobKey: blob.key,
      metadata: checked.metadata,
      createdBy: ctx.principal.user.id,
    });
    ctx.audit({ resourceId: file.id, details: { filename: file.filename, size: file.size, content_type: file.content_type } });
    await autoEmbedFile(services, ctx.access.workspace, file.id);
    return file;
  } catch (err) {
    if (written) await services.blobs.delete(written.key).catch(() => undefined);
    if (err instanceof BlobTooLargeError) {
      // Answer now and drop the connection: the rest of the body is not read.
      ctx.transport.setHeader('Connection', 'close');
      throw new ServiceError('PAYLOAD_TOO_LARGE', 'The file is larger than the limit', `at most ${max} bytes`);
    }
    if (err instanceof UploadError) throw validationError(err.message);
    throw err;
  }
}

/** Parses `Range: bytes=a-b` (one range); undefined for none or a form we do not serve, 'unsatisfiable' past the end. */
function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

export const fileRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_files',
    summary: 'Files of the workspace, newest first (metadata only)',
    query: PageQuery,
    handler: ({ db, access, query }) => listFiles(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'upload_file',
    summary: 'Upload a file as JSON { filename, content_type?, content: base64, metadata? } (storage editors; streamed; 413 above MAX_FILE_BYTES)',
    status: 201,
    transaction: false,
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      // The body is never buffered: the body limit of other routes does not apply here.
      const source = ctx.transport.bodyStream();
      return store(ctx, async (put) => {
        const { content, done } = parseJsonUpload(source);
        const blob = await put(content);
        const { fields, sawContent } = await done;
        if (!sawContent) throw new UploadError('content: required, the file as a base64 string');
        return { blob, fields: { filename: fields.filename, content_type: fields.content_type, metadata: fields.metadata } };
      });
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: `${base}/multipart`,
    operation: 'upload_file',
    summary: 'Upload a file as multipart/form-data: part `file`, optional part `metadata` (JSON) (storage editors; streamed)',
    mcp: { exclude: 'an HTTP encoding of upload_file, which MCP reaches with the JSON form (content as base64)' },
    status: 201,
    transaction: false,
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const source = ctx.transport.bodyStream();
      return store(ctx, async (put) => {
        const { fields, file } = await parseMultipartUpload(source, { 'content-type': ctx.transport.header('content-type') }, async (f) => {
          // A form that ends mid-part destroys the part's stream with an error, possibly before the blob store
          // reads from it: listened to here, it is the upload's 400 (busboy reports it too), not a stray exception.
          f.stream.on('error', () => undefined);
          return { blob: await put(f.stream), filename: f.filename, contentType: f.contentType };
        });
        let metadata: unknown;
        if (fields.metadata !== undefined) {
          try {
            metadata = JSON.parse(fields.metadata);
          } catch {
            throw new UploadError('metadata: not valid JSON');
          }
        }
        return { blob: file.blob, fields: { filename: file.filename || undefined, content_type: file.contentType, metadata } };
      });
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:fileId`,
    operation: 'get_file',
    summary: 'A file (metadata)',
    handler: async ({ db, access, params }) => {
      const { blob_key: _key, ...file } = await getFile(db, access.workspace.id, params.fileId ?? '');
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
    handler: async ({ services, transport, db, access, params }) => {
      const file = await getFile(db, access.workspace.id, params.fileId ?? '');
      const range = byteRange(transport.header('range'), file.size);
      const headers: Record<string, string> = {
        'content-type': file.content_type,
        'content-disposition': contentDisposition(file.filename),
        'accept-ranges': 'bytes',
        etag: `"${file.sha256}"`,
        'x-content-type-options': 'nosniff',
        'cache-control': 'private, no-store',
      };
      if (range === 'unsatisfiable') {
        return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${file.size}` } });
      }
      const stream = await services.blobs.get(file.blob_key, range).catch((err: { code?: string }) => {
        if (err?.code === 'ENOENT') throw notFound('File content');
        throw err;
      });
      const body = Readable.toWeb(Readable.from(stream as AsyncIterable<Uint8Array>)) as ReadableStream<Uint8Array>;
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
    method: 'delete',
    path: `${base}/:fileId`,
    operation: 'delete_file',
    summary: 'Soft-delete a file (storage editors)',
    status: 204,
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const file = await softDeleteFile(ctx.db, ctx.access.workspace.id, ctx.params.fileId ?? '');
      await forgetFile(ctx.db, ctx.access.workspace.id, file.id);
      ctx.audit({ resourceId: file.id, details: { filename: file.filename } });
    },
  }),
];
