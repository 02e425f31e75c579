import type { LogLine } from '../types.js';

/**
 * Returns a function that replaces every secret value in a text by `***`. Longer values are masked first (so a
 * secret that contains another one is not half-masked); empty values are ignored.
 */
export function createMasker(secrets: Iterable<string>): (text: string) => string {
  const values = [...new Set([...secrets].filter((s) => typeof s === 'string' && s.length > 0))].sort(
    (a, b) => b.length - a.length,
  );
  if (values.length === 0) return (text) => text;
  const pattern = new RegExp(values.map(escapeRegExp).join('|'), 'g');
  return (text) => text.replace(pattern, '***');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Collects log lines up to `maxBytes` (UTF-8 bytes of the masked messages). The line that crosses the cap is cut,
 * then one line says the logs were truncated, and later lines are dropped.
 */
export class LogCollector {
  private used = 0;
  private full = false;

  constructor(
    private readonly maxBytes: number,
    private readonly mask: (text: string) => string,
    private readonly emit: (line: LogLine) => void,
  ) {}

  /** Returns false once the cap is reached (the caller may stop formatting lines). */
  push(level: LogLine['level'], message: string): boolean {
    if (this.full) return false;
    const masked = this.mask(message);
    const bytes = Buffer.byteLength(masked);
    if (this.used + bytes <= this.maxBytes) {
      this.used += bytes;
      this.emit({ level, message: masked });
      return true;
    }
    const room = this.maxBytes - this.used;
    if (room > 0) this.emit({ level, message: truncateUtf8(masked, room) });
    this.emit({ level: 'warn', message: `[logs truncated: more than ${this.maxBytes} bytes were logged]` });
    this.full = true;
    return false;
  }
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text);
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over UTF-8 continuation bytes so no character is cut in half.
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}
