import { createMasker, truncateUtf8 } from '../javascript/mask.js';
import type { LogLine } from '../types.js';

export { createMasker };

/**
 * Log capture for wasm runs: secret values are replaced by `***`, and the total is capped at `maxLogBytes`.
 * (The masking rules are the JavaScript runtime's; the collector keeps lines instead of streaming them.)
 */

/** Collects masked lines up to `maxBytes`; the line crossing the cap is cut and one truncation line is added. */
export class LogCollector {
  readonly lines: LogLine[] = [];
  private used = 0;
  private full = false;
  private closed = false;

  constructor(
    private readonly maxBytes: number,
    private readonly mask: (text: string) => string,
  ) {}

  push(level: LogLine['level'], message: string): void {
    if (this.full || this.closed) return;
    const masked = this.mask(message);
    const bytes = Buffer.byteLength(masked);
    if (this.used + bytes <= this.maxBytes) {
      this.used += bytes;
      this.lines.push({ level, message: masked });
      return;
    }
    const room = this.maxBytes - this.used;
    if (room > 0) this.lines.push({ level, message: truncateUtf8(masked, room) });
    this.lines.push({ level: 'warn', message: `[logs truncated: more than ${this.maxBytes} bytes were logged]` });
    this.full = true;
  }

  /** Later lines (e.g. from a plugin being torn down) are ignored. */
  close(): LogLine[] {
    this.closed = true;
    return this.lines;
  }
}
