import type { IncomingMessage, Server } from 'node:http';
import { STATUS_CODES, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
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
  /** When the credential expires (null: never): the connection is closed then (4403). */
  expiresAt: Date | null;
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
  /** Connections one user may have open in this process. */
  maxConnectionsPerUser: number;
  /** How often the server pings; a connection that has not answered the previous ping is dropped. */
  heartbeatMs: number;
  /** Headers of the answer refusing an upgrade with `err` (a 401's WWW-Authenticate). */
  refusalHeaders?(err: ServiceError, req: IncomingMessage, url: URL): Record<string, string>;
  /** A connection was opened (audit). */
  onOpen?(identity: I, req: IncomingMessage): void;
  log?(msg: string, err?: unknown): void;
}

/** Bytes a client message may have (ping, subscribe): larger ones close the connection (ws' maxPayload, code 1009). */
const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;
/** Upgrades authenticating at once, and how long one may take. */
const MAX_PENDING_UPGRADES = 256;
const UPGRADE_TIMEOUT_MS = 10_000;
/** The longest delay setTimeout takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `expired` when `expiresAt` comes (never for null), in steps of at most MAX_TIMER_MS: a credential valid for
 * months lives that long. Returns what cancels it.
 */
export function onExpiry(expiresAt: Date | null, expired: () => void): () => void {
  if (!expiresAt) return () => {};
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = expiresAt.getTime() - Date.now();
    if (left <= 0) return expired();
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    timer.unref();
  };
  // Asynchronously, even when already expired: the caller finishes setting up first.
  timer = setTimeout(arm, 0);
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * An upgrade request that is not a WebSocket for `/ws` (an h2c upgrade of any route): with an `upgrade` listener Node
 * no longer answers it itself, so it is handed to the server's request handler as the HTTP/1.1 request it also is,
 * on a connection closed afterwards.
 */
function serveAsRequest(server: Server, req: IncomingMessage, socket: Duplex): void {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.on('finish', () => {
    res.detachSocket(socket as Socket);
    socket.end();
  });
  server.emit('request', req, res);
}

