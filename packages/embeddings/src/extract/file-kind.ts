/** Which extractor reads a file: from its content type, its filename extension, and as a last resort its bytes. */
export type FileKind = 'text' | 'markdown' | 'csv' | 'tsv' | 'json' | 'html' | 'xml' | 'pdf' | 'image' | 'media' | 'unknown';

/** Types that say nothing about the content; the extension decides instead. */
const GENERIC_TYPES = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/unknown',
  'application/x-download',
  'application/force-download',
]);

const BY_TYPE: Record<string, FileKind> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/csv': 'csv',
  'application/csv': 'csv',
  'text/tab-separated-values': 'tsv',
  'application/json': 'json',
  'text/json': 'json',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/xml': 'xml',
  'application/xml': 'xml',
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/javascript': 'text',
  'application/x-yaml': 'text',
  'application/yaml': 'text',
  'application/toml': 'text',
  'application/sql': 'text',
  'application/x-sh': 'text',
};

const BY_EXTENSION: Record<string, FileKind> = {
  txt: 'text', text: 'text', log: 'text', md: 'markdown', markdown: 'markdown', mdx: 'markdown',
  csv: 'csv', tsv: 'tsv', tab: 'tsv', json: 'json', html: 'html', htm: 'html', xhtml: 'html',
  xml: 'xml', pdf: 'pdf', yaml: 'text', yml: 'text', toml: 'text', ini: 'text', sql: 'text', rst: 'text',
  png: 'image', jpg: 'image', jpeg: 'image', gif: 'image', webp: 'image', bmp: 'image', tif: 'image',
  tiff: 'image', svg: 'image', heic: 'image', avif: 'image', ico: 'image',
  mp3: 'media', wav: 'media', ogg: 'media', flac: 'media', m4a: 'media', mp4: 'media', mov: 'media',
  webm: 'media', mkv: 'media', avi: 'media',
};

export function fileKind(contentType: string, filename: string | undefined, bytes: Uint8Array): FileKind {
  const type = mediaType(contentType);
  const byExtension = BY_EXTENSION[extension(filename)];
  if (GENERIC_TYPES.has(type)) return byExtension ?? sniff(bytes);
  const byType = kindOfType(type);
  // text/plain is often sent for CSV or Markdown, and Windows browsers send application/vnd.ms-excel for CSV.
  if (byType === 'text' || byType === 'unknown') {
    if (byExtension && byExtension !== 'image' && byExtension !== 'media') return byExtension;
  }
  return byType;
}

function kindOfType(type: string): FileKind {
  const known = BY_TYPE[type];
  if (known) return known;
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('audio/') || type.startsWith('video/')) return 'media';
  if (type.endsWith('+json')) return 'json';
  if (type.endsWith('+xml')) return 'xml';
  if (type.startsWith('text/')) return 'text';
  return 'unknown';
}

/** `text/HTML; charset=utf-8` → `text/html`. */
export const mediaType = (contentType: string): string => contentType.split(';', 1)[0]!.trim().toLowerCase();

/** The `charset` parameter of a content type, if any. */
export function charsetOf(contentType: string): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return match?.[1]?.toLowerCase();
}

function extension(filename: string | undefined): string {
  const base = (filename ?? '').split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

const startsWith = (bytes: Uint8Array, ...prefix: number[]) => prefix.every((b, i) => bytes[i] === b);

/** For a generic type without a known extension: a few magic numbers, else text if the bytes read as text. */
function sniff(bytes: Uint8Array): FileKind {
  if (startsWith(bytes, 0x25, 0x50, 0x44, 0x46, 0x2d)) return 'pdf'; // %PDF-
  if (
    startsWith(bytes, 0x89, 0x50, 0x4e, 0x47) || // PNG
    startsWith(bytes, 0xff, 0xd8, 0xff) || // JPEG
    startsWith(bytes, 0x47, 0x49, 0x46, 0x38) || // GIF8
    (startsWith(bytes, 0x52, 0x49, 0x46, 0x46) && startsWith(bytes.subarray(8), 0x57, 0x45, 0x42, 0x50)) // RIFF….WEBP
  ) {
    return 'image';
  }
  return looksLikeText(bytes) ? 'text' : 'unknown';
}

/** Valid UTF-8 (or UTF-16 with a BOM) in the first 8 KiB, without control characters other than whitespace. */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (startsWith(bytes, 0xff, 0xfe) || startsWith(bytes, 0xfe, 0xff)) return true;
  let head = bytes.subarray(0, 8192);
  // Do not fail on a multi-byte character cut at the end of the sample.
  let back = 0;
  while (back < 3 && head.length > back && (head[head.length - 1 - back]! & 0xc0) === 0x80) back++;
  if (head.length > back && head[head.length - 1 - back]! >= 0xc0) head = head.subarray(0, head.length - 1 - back);
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(head);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: detecting control characters is the point
    return !/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text);
  } catch {
    return false;
  }
}
