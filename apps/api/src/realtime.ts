import type { Server } from 'node:http';
import { recordAudit } from '@wds/audit';
import { RealtimeHub, attachRealtime } from '@wds/realtime';
import { parseNewProposalTopic, proposalNotice } from '@wds/sql-approval';
import { bearerChallenge } from './http/oauth-resource.js';
import { checkCredential, upgradeAddress } from './http/rate-limit.js';
import { authenticateBearer, cachedAccess, checkWorkspaceHeader } from './http/route.js';
import type { Services } from './services.js';

export interface RunningRealtime {
  readonly hub: RealtimeHub;
  close(): Promise<void>;
}

/**
 * `GET /ws` on an API process's HTTP server (docs/automation.md, "Realtime"): the credential is the Authorization
 * header or, for browsers (which cannot set headers on a WebSocket), the `token` query parameter; the workspace is
 * X-Workspace-ID or `workspace_id`. A credential that fails spends the client address's failed-authentication budget,
 * the one the HTTP routes and MCP spend (`checkCredential`), and a spent budget refuses the upgrade as they refuse a
 * request. The connection lives as long as the credential and the membership: both are checked again (from the
 * invalidated caches) before each delivery.
 */
export async function startRealtime(services: Services, server: Server): Promise<RunningRealtime> {
  const { config, logger } = services;
  const hub = new RealtimeHub({
    databaseUrl: services.databaseUrl,
    db: services.pool,
    sql: services.sql,
    log: (msg, err) => logger.warn({ err }, msg),
  });
  await hub.start();
  const attached = attachRealtime(server, {
    hub,
    path: '/ws',
    maxBufferedBytes: config.REALTIME_MAX_BUFFER_BYTES,
    maxConnections: config.REALTIME_MAX_CONNECTIONS,
    maxConnectionsPerUser: config.REALTIME_MAX_CONNECTIONS_PER_USER,
    heartbeatMs: config.REALTIME_HEARTBEAT_MS,
    authenticate: async (req, url) => {
      const token = url.searchParams.get('token');
      const header = req.headers.authorization ?? (token ? `Bearer ${token}` : undefined);
      const principal = await checkCredential(
        services.rateLimits,
        { method: req.method ?? 'GET', path: url.pathname, address: upgradeAddress(req, config.TRUST_PROXY), authorization: header },
        () => authenticateBearer(services, header),
      );
      const given = req.headers['x-workspace-id'];
      const workspaceId = checkWorkspaceHeader(typeof given === 'string' ? given : (url.searchParams.get('workspace_id') ?? undefined));
      const access = await cachedAccess(services, principal, workspaceId);
      return {
        workspaceId: access.workspace.id,
        userId: principal.user.id,
        apiKeyId: principal.apiKeyId,
        expiresAt: principal.expiresAt,
        allowed: async () => {
          try {
            // The credential again (revoked, expired: 401) and the membership (removed: 403/404).
            await authenticateBearer(services, header);
            await cachedAccess(services, principal, workspaceId);
            return true;
          } catch {
            return false;
          }
        },
      };
    },
    // A refused credential is answered as on every route (oauth-resource.ts): the request's own URL, as a Host names it.
    refusalHeaders: (err, req, url): Record<string, string> =>
      err.status === 401
        ? {
            'WWW-Authenticate': bearerChallenge(config, {
              path: url.pathname,
              tokenSent: req.headers.authorization !== undefined || url.searchParams.has('token'),
              requestUrl: `http://${req.headers.host ?? '127.0.0.1'}${url.pathname}`,
            }),
          }
        : {},
    onOpen: (identity, req) => {
      const requestId = req.headers['x-request-id'];
      recordAudit(services.db, {
        workspaceId: identity.workspaceId,
        userId: identity.userId,
        apiKeyId: identity.apiKeyId,
        action: 'subscribe_realtime',
        resourceType: 'realtime',
        resourceId: null,
        requestId: typeof requestId === 'string' && /^[\w\-=]{1,255}$/.test(requestId) ? requestId : null,
        transport: 'http',
      }).catch((err) => logger.warn({ err }, 'audit entry of a realtime connection not written'));
    },
    log: (msg, err) => logger.warn({ err }, msg),
  });
  const stopNotices = services.bus.subscribe((topic) => {
    const announced = parseNewProposalTopic(topic);
    if (announced) tellApprovers(services, hub, announced.workspaceId, announced.id).catch((err) => logger.warn({ err }, 'approvers not told of a new SQL proposal'));
  });
  return {
    hub,
    async close() {
      stopNotices();
      attached.close();
      await hub.stop();
    },
  };
}

/** A new SQL proposal, to this process's subscribers of its workspace who may decide on it (docs/approvals.md). */
async function tellApprovers(services: Services, hub: RealtimeHub, workspaceId: string, id: string): Promise<void> {
  const users = hub.usersOf(workspaceId);
  if (users.length === 0) return;
  const found = await proposalNotice(services.db, workspaceId, id, users);
  if (found) await hub.notice(workspaceId, found.recipients, { type: 'SqlProposalCreated', data: found.notice });
}
