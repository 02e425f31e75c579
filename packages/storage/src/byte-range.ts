/** HTTP byte ranges (RFC 9110 §14): the one form of `Range` a file download answers. */
import type { ByteRange } from './blob-store.js';

/**
 * Parses `Range: bytes=a-b`, `bytes=a-` or `bytes=-n` (one range) against a file of `size` bytes: the inclusive
 * range to send, clipped to the file; undefined for no header or a form not served (the whole file is sent);
 * 'unsatisfiable' when it starts past the end (a 416).
 */
export function parseByteRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
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
