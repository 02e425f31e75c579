import type { Db } from '@wds/db';
import { extractText } from '@wds/embeddings';
import { notFound, ServiceError } from '@wds/errors';
import type { BlobStore } from '@wds/storage';
import { readAll } from './files.js';

export interface FileTextDeps {
  db: Db;
  blobs: Pick<BlobStore, 'get'>;
  /** Larger files are refused (the same limit as the extraction for embeddings). */
  maxExtractBytes: number;
}

export interface FileText {
  file_id: string;
  filename: string;
  content_type: string;
  /** Characters `offset` to `offset + limit` of the whole text. */
  text: string;
  offset: number;
  total_chars: number;
  /** Where the next page starts; null at the end. */
  next_offset: number | null;
}

/**
 * The text of a stored file, as the embeddings read it (plain text, Markdown, CSV/TSV, JSON, HTML, XML, PDF), one page
 * of characters at a time. Images, audio, video and other binary formats are 415 UNSUPPORTED_MEDIA_TYPE (there is no
 * OCR); a file above the extraction limit is 413.
 */
export async function extractFileText(
  deps: FileTextDeps,
  workspaceId: string,
  fileId: string,
  pageOf: { offset: number; limit: number },
): Promise<FileText> {
  const file = await deps.db
    .selectFrom('platform.files')
    .select(['id', 'filename', 'content_type', 'size', 'blob_key'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', fileId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!file) throw notFound('File');
  if (Number(file.size) > deps.maxExtractBytes) {
    throw new ServiceError('PAYLOAD_TOO_LARGE', 'The file is too large to extract its text', `at most ${deps.maxExtractBytes} bytes (EMBEDDING_MAX_FILE_BYTES)`);
  }
  await extractions.acquire();
  try {
    const stream = await deps.blobs.get(file.blob_key).catch((err: { code?: string }) => {
      if (err?.code === 'ENOENT') throw notFound('File content');
      throw err;
    });
    const extracted = await extractText(await readAll(stream as AsyncIterable<Uint8Array>, deps.maxExtractBytes), file.content_type, file.filename);
    if ('skipped' in extracted) throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', 'No text can be extracted from this file', extracted.skipped);
    const page = codePoints(extracted.text, pageOf.offset, pageOf.limit);
    return {
      file_id: file.id,
      filename: file.filename,
      content_type: file.content_type,
      text: page.text,
      offset: pageOf.offset,
      total_chars: page.total,
      next_offset: page.end < page.total ? page.end : null,
    };
  } finally {
    extractions.release();
  }
}

/** Characters `offset` to `offset + limit` of a text, counted in code points (a page never splits a surrogate pair). */
export function codePoints(text: string, offset: number, limit: number): { text: string; total: number; end: number } {
  let from = -1;
  let to = -1;
  let n = 0;
  for (let i = 0; i < text.length; n++) {
    if (n === offset) from = i;
    if (n === offset + limit) to = i;
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  const start = from === -1 ? text.length : from;
  return { text: text.slice(start, to === -1 ? text.length : to), total: n, end: Math.min(n, offset + limit) };
}

/**
 * Extraction holds a whole file and its text in memory (up to EMBEDDING_MAX_FILE_BYTES and more): a process does a
 * few at a time and lets a few more wait; past that a request is 429, so no burst of calls can exhaust its memory.
 */
class Extractions {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(
    private readonly max: number,
    private readonly queue: number,
  ) {}

  async acquire(): Promise<void> {
    if (this.running < this.max) {
      this.running++;
      return;
    }
    if (this.waiting.length >= this.queue) {
      throw new ServiceError('TOO_MANY_REQUESTS', 'Too many text extractions at once', `at most ${this.max} run and ${this.queue} wait in one process; retry shortly`);
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

const extractions = new Extractions(2, 8);
