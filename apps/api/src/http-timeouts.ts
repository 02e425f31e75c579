/**
 * How long a request may take to arrive. Node's default (`requestTimeout`, 300 s for the whole request, body
 * included) would cut off any upload slower than MAX_FILE_BYTES / 300 s (3.4 MB/s for 1 GiB) with a 408. The limit
 * is derived from the largest upload body instead: MAX_FILE_BYTES in base64 (the JSON form, 4/3 larger than the
 * file) at UPLOAD_MIN_BYTES_PER_SECOND, and never below Node's 300 s. Headers still have to arrive within Node's
 * `headersTimeout` (60 s). The limit is server-wide: Node has one per server, not per route.
 */
import type { Server } from 'node:http';
import type { ServerType } from '@hono/node-server';
import type { Config } from './config.js';

const NODE_DEFAULT_MS = 300_000;

/** max(300 s, the largest upload body (base64 of MAX_FILE_BYTES) at the minimum rate), in milliseconds. */
export function uploadRequestTimeoutMs(config: Pick<Config, 'MAX_FILE_BYTES' | 'UPLOAD_MIN_BYTES_PER_SECOND'>): number {
  const largestBody = Math.ceil(config.MAX_FILE_BYTES / 3) * 4;
  return Math.max(NODE_DEFAULT_MS, Math.ceil(largestBody / config.UPLOAD_MIN_BYTES_PER_SECOND) * 1000);
}

/** Sets the server's request timeout to `uploadRequestTimeoutMs` (an HTTP/1 server; HTTP/2 ones have no such limit). */
export function applyUploadTimeouts(server: ServerType, config: Pick<Config, 'MAX_FILE_BYTES' | 'UPLOAD_MIN_BYTES_PER_SECOND'>): void {
  if (!('requestTimeout' in server)) return;
  (server as Server).requestTimeout = uploadRequestTimeoutMs(config);
}
