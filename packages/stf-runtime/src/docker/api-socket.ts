/**
 * The per-run API of a docker STF: an HTTP server on a Unix socket of the run's own directory. The container reaches
 * it through the socket, mounted at /stf (it has no network), or over TCP on its own loopback, where the run's relay
 * container forwards every connection byte for byte to this socket (relay.ts). Two forms, one server:
 *
 *   POST /sql                                  Authorization: Bearer <api_token>   {"query": "SELECT …"}
 *     200 {"rows": [...]} for a SELECT, {"affected_rows": n} otherwise
 *     400 {"error": "<message>"} when the statement fails (policy denial, syntax, DDL, …)
 *
 *   POST /api/v1/workspaces/<workspace_id>/sql  (the origin platform's callback)
 *        Authorization: Bearer <api_token>, X-Workspace-ID, X-STF-ID   {"sql": "SELECT …"}
 *        (the origin's X-Internal-Bypass: true is accepted and ignored: the token alone decides)
 *     200 {"rows": [...]} / {"affected_rows": n}; errors are the SQL endpoint's envelope {"error", "code", "details"?}
 *     with its status (403 POLICY_DENIED, 403 DDL_FORBIDDEN, 400 PARSE_ERROR, 400 EXECUTION_ERROR, …)
 *
 * The token is random per run and only this run's server knows it (401 otherwise). The path's workspace must be the
 * run's own, and X-Workspace-ID / X-STF-ID, when sent, the run's workspace and STF (403 otherwise); any other path or
 * method is 403. The server runs every statement through the run's `sql` callback — the workspace, the policy
 * subject and the run's one transaction are bound there — so the token allows SQL as this STF in this workspace
 * during this run and nothing else. Statements run one at a time, in arrival order.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import http from 'node:http';
import type { SqlCallResult } from '../types.js';

const MAX_BODY_BYTES = 1024 * 1024;
/** Connections one run may hold open at once, socket and relay together. */
export const MAX_CONNECTIONS = 64;
const ORIGIN_PATH = /^\/api\/v1\/workspaces\/([^/]+)\/sql$/;

export interface ApiSocket {
  token: string;
  /** Statements served so far. */
  calls(): number;
  close(): Promise<void>;
}

/** Whom the run belongs to: the origin form's path and headers must name this workspace and STF. */
export interface ApiSocketRun {
  workspaceId?: string | null;
  stfId?: string | null;
}

/** The error body of the service's SQL endpoint: `{ error, code, details? }`. */
interface Envelope {
  error: string;
  code: string;
  details?: string;
}

const CODE = /^[A-Z][A-Z_]{1,63}$/;

/**
 * What a rejected `sql` callback becomes in the origin form: a ServiceError keeps its code, status and details (the
 * answer the service's own SQL endpoint gives); any other Error is an EXECUTION_ERROR with its message.
 */
function envelopeOf(err: unknown): { status: number; body: Envelope } {
  const e = err as { message?: unknown; code?: unknown; status?: unknown; details?: unknown } | null;
  const message = e && typeof e.message === 'string' ? e.message : String(err);
  const code = e && typeof e.code === 'string' && CODE.test(e.code) ? e.code : undefined;
  const status = e && typeof e.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : undefined;
  const details = e && typeof e.details === 'string' ? e.details : undefined;
  if (!code) return { status: 400, body: { error: message, code: 'EXECUTION_ERROR' } };
  return { status: status ?? 400, body: { error: message, code, ...(details !== undefined ? { details } : {}) } };
}

export async function openApiSocket(
  socketPath: string,
  sql: ((query: string) => Promise<SqlCallResult>) | undefined,
  run: ApiSocketRun = {},
): Promise<ApiSocket> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  let chain: Promise<unknown> = Promise.resolve();
  let served = 0;
  let closed = false;

  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      if (res.headersSent) return;
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const path = (req.url ?? '').split('?')[0] ?? '';
    // Our own form answers {error}; everything else, the origin form included, the service's envelope.
    const legacy = path === '/sql';
    const refuse = (status: number, code: string, error: string) => {
      req.resume();
      send(status, legacy ? { error } : { error, code });
    };

    const auth = Buffer.from(req.headers.authorization ?? '');
    if (auth.length !== expected.length || !timingSafeEqual(auth, expected)) {
      return refuse(401, 'UNAUTHORIZED', 'missing or wrong api_token');
    }
    const origin = ORIGIN_PATH.exec(path);
    if (!legacy && !origin) {
      return refuse(403, 'FORBIDDEN', `only POST /sql and POST /api/v1/workspaces/<this run's workspace_id>/sql are served here`);
    }
    if (req.method !== 'POST') return refuse(403, 'FORBIDDEN', 'use POST');
    if (origin) {
      let pathWorkspace: string;
      try {
        pathWorkspace = decodeURIComponent(origin[1] ?? '');
      } catch {
        pathWorkspace = '';
      }
      if (!run.workspaceId || pathWorkspace !== run.workspaceId) {
        return refuse(403, 'FORBIDDEN', "the path's workspace is not this run's workspace_id");
      }
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v.join(',') : v;
      };
      const wsHeader = header('x-workspace-id');
      if (wsHeader !== undefined && wsHeader !== run.workspaceId) {
        return refuse(403, 'FORBIDDEN', "X-Workspace-ID is not this run's workspace_id");
      }
      const stfHeader = header('x-stf-id');
      if (stfHeader !== undefined && stfHeader !== (run.stfId ?? '')) return refuse(403, 'FORBIDDEN', "X-STF-ID is not this run's stf_id");
    }

    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        const error = `the request body is larger than ${MAX_BODY_BYTES} bytes`;
        send(413, legacy ? { error } : { error, code: 'PAYLOAD_TOO_LARGE' });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (res.writableEnded) return;
      const field = legacy ? 'query' : 'sql';
      let statement: unknown;
      try {
        statement = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> | null)?.[field];
      } catch {
        if (legacy) return send(400, { error: 'the body must be JSON: {"query": "<sql>"}' });
        return send(400, { error: 'Invalid request', code: 'VALIDATION_ERROR', details: 'body: must be JSON {"sql": "<statement>"}' });
      }
      if (typeof statement !== 'string' || !statement.trim()) {
        if (legacy) return send(400, { error: 'query must be a non-empty string' });
        return send(400, { error: 'Invalid request', code: 'VALIDATION_ERROR', details: 'sql: must be a non-empty string' });
      }
      if (!sql) {
        if (legacy) return send(400, { error: 'sql() is not available in this run' });
        return send(403, { error: 'SQL is not available in this run (describe runs without it)', code: 'FORBIDDEN' });
      }
      const query = statement;
      const answer = chain.then(async () => {
        if (closed) return send(503, legacy ? { error: 'the run has ended' } : { error: 'the run has ended', code: 'SERVICE_UNAVAILABLE' });
        try {
          const result = await sql(query);
          served++;
          send(200, typeof result === 'number' ? { affected_rows: result } : { rows: result });
        } catch (err) {
          if (legacy) return send(400, { error: err instanceof Error ? err.message : String(err) });
          const { status, body } = envelopeOf(err);
          send(status, body);
        }
      });
      chain = answer;
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  // Statements run one at a time anyway; a container opening connections without end must not use up the
  // service's file descriptors. Connections past this are closed at once.
  server.maxConnections = MAX_CONNECTIONS;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // The containers run as an unprivileged user; the token, not the file mode, is what guards the socket.
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
