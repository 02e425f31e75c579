import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { RealtimeHub } from '../src/hub.js';
import { type RealtimeIdentity, attachRealtime, onExpiry } from '../src/server.js';

/** attachRealtime's connection housekeeping, on a real HTTP server with real WebSockets (the hub is a stand-in). */

const hub = { healthy: true, add: () => () => {} } as unknown as RealtimeHub;
const identity: RealtimeIdentity = { workspaceId: 'w', userId: 'u', allowed: async () => true, expiresAt: null };
const servers: Server[] = [];
const sockets: WebSocket[] = [];

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await Promise.all(
    servers.map(
      (s) =>
        new Promise((done) => {
          s.closeAllConnections();
          s.close(done);
        }),
    ),
  );
});

async function serve(maxConnectionsPerUser: number, authenticate: () => Promise<RealtimeIdentity>): Promise<{ url: string; port: number }> {
  const server = createServer((_req, res) => res.writeHead(400).end());
  const rt = attachRealtime(server, { hub, path: '/ws', maxBufferedBytes: 1 << 20, maxConnections: 100, maxConnectionsPerUser, heartbeatMs: 60_000, authenticate });
  server.on('close', () => rt.close());
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}/ws`, port };
}

/** Opens a WebSocket: the open one once `connected` arrives, or the status it was refused with. */
function attempt(url: string): Promise<{ ws?: WebSocket; status?: number }> {
  const ws = new WebSocket(url);
  sockets.push(ws);
  return new Promise((resolve) => {
    ws.on('message', (data) => {
      if ((JSON.parse(data.toString()) as { type: string }).type === 'connected') resolve({ ws });
    });
    ws.on('unexpected-response', (req, res) => {
      res.resume();
      req.destroy();
      resolve({ status: res.statusCode });
    });
    ws.on('error', () => resolve({ status: -1 }));
  });
}

/** Sends raw bytes; the first line of the answer once the server closes the connection. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    socket.on('data', (c) => (answer += c.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
  });
}

describe('attachRealtime', () => {
  it('simultaneous upgrades of one user cannot all pass the per-user cap (429 beyond it)', async () => {
    let arrived = 0;
    let release!: () => void;
    const all = new Promise<void>((r) => (release = r));
    // Every handshake is checked while the others are still authenticating.
    const { url } = await serve(2, async () => {
      if (++arrived === 5) release();
      await all;
      return identity;
    });
    const results = await Promise.all(Array.from({ length: 5 }, () => attempt(url)));
    expect(results.filter((r) => r.ws).length).toBe(2);
    expect(results.filter((r) => r.status === 429).length).toBe(3);
  });

  it('a handshake refused after the check gives its slot back, and so does a closed connection', async () => {
    const { url, port } = await serve(1, async () => identity);
    // ws refuses a malformed key (400) without ever opening the connection.
    const answer = await raw(
      port,
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: nope\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    const first = await attempt(url);
    expect(first.ws).toBeDefined();
    expect((await attempt(url)).status).toBe(429);
    const ws = first.ws as WebSocket;
    await new Promise((r) => {
      ws.on('close', r);
      ws.close();
    });
    await expect.poll(async () => (await attempt(url)).ws !== undefined, { timeout: 5000, interval: 100 }).toBe(true);
  });
});

describe('onExpiry', () => {
  const DAY = 24 * 3600_000;
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a credential without an end arms no timer: its connection is never ended for it', () => {
    vi.useFakeTimers();
    const expired = vi.fn();
    onExpiry(null, expired);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100 * DAY);
    expect(expired).not.toHaveBeenCalled();
  });

  it('a credential ending in 30 days outlives the longest timer (24.8 days) and ends on the day', () => {
    vi.useFakeTimers();
    const expired = vi.fn();
    onExpiry(new Date(Date.now() + 30 * DAY), expired);
    vi.advanceTimersByTime(25 * DAY);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(5 * DAY - 1000);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000);
    expect(expired).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(100 * DAY);
    expect(expired).toHaveBeenCalledTimes(1);
  });

  it('an expired credential ends at once (after the caller has set up); a cancelled one never', () => {
    vi.useFakeTimers();
    const expired = vi.fn();
    onExpiry(new Date(Date.now() - 1000), expired);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(expired).toHaveBeenCalledTimes(1);
    const never = vi.fn();
    const cancel = onExpiry(new Date(Date.now() + 40 * DAY), never);
    vi.advanceTimersByTime(30 * DAY);
    cancel();
    vi.advanceTimersByTime(30 * DAY);
    expect(never).not.toHaveBeenCalled();
  });
});
