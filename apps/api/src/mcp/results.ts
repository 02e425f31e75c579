import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorBody } from '@wds/errors';

/**
 * Operation results as MCP tool results: JSON as text plus `structuredContent` (an object: a value that is not one
 * is `{ result }`), file bytes as base64 or an image block, and anything larger than the cap cut with a note that
 * says how to get the rest.
 */

const json = (value: unknown) => JSON.stringify(value) ?? 'null';
const bytes = (s: string) => Buffer.byteLength(s);

export function errorResult(body: ErrorBody, meta?: Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: json(body) }], structuredContent: { ...body }, ...(meta ? { _meta: meta } : {}) };
}

/** `text`: the value's JSON, when the caller has it already. */
function jsonResult(value: unknown, meta: Record<string, unknown> | undefined, text = json(value)): CallToolResult {
  const structured = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : { result: value };
  return { content: [{ type: 'text', text }], structuredContent: structured, ...(meta ? { _meta: meta } : {}) };
}

/** The longest prefix of `items` whose JSON fits in `budget` bytes. */
function fitting(items: unknown[], budget: number): number {
  let used = 2;
  for (let i = 0; i < items.length; i++) {
    used += bytes(json(items[i])) + 1;
    if (used > budget) return i;
  }
  return items.length;
}

/** The array a large result holds its bulk in: the value itself, or its largest array field (SQL `rows`, …). */
function bulkOf(value: unknown): { key: string | undefined; items: unknown[] } | undefined {
  if (Array.isArray(value)) return { key: undefined, items: value };
  if (typeof value !== 'object' || value === null) return undefined;
  let best: { key: string; items: unknown[]; size: number } | undefined;
  for (const [key, v] of Object.entries(value)) {
    if (!Array.isArray(v)) continue;
    const size = bytes(json(v));
    if (!best || size > best.size) best = { key, items: v, size };
  }
  return best;
}

/**
 * A JSON result within `cap` bytes of text: a list is cut after the items that fit, with `truncated` saying how many
 * were shown and how to page; a value that cannot be cut so is replaced by a note (never a broken JSON text).
 */
export function capJson(value: unknown, cap: number, howToPage: string, meta?: Record<string, unknown>): CallToolResult {
  const text = json(value);
  if (bytes(text) <= cap) return jsonResult(value, meta, text);
  const tooLarge = {
    truncated: { note: `The result was ${bytes(text)} bytes, larger than the ${cap} bytes a tool result may have. ${howToPage}` },
  };
  const bulk = bulkOf(value);
  if (bulk) {
    const rest = bulk.key === undefined ? 0 : bytes(json({ ...(value as object), [bulk.key]: [] }));
    const shown = fitting(bulk.items, cap - rest - 400);
    const truncated = {
      shown,
      total: bulk.items.length,
      note: `The result was larger than ${cap} bytes: the first ${shown} of ${bulk.items.length} ${bulk.key ?? 'items'} are shown. ${howToPage}`,
    };
    const cut =
      bulk.key === undefined
        ? { items: bulk.items.slice(0, shown), truncated }
        : { ...(value as object), [bulk.key]: bulk.items.slice(0, shown), truncated };
    // The list may not be where the bulk is (a long text beside a short list): then only the note remains.
    const cutText = json(cut);
    if (bytes(cutText) <= cap) return jsonResult(cut, meta, cutText);
  }
  return jsonResult(tooLarge, meta);
}

/** How to get more of a result, by operation: lists page with limit/offset, SQL with LIMIT/OFFSET in the statement. */
export function pagingHint(operation: string, queryArgs: readonly string[]): string {
  if (operation === 'execute_sql') return 'Select fewer rows or columns (LIMIT/OFFSET, a WHERE clause) to see the rest.';
  if (queryArgs.includes('offset')) return 'Call the tool again with `offset` (and `limit`) to page through the rest.';
  return 'Ask for less (a narrower query or filter) to see the rest.';
}

/**
 * A Response an operation answered with itself (file bytes, text, raw JSON) as a tool result. Bytes beyond the cap
 * are not read; the note names the `range` to ask for next.
 */
export async function responseResult(res: Response, cap: number, meta?: Record<string, unknown>): Promise<CallToolResult> {
  if (res.status >= 400) {
    await res.body?.cancel().catch(() => undefined);
    const range = res.headers.get('content-range');
    return errorResult(
      res.status === 416
        ? { error: 'The range is not satisfiable', code: 'VALIDATION_ERROR', details: `range: outside the content (${range ?? 'no content range'})` }
        : { error: 'The operation failed', code: 'BAD_REQUEST', details: `status ${res.status}` },
      meta,
    );
  }
  const type = res.headers.get('content-type') ?? 'application/octet-stream';
  const isText = /^text\/|^application\/(json|xml|javascript|typescript)\b/i.test(type);
  // Bytes that are not text travel as base64, a third larger.
  const { data, complete } = await readUpTo(res, isText ? cap : Math.floor((cap * 3) / 4));
  if (/^application\/json\b/i.test(type) && complete) {
    // A stored file declared JSON may not be: it is then answered as the text it is.
    try {
      return jsonResult(JSON.parse(data.toString('utf8')), meta);
    } catch {}
  }
  // Where these bytes sit in the file: a 206 names the range, a 200 starts at 0.
  const total = Number(/\/(\d+)$/.exec(res.headers.get('content-range') ?? '')?.[1] ?? res.headers.get('content-length') ?? Number.NaN);
  const start = Number(/^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1] ?? 0);
  const end = start + data.length - 1;
  const more = Number.isFinite(total) ? end + 1 < total : !complete;
  const info = {
    content_type: type,
    range: { start, end, ...(Number.isFinite(total) ? { total } : {}) },
    ...(more ? { truncated: { note: `Only bytes ${start}-${end} are shown (a tool result holds at most ${cap} bytes). Call again with range: "bytes=${end + 1}-" for the rest.` } } : {}),
  };
  // content and structuredContent carry the same: a host that reads only one of them (Claude Code and Cursor prefer
  // structuredContent) still gets the bytes and where they sit, and the note on how to read on.
  if (isText) {
    const text = data.toString('utf8');
    return { content: [{ type: 'text', text }, { type: 'text', text: json(info) }], structuredContent: { ...info, text }, ...(meta ? { _meta: meta } : {}) };
  }
  const base64 = data.toString('base64');
  if (/^image\/(png|jpeg|gif|webp)\b/i.test(type) && !more) {
    // An image is for the model to see: an image block, and no structuredContent, which would hold it a second time
    // as base64 text for a host that prefers it (MCP: structuredContent is optional).
    return { content: [{ type: 'image', data: base64, mimeType: type.split(';')[0] as string }, { type: 'text', text: json(info) }], ...(meta ? { _meta: meta } : {}) };
  }
  return {
    content: [{ type: 'text', text: json({ ...info, content_base64: base64 }) }],
    structuredContent: { ...info, content_base64: base64 },
    ...(meta ? { _meta: meta } : {}),
  };
}

/** At most `cap` bytes of a body (base64 and JSON escaping make the text larger: the cap counts raw bytes). */
async function readUpTo(res: Response, cap: number): Promise<{ data: Buffer; complete: boolean }> {
  if (!res.body) return { data: Buffer.alloc(0), complete: true };
  const reader = res.body.getReader();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { data: Buffer.concat(chunks), complete: true };
      const room = cap - size;
      if (value.length > room) {
        chunks.push(Buffer.from(value.subarray(0, room)));
        return { data: Buffer.concat(chunks), complete: false };
      }
      chunks.push(Buffer.from(value));
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
