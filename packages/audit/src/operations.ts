/**
 * Every operation of the service has one name, used by the audit log (`action`), logs and metrics.
 * Adding a route means adding its operation here first.
 */
export const OPERATIONS = {
  // identity
  get_me: { resource: 'user', mutates: false },
  exchange_token: { resource: 'token', mutates: false },
  get_sign_in_methods: { resource: 'token', mutates: false },
  list_api_keys: { resource: 'api_key', mutates: false },
  create_api_key: { resource: 'api_key', mutates: true },
  revoke_api_key: { resource: 'api_key', mutates: true },
  // browser sign-in: a one-time login link redeemed for a session token, and the end of that session
  redeem_login_link: { resource: 'login_link', mutates: true },
  logout: { resource: 'session', mutates: true },
  // no route: a JWT subject not seen before linked to a user, created with one, or refused (identity/authenticate.ts)
  link_jwt_identity: { resource: 'user', mutates: true },
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
  explain_sql: { resource: 'table', mutates: false },
  // reads of the tables that change nothing (docs/mcp.md#read-tools); query_sql audits as execute_sql_select
  query_sql: { resource: 'table', mutates: false },
  list_tables: { resource: 'table', mutates: false },
  describe_table: { resource: 'table', mutates: false },
  // SQL proposals (docs/approvals.md): each transition writes its own entry
  propose_sql: { resource: 'sql_proposal', mutates: true },
  list_sql_proposals: { resource: 'sql_proposal', mutates: false },
  get_sql_proposal: { resource: 'sql_proposal', mutates: false },
  approve_sql_proposal: { resource: 'sql_proposal', mutates: true },
  reject_sql_proposal: { resource: 'sql_proposal', mutates: true },
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
  // files
  list_files: { resource: 'file', mutates: false },
  get_file: { resource: 'file', mutates: false },
  extract_file_text: { resource: 'file', mutates: false },
  download_file: { resource: 'file', mutates: false },
  upload_file: { resource: 'file', mutates: true },
  delete_file: { resource: 'file', mutates: true },
  // documents
  list_documents: { resource: 'document', mutates: false },
  get_document: { resource: 'document', mutates: false },
  create_document: { resource: 'document', mutates: true },
  update_document: { resource: 'document', mutates: true },
  delete_document: { resource: 'document', mutates: true },
  replace_document_section: { resource: 'document', mutates: true },
  list_document_versions: { resource: 'document_version', mutates: false },
  // pinned charts
  list_pinned_charts: { resource: 'pinned_chart', mutates: false },
  get_pinned_chart: { resource: 'pinned_chart', mutates: false },
  create_pinned_chart: { resource: 'pinned_chart', mutates: true },
  update_pinned_chart: { resource: 'pinned_chart', mutates: true },
  delete_pinned_chart: { resource: 'pinned_chart', mutates: true },
  // workspace setup
  list_prompt_rules: { resource: 'prompt_rule', mutates: false },
  create_prompt_rule: { resource: 'prompt_rule', mutates: true },
  update_prompt_rule: { resource: 'prompt_rule', mutates: true },
  delete_prompt_rule: { resource: 'prompt_rule', mutates: true },
  list_skills: { resource: 'skill', mutates: false },
  get_skill: { resource: 'skill', mutates: false },
  create_skill: { resource: 'skill', mutates: true },
  update_skill: { resource: 'skill', mutates: true },
  delete_skill: { resource: 'skill', mutates: true },
  get_title_rule: { resource: 'title_rule', mutates: false },
  put_title_rule: { resource: 'title_rule', mutates: true },
  delete_title_rule: { resource: 'title_rule', mutates: true },
  list_chat_templates: { resource: 'chat_template', mutates: false },
  get_chat_template: { resource: 'chat_template', mutates: false },
  create_chat_template: { resource: 'chat_template', mutates: true },
  update_chat_template: { resource: 'chat_template', mutates: true },
  delete_chat_template: { resource: 'chat_template', mutates: true },
  activate_chat_template: { resource: 'chat_template', mutates: true },
  deactivate_chat_templates: { resource: 'chat_template', mutates: true },
  get_dashboard_enabled: { resource: 'workspace_setting', mutates: false },
  put_dashboard_enabled: { resource: 'workspace_setting', mutates: true },
  list_saas_credentials: { resource: 'credential', mutates: false },
  admin_put_workspace_credential: { resource: 'credential', mutates: true },
  admin_delete_workspace_credential: { resource: 'credential', mutates: true },
  // workflows
  list_workflows: { resource: 'workflow', mutates: false },
  get_workflow: { resource: 'workflow', mutates: false },
  create_workflow: { resource: 'workflow', mutates: true },
  update_workflow: { resource: 'workflow', mutates: true },
  delete_workflow: { resource: 'workflow', mutates: true },
  execute_workflow: { resource: 'workflow', mutates: true },
  list_workflow_runs: { resource: 'workflow_run', mutates: false },
  get_workflow_run: { resource: 'workflow_run', mutates: false },
  cancel_workflow_run: { resource: 'workflow_run', mutates: true },
  rerun_workflow_run: { resource: 'workflow_run', mutates: true },
  list_workflow_schedules: { resource: 'workflow_schedule', mutates: false },
  get_workflow_schedule: { resource: 'workflow_schedule', mutates: false },
  create_workflow_schedule: { resource: 'workflow_schedule', mutates: true },
  update_workflow_schedule: { resource: 'workflow_schedule', mutates: true },
  delete_workflow_schedule: { resource: 'workflow_schedule', mutates: true },
  list_workflow_hooks: { resource: 'workflow_hook', mutates: false },
  get_workflow_hook: { resource: 'workflow_hook', mutates: false },
  create_workflow_hook: { resource: 'workflow_hook', mutates: true },
  update_workflow_hook: { resource: 'workflow_hook', mutates: true },
  delete_workflow_hook: { resource: 'workflow_hook', mutates: true },
  rotate_workflow_hook_secret: { resource: 'workflow_hook', mutates: true },
  deliver_workflow_hook: { resource: 'workflow_hook', mutates: true },
  list_workflow_triggers: { resource: 'workflow_trigger', mutates: false },
  get_workflow_trigger: { resource: 'workflow_trigger', mutates: false },
  create_workflow_trigger: { resource: 'workflow_trigger', mutates: true },
  update_workflow_trigger: { resource: 'workflow_trigger', mutates: true },
  delete_workflow_trigger: { resource: 'workflow_trigger', mutates: true },
  list_workflow_trigger_events: { resource: 'workflow_trigger', mutates: false },
  replay_workflow_trigger_event: { resource: 'workflow_trigger', mutates: true },
  // realtime: a WebSocket opened on GET /ws (audited when it opens)
  subscribe_realtime: { resource: 'realtime', mutates: false },
  // embeddings
  generate_column_embeddings: { resource: 'embedding', mutates: true },
  get_column_embedding_status: { resource: 'embedding', mutates: false },
  search_column_embeddings: { resource: 'embedding', mutates: false },
  embed_files: { resource: 'embedding', mutates: true },
  get_file_embedding_status: { resource: 'embedding', mutates: false },
  search_files: { resource: 'embedding', mutates: false },
  regenerate_file_embeddings: { resource: 'embedding', mutates: true },
  embed_tables: { resource: 'embedding', mutates: true },
  get_table_embedding_status: { resource: 'embedding', mutates: false },
  search_tables: { resource: 'embedding', mutates: false },
  regenerate_table_embeddings: { resource: 'embedding', mutates: true },
  // drive sync and the SaaS proxy
  get_drive_sync_status: { resource: 'drive_sync', mutates: false },
  get_drive_sync_config: { resource: 'drive_sync', mutates: false },
  put_drive_sync_config: { resource: 'drive_sync', mutates: true },
  list_drive_sync_roots: { resource: 'drive_sync_root', mutates: false },
  add_drive_sync_root: { resource: 'drive_sync_root', mutates: true },
  remove_drive_sync_root: { resource: 'drive_sync_root', mutates: true },
  start_drive_sync: { resource: 'drive_sync', mutates: true },
  materialize_drive_file: { resource: 'file', mutates: true },
  read_drive_file: { resource: 'drive_file', mutates: false },
  drive_picker: { resource: 'drive_file', mutates: false },
  saas_proxy: { resource: 'saas_request', mutates: true },
  saas_proxy_download: { resource: 'saas_request', mutates: true },
  // audit
  list_audit_logs: { resource: 'audit_log', mutates: false },
  // admin interface
  admin_create_user: { resource: 'user', mutates: true },
  admin_create_session: { resource: 'session', mutates: true },
  // also `pnpm cli user login-link`, which writes the same entry without a request
  create_login_link: { resource: 'login_link', mutates: true },
} as const satisfies Record<string, { resource: string; mutates: boolean }>;

export type Operation = keyof typeof OPERATIONS;

/** Mutations that only add something (nothing existing is changed or lost): not destructive for a tool host. */
const ADDITIVE = /^(create|add|upload|invite|embed|generate|start|materialize|pin|duplicate)_/;
/** Mutations whose effect reaches beyond the workspace's data (outbound calls, user code with side effects). */
const OPEN_WORLD = new Set<Operation>(['execute_workflow', 'rerun_workflow_run', 'instant_run_stf', 'saas_proxy', 'saas_proxy_download', 'start_drive_sync', 'materialize_drive_file', 'read_drive_file', 'drive_picker']);

/**
 * How a tool host should treat an operation (MCP tool annotations): whether it only reads, whether it may change or
 * delete what exists (SQL statements, updates, deletes, runs of user code), and whether it talks to the outside.
 */
export function operationHints(op: Operation): { readOnly: boolean; destructive: boolean; openWorld: boolean } {
  const { mutates } = OPERATIONS[op];
  return { readOnly: !mutates, destructive: mutates && !ADDITIVE.test(op), openWorld: OPEN_WORLD.has(op) };
}
