import {
  addMember,
  addRedirectUri,
  cancelInvitation,
  changeMemberRole,
  listInvitations,
  listMembers,
  listRedirectUris,
  removeMember,
  removeRedirectUri,
} from '@wds/workspaces';
import * as v from 'valibot';
import { Invitation, Member, MemberAdded, RedirectUri } from '../http/views/index.js';
import { defineRoute } from '../http/route.js';
import { Email, PageQuery, Role } from '../http/schemas.js';

const base = '/api/v1/workspaces/:id';
const RedirectUriBody = v.object({ redirect_uri: v.string() });

export const memberRoutes = [
  defineRoute({
    method: 'get',
    path: `${base}/members`,
    operation: 'list_members',
    response: v.array(Member),
    summary: 'Members of the workspace',
    auth: 'user',
    workspace: 'path',
    role: 'member',
    query: PageQuery,
    handler: ({ db, access, query }) => listMembers(db, access.workspace.id, query),
  }),
  defineRoute({
    method: 'post',
    path: `${base}/members`,
    operation: 'add_member',
    response: MemberAdded,
    summary: 'Add a member by email; an unknown email gets a pending invitation',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    body: v.object({ email: Email, role: Role }),
    status: 201,
    handler: async ({ db, access, principal, body, audit }) => {
      const r = await addMember(db, access.workspace.id, { ...body, invitedBy: principal.user.id });
      if ('membership' in r) {
        audit({ resourceId: r.membership.id, details: { user_id: r.membership.user_id, role: r.membership.role } });
      } else {
        audit({ resourceId: r.invitation.id, details: { invitation: true, email: r.invitation.email, role: r.invitation.role } });
      }
      return r;
    },
  }),
  defineRoute({
    method: 'patch',
    path: `${base}/members/:memberId`,
    operation: 'update_member',
    response: Member,
    summary: "Change a member's role",
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    body: v.object({ role: Role }),
    handler: async ({ db, access, params, body, audit }) => {
      const m = await changeMemberRole(db, access.workspace.id, params.memberId, body.role);
      audit({ details: { user_id: m.user_id, role: m.role } });
      return m;
    },
  }),
  defineRoute({
    method: 'delete',
    path: `${base}/members/:memberId`,
    operation: 'remove_member',
    summary: 'Remove a member',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    status: 204,
    handler: async ({ db, access, params, audit }) => {
      const m = await removeMember(db, access.workspace.id, params.memberId);
      audit({ resourceId: m.id, details: { user_id: m.user_id } });
    },
  }),
  defineRoute({
    method: 'get',
    path: `${base}/invitations`,
    operation: 'list_invitations',
    response: v.array(Invitation),
    summary: 'Pending invitations',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    query: PageQuery,
    handler: ({ db, access, query }) => listInvitations(db, access.workspace.id, query),
  }),
  defineRoute({
    method: 'delete',
    path: `${base}/invitations/:invitationId`,
    operation: 'cancel_invitation',
    summary: 'Cancel a pending invitation',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    status: 204,
    handler: async ({ db, access, params, audit }) => {
      const inv = await cancelInvitation(db, access.workspace.id, params.invitationId);
      audit({ resourceId: inv.id, details: { email: inv.email } });
    },
  }),
  defineRoute({
    method: 'get',
    path: `${base}/redirect-uris`,
    operation: 'list_redirect_uris',
    response: v.object({ items: v.array(RedirectUri) }),
    summary: 'OAuth redirect URIs of the workspace, as { items }',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    handler: async ({ db, access }) => ({ items: await listRedirectUris(db, access.workspace.id) }),
  }),
  defineRoute({
    method: 'post',
    path: `${base}/redirect-uris`,
    operation: 'add_redirect_uri',
    response: RedirectUri,
    summary: 'Register a redirect URI (HTTPS, no fragment, at most 2000 characters)',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    body: RedirectUriBody,
    status: 201,
    handler: async ({ db, access, body, audit }) => {
      const r = await addRedirectUri(db, access.workspace.id, body.redirect_uri);
      audit({ details: { redirect_uri: r.redirect_uri } });
      return r;
    },
  }),
  defineRoute({
    method: 'delete',
    path: `${base}/redirect-uris`,
    operation: 'remove_redirect_uri',
    summary: 'Remove a redirect URI (named in the body)',
    auth: 'user',
    workspace: 'path',
    role: 'admin',
    body: RedirectUriBody,
    status: 204,
    handler: async ({ db, access, body, audit }) => {
      const r = await removeRedirectUri(db, access.workspace.id, body.redirect_uri);
      audit({ resourceId: r.id, details: { redirect_uri: r.redirect_uri } });
    },
  }),
];
