import { badRequest } from '@wds/errors';
import { defineRoute } from '../http/route.js';

/**
 * `GET /ws` as a plain HTTP request. The WebSocket itself is served by the HTTP server's upgrade handler
 * (src/realtime.ts, @wds/realtime) before any route sees the request; a request without the upgrade lands here,
 * authenticated like every route, and is told how to connect. The entry documents the endpoint in OpenAPI.
 */
export const realtimeRoutes = [
  defineRoute({
    method: 'get',
    path: '/ws',
    operation: 'subscribe_realtime',
    auth: 'user',
    workspace: 'header',
    role: 'member',
    summary:
      'Realtime row changes over a WebSocket (Upgrade: websocket). Credential: Authorization or `?token=`; workspace: X-Workspace-ID or `?workspace_id=`; optional `?tables=a,b`. Messages: `connected`, `RowInserted`/`RowUpdated` (`data.table_name`, `data.row`), `RowDeleted` (`data.id`), `pong`, `subscribed`, `error`; each row only to subscribers whose select policies admit it (docs/automation.md)',
    mcp: { exclude: 'a WebSocket stream, not a call' },
    openapi: {
      responses: { '101': { description: 'Switching Protocols: the WebSocket is open; the first message is `connected`' } },
      errors: [503],
    },
    handler: async () => {
      throw badRequest('This endpoint takes a WebSocket', 'connect with Upgrade: websocket (docs/automation.md, "Realtime")');
    },
  }),
];
