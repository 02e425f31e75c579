import { type Database, type Db, type Role, type Transaction, type User, newId, type Uuid } from '@wds/db';
import { ServiceError, conflict, notFound } from '@wds/errors';
import { type InvitationView, type MemberAddedView, type MemberView, toInvitationView, toMemberView } from './views.js';
import type { Page } from './workspaces.js';

function memberQuery(db: Db, workspaceId: string) {
  return db
    .selectFrom('platform.memberships as m')
    .innerJoin('platform.users as u', 'u.id', 'm.user_id')
    .select(['m.id', 'm.user_id', 'u.email', 'u.name', 'm.role', 'm.created_at'])
    .where('m.workspace_id', '=', workspaceId);
}

export async function listMembers(db: Db, workspaceId: string, page: Page): Promise<MemberView[]> {
  const rows = await memberQuery(db, workspaceId).orderBy('m.id').limit(page.limit).offset(page.offset).execute();
  return rows.map(toMemberView);
}

/** An existing user becomes a member at once; an unknown email gets a pending invitation. */
export async function addMember(
  db: Db,
  workspaceId: string,
  input: { email: string; role: Role; invitedBy: string },
): Promise<MemberAddedView> {
  const user = await db
    .selectFrom('platform.users')
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['email']), '=', input.email.toLowerCase()))
    .executeTakeFirst();
  if (user) {
    const inserted = await db
      .insertInto('platform.memberships')
      .values({ id: newId(), workspace_id: workspaceId, user_id: user.id, role: input.role })
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) throw conflict('This user is already a member of the workspace');
    const row = await memberQuery(db, workspaceId).where('m.id', '=', inserted.id).executeTakeFirstOrThrow();
    return { membership: toMemberView(row) };
  }
  const pending = await pendingInvitations(db, workspaceId)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', input.email.toLowerCase()))
    .executeTakeFirst();
  if (pending) throw conflict('An invitation for this email is already pending');
  const invitation = await db
    .insertInto('platform.invitations')
    .values({
      id: newId(),
      workspace_id: workspaceId,
      email: input.email,
      role: input.role,
      invited_by: input.invitedBy,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { invitation: toInvitationView(invitation) };
}

/** Admin changes are serialised per workspace, so two concurrent demotions cannot remove the last admin. */
async function lockWorkspace(db: Db, workspaceId: string) {
  await db.selectFrom('platform.workspaces').select('id').where('id', '=', workspaceId).forUpdate().execute();
}

async function findMember(db: Db, workspaceId: string, memberId: Uuid) {
  const m = await memberQuery(db, workspaceId).where('m.id', '=', memberId).executeTakeFirst();
  if (!m) throw notFound('Member');
  return m;
}

async function assertNotLastAdmin(db: Db, workspaceId: string) {
  const { n } = await db
    .selectFrom('platform.memberships')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'admin')
    .executeTakeFirstOrThrow();
  if (n <= 1) throw new ServiceError('LAST_ADMIN', 'The workspace must keep at least one admin');
}

export async function changeMemberRole(
  db: Db,
  workspaceId: string,
  memberId: Uuid,
  role: Role,
): Promise<MemberView> {
  await lockWorkspace(db, workspaceId);
  const m = await findMember(db, workspaceId, memberId);
  if (m.role === 'admin' && role !== 'admin') await assertNotLastAdmin(db, workspaceId);
  await db
    .updateTable('platform.memberships')
    .set({ role, updated_at: new Date() })
    .where('id', '=', memberId)
    .execute();
  return toMemberView({ ...m, role });
}

export async function removeMember(db: Db, workspaceId: string, memberId: Uuid): Promise<MemberView> {
  await lockWorkspace(db, workspaceId);
  const m = await findMember(db, workspaceId, memberId);
  if (m.role === 'admin') await assertNotLastAdmin(db, workspaceId);
  await db.deleteFrom('platform.memberships').where('id', '=', memberId).execute();
  return toMemberView(m);
}

function pendingInvitations(db: Db, workspaceId: string) {
  return db
    .selectFrom('platform.invitations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('accepted_at', 'is', null)
    .where('cancelled_at', 'is', null);
}

export async function listInvitations(db: Db, workspaceId: string, page: Page): Promise<InvitationView[]> {
  const rows = await pendingInvitations(db, workspaceId).orderBy('id').limit(page.limit).offset(page.offset).execute();
  return rows.map(toInvitationView);
}

export async function cancelInvitation(db: Db, workspaceId: string, invitationId: Uuid): Promise<InvitationView> {
  const row = await db
    .updateTable('platform.invitations')
    .set({ cancelled_at: new Date() })
    .where('id', '=', invitationId)
    .where('workspace_id', '=', workspaceId)
    .where('accepted_at', 'is', null)
    .where('cancelled_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Invitation');
  return toInvitationView(row);
}

/** Turns every pending invitation for the user's email into a membership (in live workspaces). */
export async function acceptPendingInvitations(tx: Transaction<Database>, user: User): Promise<number> {
  const pending = await tx
    .selectFrom('platform.invitations as i')
    .innerJoin('platform.workspaces as w', 'w.id', 'i.workspace_id')
    .select(['i.id', 'i.workspace_id', 'i.role'])
    .where((eb) => eb(eb.fn('lower', ['i.email']), '=', user.email.toLowerCase()))
    .where('i.accepted_at', 'is', null)
    .where('i.cancelled_at', 'is', null)
    .where('w.deleted_at', 'is', null)
    .execute();
  for (const inv of pending) {
    await tx
      .insertInto('platform.memberships')
      .values({ id: newId(), workspace_id: inv.workspace_id, user_id: user.id, role: inv.role })
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
      .execute();
    await tx.updateTable('platform.invitations').set({ accepted_at: new Date() }).where('id', '=', inv.id).execute();
  }
  return pending.length;
}
