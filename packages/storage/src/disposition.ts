/**
 * Filenames at the edges: `checkFilename` refuses bad upload names, `contentDisposition` makes the download header
 * from any stored name (it never trusts that the name was checked). RFC 6266 with an RFC 8187 `filename*`.
 */

const MAX_FILENAME_CHARS = 255;
// Cc: C0 and C1 controls and DEL.
const CONTROL = /\p{Cc}/u;
const CONTROL_ALL = /\p{Cc}/gu;
// Bidirectional overrides and isolates: they make `evil\u202Efdp.exe` display as `evilexe.pdf`.
const BIDI_ALL = /[\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Validates an upload filename: 1..255 chars, no control characters, no path separators, not `.` or `..` (returns the problem). */
export function checkFilename(name: string): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must not be empty';
  if ([...name].length > MAX_FILENAME_CHARS) return `must be at most ${MAX_FILENAME_CHARS} characters`;
  if (CONTROL.test(name)) return 'must not contain control characters';
  if (name.includes('/') || name.includes('\\')) return 'must not contain path separators (/ or \\)';
  if (name === '.' || name === '..') return 'must not be . or ..';
  return undefined;
}

/**
 * A filename safe for Content-Disposition: `attachment; filename="<ascii fallback>"; filename*=UTF-8''<percent-encoded>`
 * with quotes, backslashes, control chars, path separators (and bidi overrides) stripped. The fallback keeps
 * printable ASCII, drops accents (é → e) and turns other characters into `_`. An empty result becomes `download`.
 */
export function contentDisposition(filename: string): string {
  let name = String(filename)
    .replace(LONE_SURROGATE, '\uFFFD')
    .replace(CONTROL_ALL, '')
    .replace(BIDI_ALL, '')
    .replace(/["\\/]/g, '')
    .trim();
  if (name === '' || name === '.' || name === '..') name = 'download';
  const fallback = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/gu, '_')
    .replace(/["\\]/g, '');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}

/** Percent-encodes everything outside RFC 8187's attr-char. */
function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(/[*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
