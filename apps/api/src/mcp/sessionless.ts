/**
 * Sessionless serving (docs/mcp.md#sessions-across-processes): sessions live in the memory of the process that
 * opened them, so behind a load balancer without stickiness the next request of a session may reach a process that
 * never saw it. A request that names its workspace with X-Workspace-ID carries everything a call needs (the
 * credential is checked on every request anyway), so such a process serves it without a session, on a transport
 * of its own for that one request, instead of answering 404: nothing of a session is lost because nothing is kept.
 *
 * Served so: a POST of a message that is not `initialize` (an initialize opens a real session here), with
 * X-Workspace-ID, whose session id this process does not know or that has none. A session id this process knows
 * but another identity opened stays 404 (it reveals nothing), and so does anything without X-Workspace-ID, which
 * needs the session's `set_workspace` (the client then re-initializes; the stdio bridge re-applies its workspace).
 */
export function servesSessionless(r: {
  method: string;
  /** Mcp-Session-Id sent, and whether this process has a session of that id (of any identity). */
  sessionId: string | undefined;
  known: boolean;
  headerWorkspaceId: string | undefined;
  message: unknown;
}): boolean {
  if (r.method !== 'POST' || r.headerWorkspaceId === undefined || r.known) return false;
  const m = r.message as { method?: unknown } | null;
  return typeof m === 'object' && m !== null && !Array.isArray(m) && m.method !== 'initialize';
}
