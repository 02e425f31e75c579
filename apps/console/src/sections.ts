import type { View } from '@wds/client';
import type { ComponentType } from 'preact';

export type Workspace = View<'WorkspaceWithRole'>;

/** What every section's page is given: the workspace it is in and the rest of the address after the section. */
export interface SectionProps {
  workspace: Workspace;
  rest: string[];
}

export interface Section {
  /** The address segment: /console/w/<id>/<id of the section>. */
  id: string;
  /** The link's and the page heading's text. */
  title: string;
  /** Its page, a chunk of its own loaded the first time it is opened (docs/console.md lists each chunk). */
  load: () => Promise<{ default: ComponentType<SectionProps> }>;
}

/** The sections of a workspace, in the navigation's order. */
export const SECTIONS: Section[] = [
  { id: 'sql', title: 'SQL editor', load: () => import('./pages/sql.js') },
  { id: 'tables', title: 'Tables', load: () => import('./pages/tables.js') },
  { id: 'policies', title: 'Policies', load: () => import('./pages/policies.js') },
  { id: 'approvals', title: 'Approvals', load: () => import('./pages/approvals.js') },
  { id: 'workflows', title: 'Workflows and runs', load: () => import('./pages/workflows.js') },
  { id: 'stfs', title: 'STFs and effects', load: () => import('./pages/stfs.js') },
  { id: 'files', title: 'Files', load: () => import('./pages/files.js') },
  { id: 'documents', title: 'Documents', load: () => import('./pages/documents.js') },
  { id: 'dashboard', title: 'Dashboard', load: () => import('./pages/dashboard.js') },
  { id: 'audit', title: 'Audit log', load: () => import('./pages/audit.js') },
  { id: 'settings', title: 'Members and settings', load: () => import('./pages/settings.js') },
];
