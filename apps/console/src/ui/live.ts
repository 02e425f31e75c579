import { useEffect } from 'preact/hooks';
import { token } from '../session.js';

/** A message of the realtime feed (docs/automation.md#realtime): row changes and SQL proposals, each policy-filtered. */
export type LiveMessage =
  | { type: 'connected'; data: { workspace_id: string; user_id: string; tables: string[] | null } }
  | { type: 'RowInserted' | 'RowUpdated'; data: { table_name: string; row: Record<string, unknown>; truncated?: boolean } }
  | { type: 'RowDeleted'; data: { table_name: string; id: string } }
  | { type: 'SqlProposalCreated'; data: { proposal_id: string; operation: string; affected_tables: string[]; proposed_by: string; created_at: string; expires_at: string } }
  | { type: 'pong' | 'subscribed' | 'error'; data?: unknown };

/**
 * Follows the workspace's realtime feed (`GET /ws`) while the page is open: `tables` null follows every table.
 * A browser cannot set headers on a WebSocket, so the token goes in the query string (the service never logs the
 * request line). A dropped connection is opened again after 1, 2, 4 … 30 s; one closed for good by the service
 * (4403: the credential or the membership ended) is not.
 */
export function useLive(workspaceId: string, tables: string[] | null, onMessage: (m: LiveMessage) => void, onState?: (open: boolean) => void): void {
  const key = tables === null ? '*' : tables.join(',');
  useEffect(() => {
    let socket: WebSocket | null = null;
    let stopped = false;
    let delay = 1000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const open = () => {
      if (stopped || !token.value) return;
      const q = new URLSearchParams({ token: token.value, workspace_id: workspaceId });
      if (tables !== null && tables.length > 0) q.set('tables', tables.join(','));
      socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws?${q}`);
      socket.onopen = () => {
        delay = 1000;
        onState?.(true);
      };
      socket.onmessage = (e) => {
        try {
          onMessage(JSON.parse(String(e.data)) as LiveMessage);
        } catch {
          // Not JSON: not a message of the feed.
        }
      };
      socket.onclose = (e) => {
        onState?.(false);
        if (stopped || e.code === 4403) return;
        timer = setTimeout(open, delay);
        delay = Math.min(delay * 2, 30_000);
      };
    };
    open();
    return () => {
      stopped = true;
      clearTimeout(timer);
      socket?.close();
    };
  }, [workspaceId, key, token.value]);
}
