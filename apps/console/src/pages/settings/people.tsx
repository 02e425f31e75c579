import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { api } from '../../session.js';
import { useLoad } from '../../ui/load.js';
import { Problem } from '../../ui/problem.js';
import { when } from '../../ui/values.js';

type Member = View<'Member'>;
type Role = Member['role'];

/** The workspace's members (change a role, remove one), its pending invitations (revoke) and a new invitation. */
export function People({ workspaceId, myUserId }: { workspaceId: string; myUserId: string | null }) {
  const path = { id: workspaceId };
  const members = useLoad(() => ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path, query: { limit: 1000 } } })), [workspaceId]);
  const invitations = useLoad(() => ok(api.value.GET('/api/v1/workspaces/{id}/invitations', { params: { path, query: { limit: 1000 } } })), [workspaceId]);
  const status = useSignal('');
  const error = useSignal<unknown>(null);
  const removing = useSignal<string | null>(null);
  const email = useSignal('');
  const role = useSignal<Role>('member');

  const run = async (work: () => Promise<string>) => {
    error.value = null;
    status.value = '';
    try {
      status.value = await work();
    } catch (err) {
      error.value = err;
    }
    await Promise.all([members.reload(), invitations.reload()]);
  };
  const changeRole = (m: Member, to: Role) =>
    run(async () => {
      await ok(api.value.PATCH('/api/v1/workspaces/{id}/members/{memberId}', { params: { path: { ...path, memberId: m.id } }, body: { role: to } }));
      return `${m.user_name} is now ${to === 'admin' ? 'an admin' : 'a member'}.`;
    });
  const remove = (m: Member) =>
    run(async () => {
      removing.value = null;
      await ok(api.value.DELETE('/api/v1/workspaces/{id}/members/{memberId}', { params: { path: { ...path, memberId: m.id } } }));
      return `${m.user_name} was removed from the workspace.`;
    });
  const revoke = (id: string, to: string) =>
    run(async () => {
      await ok(api.value.DELETE('/api/v1/workspaces/{id}/invitations/{invitationId}', { params: { path: { ...path, invitationId: id } } }));
      return `The invitation of ${to} was revoked.`;
    });
  const invite = (e: Event) => {
    e.preventDefault();
    const to = email.value.trim();
    return run(async () => {
      const added = await ok(api.value.POST('/api/v1/workspaces/{id}/members', { params: { path }, body: { email: to, role: role.value } }));
      email.value = '';
      return 'membership' in added
        ? `${added.membership.user_name} already has an account and was added as ${added.membership.role}.`
        : `${added.invitation.email} is invited as ${added.invitation.role}; they join when they first sign in.`;
    });
  };

  const ms = members.data.value ?? [];
  const invs = invitations.data.value ?? [];
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      <p role="status" class="value">
        {status.value}
      </p>
      <Problem error={error.value} label="Members" />
      <Problem error={members.error.value} />
      <div class="scroll">
        <table>
          <caption>Members of this workspace</caption>
          <thead>
            <tr>
              <th scope="col" class="wrap">
                Name
              </th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {ms.map((m) => (
              <tr key={m.id}>
                <td class="wrap" dir="auto">
                  {m.user_name}
                  {m.user_id === myUserId ? ' (you)' : ''}
                </td>
                <td class="value">{m.user_email}</td>
                <td>
                  <select aria-label={`Role of ${m.user_name}`} value={m.role} onChange={(e) => changeRole(m, (e.target as HTMLSelectElement).value as Role)}>
                    <option value="member">member</option>
                    <option value="admin">admin</option>
                  </select>
                </td>
                <td>{when(m.created_at)}</td>
                <td>
                  {removing.value === m.id ? (
                    <>
                      <button type="button" onClick={() => remove(m)}>
                        Confirm removal of {m.user_name}
                      </button>{' '}
                      <button type="button" onClick={() => (removing.value = null)}>
                        Keep
                      </button>
                    </>
                  ) : (
                    <button type="button" aria-label={`Remove ${m.user_name}`} onClick={() => (removing.value = m.id)}>
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <h2 id="invitations-heading">Invitations</h2>
      <Problem error={invitations.error.value} />
      {invs.length === 0 ? (
        <p>No pending invitations.</p>
      ) : (
        <div class="scroll">
          <table>
            <caption>Pending invitations</caption>
            <thead>
              <tr>
                <th scope="col" class="wrap">
                  Email
                </th>
                <th scope="col">Role</th>
                <th scope="col">Invited</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {invs.map((i) => (
                <tr key={i.id}>
                  <td class="wrap">{i.email}</td>
                  <td>{i.role}</td>
                  <td>{when(i.created_at)}</td>
                  <td>
                    <button type="button" aria-label={`Revoke the invitation of ${i.email}`} onClick={() => revoke(i.id, i.email)}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form class="row" onSubmit={invite}>
        <span class="field">
          <label for="invite-email">Invite by email</label>
          <input id="invite-email" type="email" required value={email.value} onInput={(e) => (email.value = (e.target as HTMLInputElement).value)} />
        </span>
        <span class="field">
          <label for="invite-role">Role</label>
          <select id="invite-role" value={role.value} onChange={(e) => (role.value = (e.target as HTMLSelectElement).value as Role)}>
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
        </span>
        <button type="submit">Invite</button>
      </form>
    </section>
  );
}
