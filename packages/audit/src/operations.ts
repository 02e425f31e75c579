/**
 * Every operation of the service has one name, used by the audit log (`action`), logs and metrics.
 * Adding a route means adding its operation here first.
 */
export const OPERATIONS = {
  // identity
  get_me: { resource: 'user', mutates: false },
  exchange_token: { resource: 'token', mutates: false },
  list_api_keys: { resource: 'api_key', mutates: false },
  create_api_key: { resource: 'api_key', mutates: true },
  revoke_api_key: { resource: 'api_key', mutates: true },
  // workspaces
  list_workspaces: { resource: 'workspace', mutates: false },
  create_workspace: { resource: 'workspace', mutates: true },
  get_workspace: { resource: 'workspace', mutates: false },
  update_workspace: { resource: 'workspace', mutates: true },
  delete_workspace: { resource: 'workspace', mutates: true },
  // people
  list_members: { resource: 'member', mutates: false },
  add_member: { resource: 'member', mutates: true },
  update_member: { resource: 'member', mutates: true },
  remove_member: { resource: 'member', mutates: true },
  list_invitations: { resource: 'invitation', mutates: false },
  cancel_invitation: { resource: 'invitation', mutates: true },
  list_redirect_uris: { resource: 'redirect_uri', mutates: false },
  add_redirect_uri: { resource: 'redirect_uri', mutates: true },
  remove_redirect_uri: { resource: 'redirect_uri', mutates: true },
  // SQL: one route, audited under the action of the statement kind
  execute_sql: { resource: 'table', mutates: true },
  execute_sql_select: { resource: 'table', mutates: true },
  execute_sql_insert: { resource: 'table', mutates: true },
  execute_sql_update: { resource: 'table', mutates: true },
  execute_sql_delete: { resource: 'table', mutates: true },
  execute_sql_ddl: { resource: 'table', mutates: true },
  preview_sql: { resource: 'table', mutates: false },
  // policies
  list_policies: { resource: 'policy', mutates: false },
  get_policy: { resource: 'policy', mutates: false },
  create_policy: { resource: 'policy', mutates: true },
  update_policy: { resource: 'policy', mutates: true },
  delete_policy: { resource: 'policy', mutates: true },
  list_policy_groups: { resource: 'policy_group', mutates: false },
  get_policy_group: { resource: 'policy_group', mutates: false },
  create_policy_group: { resource: 'policy_group', mutates: true },
  update_policy_group: { resource: 'policy_group', mutates: true },
  delete_policy_group: { resource: 'policy_group', mutates: true },
  // STFs
  list_stfs: { resource: 'stf', mutates: false },
  get_stf: { resource: 'stf', mutates: false },
  create_stf: { resource: 'stf', mutates: true },
  update_stf: { resource: 'stf', mutates: true },
  delete_stf: { resource: 'stf', mutates: true },
  list_stf_versions: { resource: 'stf_version', mutates: false },
  add_stf_version: { resource: 'stf_version', mutates: true },
  describe_stf: { resource: 'stf', mutates: false },
  instant_run_stf: { resource: 'stf', mutates: true },
  list_stf_secrets: { resource: 'stf_secret', mutates: false },
  upsert_stf_secret: { resource: 'stf_secret', mutates: true },
  delete_stf_secret: { resource: 'stf_secret', mutates: true },
  list_stf_libraries: { resource: 'stf_library', mutates: false },
  get_stf_library_types: { resource: 'stf_library', mutates: false },
  // effects
  list_effects: { resource: 'effect', mutates: false },
  get_effect: { resource: 'effect', mutates: false },
  create_effect: { resource: 'effect', mutates: true },
  update_effect: { resource: 'effect', mutates: true },
  delete_effect: { resource: 'effect', mutates: true },
  list_effect_versions: { resource: 'effect_version', mutates: false },
  add_effect_version: { resource: 'effect_version', mutates: true },
  // workflows
  list_workflows: { resource: 'workflow', mutates: false },
  get_workflow: { resource: 'workflow', mutates: false },
  create_workflow: { resource: 'workflow', mutates: true },
  update_workflow: { resource: 'workflow', mutates: true },
  delete_workflow: { resource: 'workflow', mutates: true },
  execute_workflow: { resource: 'workflow', mutates: true },
  list_workflow_runs: { resource: 'workflow_run', mutates: false },
  get_workflow_run: { resource: 'workflow_run', mutates: false },
  // audit
  list_audit_logs: { resource: 'audit_log', mutates: false },
  // admin interface
  admin_create_user: { resource: 'user', mutates: true },
  admin_create_session: { resource: 'session', mutates: true },
} as const satisfies Record<string, { resource: string; mutates: boolean }>;

export type Operation = keyof typeof OPERATIONS;
