import type pg from 'pg';

/**
 * Whose share of the service a workspace's load takes (SQL connections, STF slots, queued workflow runs): the user
 * who created it. Admins can be added by the dozen, workspaces only within their creator's quota
 * (MAX_WORKSPACES_PER_USER), so the creator is the one principal an abuser cannot multiply cheaply. A workspace
 * whose creator is gone (the user deleted) is its own principal.
 */
export function workspacePrincipal(ws: { id: string; created_by: string | null }): string {
  return ws.created_by === null ? `ws:${ws.id}` : `user:${ws.created_by}`;
}

/**
 * workspacePrincipal by workspace id, for schedulers that see only ids (the SQL connection pools). A workspace's
 * creator never changes (a user's deletion only clears it), so answers are kept (the `max` most recent); a failed
 * look-up is not kept and answers the workspace itself.
 */
export class WorkspacePrincipals {
  private readonly known = new Map<string, string>();
  private readonly pending = new Map<string, Promise<string>>();

  constructor(
    private readonly pool: Pick<pg.Pool, 'query'>,
    private readonly max = 10_000,
  ) {}

  of(workspaceId: string): Promise<string> {
    const hit = this.known.get(workspaceId);
    if (hit !== undefined) return Promise.resolve(hit);
    let p = this.pending.get(workspaceId);
    if (!p) {
      p = this.load(workspaceId).finally(() => this.pending.delete(workspaceId));
      this.pending.set(workspaceId, p);
    }
    return p;
  }

  private async load(workspaceId: string): Promise<string> {
    let createdBy: string | null;
    try {
      const r = await this.pool.query<{ created_by: string | null }>('SELECT created_by FROM platform.workspaces WHERE id = $1', [workspaceId]);
      createdBy = r.rows[0]?.created_by ?? null;
    } catch {
      return workspacePrincipal({ id: workspaceId, created_by: null });
    }
    const principal = workspacePrincipal({ id: workspaceId, created_by: createdBy });
    if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
    this.known.set(workspaceId, principal);
    return principal;
  }
}
