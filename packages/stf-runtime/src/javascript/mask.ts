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
 *
 * The guest hands over at most `room()` characters of a line (so a huge line is never copied out of it): the bytes
 * still free plus the longest secret, so that cutting cannot end a line in the middle of a secret that masking
 * would have hidden — a cut line loses its last (longest secret − 1) characters after masking.
 */
export class LogCollector {
  private used = 0;
  private full = false;
  private readonly longestSecret: number;

  constructor(
    private readonly maxBytes: number,
    private readonly mask: (text: string) => string,
    private readonly emit: (line: LogLine) => void,
    secrets: Iterable<string> = [],
  ) {
    this.longestSecret = Math.max(0, ...[...secrets].map((s) => (typeof s === 'string' ? s.length : 0)));
  }

  /** Characters the next line may have (0 once the cap is reached). */
  room(): number {
    return this.full ? 0 : this.maxBytes - this.used + this.longestSecret + 1;
  }

  /**
   * Takes one line; `cut` says the guest cut it to `room()` characters, i.e. the whole line was over the cap.
   * Returns the room of the next line (0 once the cap is reached: the caller may stop formatting lines).
   */
  push(level: LogLine['level'], message: string, cut = false): number {
    if (this.full) return 0;
    let masked = this.mask(message);
    if (cut && this.longestSecret > 1) masked = masked.slice(0, Math.max(0, masked.length - (this.longestSecret - 1)));
    const bytes = Buffer.byteLength(masked);
    if (!cut && this.used + bytes <= this.maxBytes) {
      this.used += bytes;
      this.emit({ level, message: masked });
      return this.room();
    }
    const room = this.maxBytes - this.used;
    if (room > 0) this.emit({ level, message: truncateUtf8(masked, room) });
    this.emit({ level: 'warn', message: `[logs truncated: more than ${this.maxBytes} bytes were logged]` });
    this.full = true;
    return 0;
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