/** Answers an upgrade request with an HTTP error in the service's error envelope, and closes the socket. */
function refuse(socket: Duplex, err: unknown, headersOf?: (e: ServiceError) => Record<string, string>): void {
  const e = err instanceof ServiceError ? err : new ServiceError('INTERNAL_ERROR', 'Internal error');
  const body = JSON.stringify(e.toBody());
  const retryAfter = e.retryAfterSeconds === undefined ? '' : `Retry-After: ${e.retryAfterSeconds}\r\n`;
  // Header values of the service's own making; CR and LF are dropped all the same, so none can split the answer.
  const extra = Object.entries(headersOf?.(e) ?? {})
    .map(([name, value]) => `${name}: ${value.replace(/[\r\n]/g, '')}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${retryAfter}${extra}Connection: close\r\n\r\n${body}`,
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

  // Upgrades being authenticated: bounded in number and in time, so unanswered handshakes cannot pile up.
  let pendingUpgrades = 0;
  // Connections open or being opened, in all and per user: a slot is taken when the caps are checked (simultaneous
  // handshakes cannot all pass them), and given back when the connection ends or never opens.
  let slots = 0;
  const perUser = new Map<string, number>();
  const take = (userId: string) => {
    slots++;
    perUser.set(userId, (perUser.get(userId) ?? 0) + 1);
  };
  const giveBack = (userId: string) => {
    slots--;
    const n = (perUser.get(userId) ?? 1) - 1;
    if (n > 0) perUser.set(userId, n);
    else perUser.delete(userId);
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return refuse(socket, new ServiceError('BAD_REQUEST', 'Malformed request target'));
    }
    // Not a WebSocket for us (an h2c upgrade, say): served as the plain HTTP request it also is.
    if (url.pathname !== opts.path || (req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return serveAsRequest(server, req, socket);
    if (pendingUpgrades >= MAX_PENDING_UPGRADES) return refuse(socket, new ServiceError('SERVICE_UNAVAILABLE', 'Too many connections being opened', 'try again shortly'));
    pendingUpgrades++;
    let settled = false;
    const deadline = setTimeout(() => {
      if (settled) return;
      settled = true;
      pendingUpgrades--;
      refuse(socket, new ServiceError('SERVICE_UNAVAILABLE', 'The connection could not be authenticated in time', 'try again shortly'));
    }, UPGRADE_TIMEOUT_MS);
    deadline.unref();
    const done = (): boolean => {
      if (settled) return false;
      settled = true;
      pendingUpgrades--;
      clearTimeout(deadline);
      return !socket.destroyed;
    };
    (async () => {
      if (!opts.hub.healthy) throw new ServiceError('SERVICE_UNAVAILABLE', 'Realtime is not available right now', 'try again shortly');
      const full = () => slots >= opts.maxConnections;
      if (full()) throw new ServiceError('SERVICE_UNAVAILABLE', 'Too many realtime connections', 'try again later');
      let tables: string[] | null;
      try {
        tables = parseTablesParam(url.searchParams.get('tables'));
      } catch (err) {
        throw new ServiceError('VALIDATION_ERROR', 'Invalid tables parameter', (err as Error).message);
      }
      const identity = await opts.authenticate(req, url);
      // Again: others may have taken the last slots while this one authenticated.
      if (full()) throw new ServiceError('SERVICE_UNAVAILABLE', 'Too many realtime connections', 'try again later');
      if ((perUser.get(identity.userId) ?? 0) >= opts.maxConnectionsPerUser) {
        throw new ServiceError('TOO_MANY_REQUESTS', 'Too many realtime connections for this user', `at most ${opts.maxConnectionsPerUser} at once`);
      }
      take(identity.userId);
      return { identity, tables };
    })().then(
      ({ identity, tables }) => {
        // The slot is the connection's once it opens; until then a failed handshake (timed out, a socket gone, one
        // ws refuses without calling back) gives it back.
        let held = true;
        const release = () => {
          if (held) giveBack(identity.userId);
          held = false;
        };
        if (!done()) return release();
        socket.once('close', release);
        try {
          wss.handleUpgrade(req, socket, head, (ws) => {
            socket.off('close', release);
            held = false;
            open(ws, identity, tables, req);
          });
        } catch (err) {
          opts.log?.('realtime upgrade failed', err);
          release();
          socket.destroy();
        }
      },
      (err) => {
        if (done()) refuse(socket, err, opts.refusalHeaders && ((e) => opts.refusalHeaders?.(e, req, url) ?? {}));
      },
    );
  });

  function open(ws: WebSocket, identity: I, tables: string[] | null, req: IncomingMessage): void {
    alive.add(ws);
    ws.on('pong', () => alive.add(ws));
    // The user's slot was taken when the upgrade was checked.
    let closed = false;
    const ended = () => {
      if (closed) return false;
      closed = true;
      remove();
      cancelExpiry();
      giveBack(identity.userId);
      return true;
    };
    const close = (code: number, reason: string) => {
      if (!ended()) return;
      ws.close(code, reason);
      // A client that does not read cannot take the close frame either: drop it.
      setTimeout(() => ws.terminate(), 1000).unref();
    };
    // The bytes waiting to be sent, this message included, are what is bounded (one message alone always goes: a
    // message is at most a captured image's length, MAX_CAPTURED_IMAGE_BYTES, plus its envelope).
    const send = (text: string) => {
      if (closed || ws.readyState !== ws.OPEN) return;
      const waiting = ws.bufferedAmount;
      if (waiting > 0 && waiting + Buffer.byteLength(text) > opts.maxBufferedBytes) return close(CLOSE.tooSlow, 'messages piled up: the client reads too slowly');
      ws.send(text);
    };
    const reply = (m: ServerMessage) => send(JSON.stringify(m));
    const sub: RealtimeSubscriber = {
      workspaceId: identity.workspaceId,
      userId: identity.userId,
      tables: tables && new Set(tables),
      allowed: identity.allowed,
      send,
      close,
    };
    const remove = opts.hub.add(sub);
    // The credential's end is the connection's, events or not (a credential without an end: none).
    const cancelExpiry = onExpiry(identity.expiresAt, () => close(CLOSE.revoked, 'the credential expired'));
    ws.on('close', () => ended());
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
        return reply({ type: 'error', data: { code: 'BAD_REQUEST', error: `Unknown message: ${hint}` } });
      }
      const msg = m.output;
      if (msg.type === 'ping') return reply({ type: 'pong' });
      if (msg.type === 'subscribe') sub.tables = msg.tables ? new Set(msg.tables) : null;
      else if (sub.tables) sub.tables = new Set([...sub.tables].filter((t) => !msg.tables.includes(t)));
      else return reply({ type: 'error', data: { code: 'BAD_REQUEST', error: 'Subscribed to every table: subscribe to a list of tables first' } });
      reply({ type: 'subscribed', data: { tables: sub.tables ? [...sub.tables] : null } });
    });
    reply({ type: 'connected', data: { workspace_id: identity.workspaceId, user_id: identity.userId, tables: sub.tables ? [...sub.tables] : null } });
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
