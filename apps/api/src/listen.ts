import { type ServerType, serve } from '@hono/node-server';
import type { Metrics } from '@wds/metrics';
import { metricsApp } from './http/metrics.js';

/** An HTTP listener on host:port; an address in use (or not ours to bind) fails, not a process without a listener. */
export const listen = (fetch: (req: Request) => Response | Promise<Response>, hostname: string, port: number) =>
  new Promise<ServerType>((ok, fail) => {
    const s = serve({ fetch, hostname, port }, () => {
      s.off('error', fail);
      ok(s);
    });
    s.once('error', fail);
  });

/** The URL a listener answers at. */
export function listenerUrl(server: ServerType, host: string): string {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Stops a listener: no new connections, open ones (a scraper's keep-alive) closed. */
export function closeListener(server: ServerType): Promise<void> {
  const closed = new Promise<void>((done) => server.close(() => done()));
  (server as { closeAllConnections?(): void }).closeAllConnections?.();
  return closed;
}

/** METRICS_PORT: `/metrics` alone, without a token, on a listener of its own (docs/metrics.md). */
export async function serveMetrics(metrics: Metrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = await listen(metricsApp(metrics).fetch, host, port);
  return { url: `${listenerUrl(server, host)}/metrics`, close: () => closeListener(server) };
}
