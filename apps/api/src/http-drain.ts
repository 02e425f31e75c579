/**
 * The HTTP part of a graceful stop: stop accepting, answer every request already received, and close each
 * keep-alive connection as soon as its answer is out (a client must not send its next request on a connection that
 * is about to go away). Past `timeoutMs` the remaining connections are cut.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { ServerType } from '@hono/node-server';

export function drainable(server: ServerType): (timeoutMs: number) => Promise<void> {
  const http = server as Server;
  const unanswered = new Set<ServerResponse>();
  let draining = false;
  // First of the 'request' listeners, so it runs before the app could have written its answer's headers.
  http.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (draining) res.setHeader('connection', 'close');
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  });

  return (timeoutMs) =>
    new Promise<void>((done) => {
      draining = true;
      for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close');
      // An answer that had started before the stop leaves its connection open and idle: close those too.
      const idle = setInterval(() => http.closeIdleConnections(), 100);
      const cut = setTimeout(() => {
        clearInterval(idle);
        http.closeAllConnections();
        done();
      }, timeoutMs);
      http.close(() => {
        clearTimeout(cut);
        clearInterval(idle);
        done();
      });
    });
}
