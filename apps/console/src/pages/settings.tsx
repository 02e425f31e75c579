import { ok } from '@wds/client';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { useLoad } from '../ui/load.js';
import { ApiKeys } from './settings/api-keys.js';
import { People } from './settings/people.js';
import { WorkspaceSettings } from './settings/workspace-form.js';
import './settings.css';

/**
 * Members and settings: the workspace's members and invitations, the signed-in person's API keys, and the
 * workspace's settings. Changing members and settings is for admins: the API refuses others, and says so.
 */
export default function SettingsPage({ workspace }: SectionProps) {
  const me = useLoad(() => ok(api.value.GET('/api/v1/auth/me')), []);
  return (
    <div class="settings-page">
      <h1>Members and settings</h1>
      {workspace.role !== 'admin' && <p>You are a member of this workspace: only its admins change members and settings.</p>}
      <People workspaceId={workspace.id} myUserId={(me.data.value as { id?: string } | null)?.id ?? null} />
      <ApiKeys />
      <WorkspaceSettings workspaceId={workspace.id} />
    </div>
  );
}
