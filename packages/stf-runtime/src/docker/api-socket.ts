/**
 * The per-run API a docker STF reaches through a Unix socket mounted into its container (it has no network):
 *
 *   POST /sql   Authorization: Bearer <api_token>   {"query": "SELECT …"}
 *     200 {"rows": [...]} for a SELECT, {"affected_rows": n} otherwise
 *     400 {"error": "<message>"} when the statement fails (policy denial, syntax, DDL, …)
 *
 * The token is random per run and only this run's server knows it; the server runs every statement through the
 * run's `sql` callback — the workspace, the policy subject and the run's one transaction are bound there, so the
 * token allows SQL as this STF in this workspace and nothing else. Statements run one at a time, in arrival order.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import http from 'node:http';
import type { SqlCallResult } from '../types.js';

const MAX_BODY_BYTES = 1024 * 1024;

export interface ApiSocket {
  token: string;
  /** Statements served so far. */
  calls(): number;
  close(): Promise<void>;
}

export async function openApiSocket(
  socketPath: string,
  sql: ((query: string) => Promise<SqlCallResult>) | undefined,
): Promise<ApiSocket> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  let chain: Promise<unknown> = Promise.resolve();
  let served = 0;
  let closed = false;

  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const auth = Buffer.from(req.headers.authorization ?? '');
    if (auth.length !== expected.length || !timingSafeEqual(auth, expected)) {
      req.resume();
      return send(401, { error: 'missing or wrong api_token' });
    }
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/sql') {
      req.resume();
      return send(404, { error: 'only POST /sql is served here' });
    }
    if (req.method !== 'POST') {
      req.resume();
      return send(405, { error: 'use POST' });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        send(413, { error: `the request body is larger than ${MAX_BODY_BYTES} bytes` });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (res.writableEnded) return;
      let query: unknown;
      try {
        query = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { query?: unknown }).query;
      } catch {
        return send(400, { error: 'the body must be JSON: {"query": "<sql>"}' });
      }
      if (typeof query !== 'string' || !query.trim()) return send(400, { error: 'query must be a non-empty string' });
      if (!sql) return send(400, { error: 'sql() is not available in this run' });
      const run = chain.then(async () => {
        if (closed) return send(503, { error: 'the run has ended' });
        try {
          const result = await sql(query);
          served++;
          send(200, typeof result === 'number' ? { affected_rows: result } : { rows: result });
        } catch (err) {
          send(400, { error: err instanceof Error ? err.message : String(err) });
        }
      });
      chain = run;
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // The container runs as an unprivileged user; the token, not the file mode, is what guards the socket.
  await chmod(socketPath, 0o666);

  return {
    token,
    calls: () => served,
    close: async () => {
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await chain.catch(() => undefined);
    },
  };
}
