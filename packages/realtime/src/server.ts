import type { IncomingMessage, Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ServiceError } from '@wds/errors';
import * as v from 'valibot';
import { type WebSocket, WebSocketServer } from 'ws';
import { CLOSE, type RealtimeHub, type RealtimeSubscriber } from './hub.js';
import { ClientMessage, type ServerMessage, parseTablesParam } from './messages.js';

/** Who is connecting, as the service authenticated the upgrade request. */
export interface RealtimeIdentity {
  workspaceId: string;
  userId: string;
  /** Asked before each delivery: still a member, the credential still alive. */
  allowed(): Promise<boolean>;
}

export interface RealtimeServerOptions<I extends RealtimeIdentity = RealtimeIdentity> {
  hub: RealtimeHub;
  /** The path WebSockets connect to (`/ws`). */
  path: string;
  /** Authenticates an upgrade request (headers or query); throws a ServiceError to refuse it with that answer. */
  authenticate(req: IncomingMessage, url: URL): Promise<I>;
  /** Bytes a connection may have waiting to be sent; beyond that it is closed (a slow consumer). */
  maxBufferedBytes: number;
  /** Connections this process accepts at once (each user's tabs count). */
  maxConnections: number;
  /** How often the server pings; a connection that has not answered the previous ping is dropped. */
  heartbeatMs: number;
  /** A connection was opened (audit). */
  onOpen?(identity: I, req: IncomingMessage): void;
  log?(msg: string, err?: unknown): void;
}

/** Bytes a client message may have (ping, subscribe): larger ones close the connection (ws' maxPayload, code 1009). */
const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;

/** Answers an upgrade request with an HTTP error in the service's error envelope, and closes the socket. */
function refuse(socket: Duplex, err: unknown): void {
  const e = err instanceof ServiceError ? err : new ServiceError('INTERNAL_ERROR', 'Internal error');
  const body = JSON.stringify(e.toBody());
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * `GET /ws` on a Node HTTP server: authenticates the upgrade, then registers the connection with the hub. Every
 * message to a client goes through `send`, which closes a connection whose unsent bytes exceed `maxBufferedBytes`
 * (and drops it a second later if the close cannot get through): a client that stops reading costs a bounded amount
 * of memory. Returns what closes every connection.
 */
export function attachRealtime<I extends RealtimeIdentity>(server: Server, opts: RealtimeServerOptions<I>): { close(): void; readonly connections: number } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_MESSAGE_BYTES, perMessageDeflate: false });
  const alive = new WeakSet<WebSocket>();

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (!alive.has(ws)) {
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
    }
  }, opts.heartbeatMs);
  heartbeat.unref();

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== opts.path) return refuse(socket, new ServiceError('NOT_FOUND', 'Not found'));
    socket.on('error', () => socket.destroy());
    void (async () => {
      if (!opts.hub.healthy) throw new ServiceError('SERVICE_UNAVAILABLE', 'Realtime is not available right now', 'try again shortly');
      if (wss.clients.size >= opts.maxConnections) throw new ServiceError('SERVICE_UNAVAILABLE', 'Too many realtime connections', 'try again later');
      let tables: string[] | null;
      try {
        tables = parseTablesParam(url.searchParams.get('tables'));
      } catch (err) {
        throw new ServiceError('VALIDATION_ERROR', 'Invalid tables parameter', (err as Error).message);
      }
      const identity = await opts.authenticate(req, url);
      return { identity, tables };
    })().then(
      ({ identity, tables }) => {
        if (socket.destroyed) return;
        wss.handleUpgrade(req, socket, head, (ws) => open(ws, identity, tables, req));
      },
      (err) => refuse(socket, err),
    );
  });

  function open(ws: WebSocket, identity: I, tables: string[] | null, req: IncomingMessage): void {
    alive.add(ws);
    ws.on('pong', () => alive.add(ws));
    let closed = false;
    const close = (code: number, reason: string) => {
      if (closed) return;
      closed = true;
      remove();
      ws.close(code, reason);
      // A client that does not read cannot take the close frame either: drop it.
      setTimeout(() => ws.terminate(), 1000).unref();
    };
    const send = (m: ServerMessage) => {
      if (closed || ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount > opts.maxBufferedBytes) return close(CLOSE.tooSlow, 'messages piled up: the client reads too slowly');
      ws.send(JSON.stringify(m));
    };
    const sub: RealtimeSubscriber = {
      workspaceId: identity.workspaceId,
      userId: identity.userId,
      tables: tables && new Set(tables),
      allowed: identity.allowed,
      send,
      close,
    };
    const remove = opts.hub.add(sub);
    ws.on('close', () => {
      closed = true;
      remove();
    });
    ws.on('error', () => ws.terminate());
    ws.on('message', (data, isBinary) => {
      let parsed: unknown;
      try {
        parsed = isBinary ? undefined : JSON.parse(data.toString());
      } catch {
        parsed = undefined;
      }
      const m = v.safeParse(ClientMessage, parsed);
      if (!m.success) {
        const hint = 'send {"type":"ping"}, {"type":"subscribe","tables":[…]} or {"type":"unsubscribe","tables":[…]}';
        return send({ type: 'error', data: { code: 'BAD_REQUEST', error: `Unknown message: ${hint}` } });
      }
      const msg = m.output;
      if (msg.type === 'ping') return send({ type: 'pong' });
      if (msg.type === 'subscribe') sub.tables = msg.tables ? new Set(msg.tables) : null;
      else if (sub.tables) sub.tables = new Set([...sub.tables].filter((t) => !msg.tables.includes(t)));
      else return send({ type: 'error', data: { code: 'BAD_REQUEST', error: 'Subscribed to every table: subscribe to a list of tables first' } });
      send({ type: 'subscribed', data: { tables: sub.tables ? [...sub.tables] : null } });
    });
    send({ type: 'connected', data: { workspace_id: identity.workspaceId, user_id: identity.userId, tables: sub.tables ? [...sub.tables] : null } });
    opts.onOpen?.(identity, req);
  }

  return {
    close() {
      clearInterval(heartbeat);
      for (const ws of wss.clients) {
        ws.close(CLOSE.goingAway, 'server shutting down');
        setTimeout(() => ws.terminate(), 1000).unref();
      }
      wss.close();
    },
    get connections() {
      return wss.clients.size;
    },
  };
}
