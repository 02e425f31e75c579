/**
 * Loopback HTTP servers for the tests: each records the requests and connections it receives.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundGuard, type Resolver } from '../src/index.js';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface TestServer {
  host: string;
  port: number;
  /** http://host:port */
  origin: string;
  requests: Received[];
  /** TCP connections accepted (a refused call must leave this at 0). */
  connections: number;
  close(): Promise<void>;
}

export type Handler = (req: Received, res: http.ServerResponse, index: number) => void;

/** An HTTP server on a loopback address (127.0.0.1 unless told). */
export function startServer(handler: Handler = (_r, res) => res.end('ok'), host = '127.0.0.1'): Promise<TestServer> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      state.requests.push(received);
      handler(received, res, state.requests.length - 1);
    });
  });
  const state: TestServer = {
    host,
    port: 0,
    origin: '',
    requests: [],
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => state.connections++);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      state.port = (server.address() as AddressInfo).port;
      state.origin = `http://${host}:${state.port}`;
      resolve(state);
    });
  });
}

/** A resolver that answers from a table and never touches DNS; unknown names fail like ENOTFOUND. */
export function stubResolver(table: Record<string, string[]>, calls: string[] = []): Resolver {
  return async (hostname) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

/** A guard that allows 127.0.0.1 only and resolves names from a table (never from DNS). */
export function loopbackGuard(table: Record<string, string[]> = {}, allowlist = ['127.0.0.1']): OutboundGuard {
  return new OutboundGuard({ allowlist, resolver: stubResolver(table) });
}
