// Prints the tool table of docs/mcp.md from the route list (node scripts/mcp-tools-doc.mjs after a build); the MCP
// test checks that docs/mcp.md names every tool, so a new operation shows up here before the docs are current.
import { routes } from '../dist/app.js';
import { DEFAULT_TOOLS, featureOf } from '../dist/mcp/profiles.js';
import { exclusionOf, toolsOf } from '../dist/mcp/tools.js';

/** The origin platform's tool of the same capability (docs only). */
const ORIGIN = {
  execute_sql: 'd6e_sql',
  preview_sql: '(d6e_sql approval preview)',
  list_workspaces: 'd6e_list_workspaces',
  get_workspace: 'd6e_get_workspace',
  create_workspace: 'd6e_create_workspace',
  update_workspace: 'd6e_update_workspace',
  delete_workspace: 'd6e_delete_workspace',
  list_members: 'd6e_list_workspace_members',
  add_member: 'd6e_add_workspace_member',
  update_member: 'd6e_update_workspace_member',
  remove_member: 'd6e_remove_workspace_member',
  generate_column_embeddings: 'd6e_generate_embeddings',
  search_column_embeddings: 'd6e_similarity_search',
  embed_files: 'd6e_embed_files',
  get_file_embedding_status: 'd6e_file_embedding_status',
  search_files: 'd6e_search_files',
  regenerate_file_embeddings: 'd6e_regenerate_file_embeddings',
  embed_tables: 'd6e_embed_table_rows',
  get_table_embedding_status: 'd6e_table_row_embedding_status',
  search_tables: 'd6e_search_table_rows',
  regenerate_table_embeddings: 'd6e_regenerate_table_rows',
  list_workflows: 'd6e_list_workflows',
  get_workflow: 'd6e_get_workflow',
  create_workflow: 'd6e_create_workflow',
  update_workflow: 'd6e_update_workflow',
  delete_workflow: 'd6e_delete_workflow',
  execute_workflow: 'd6e_execute_workflow',
  list_stfs: 'd6e_list_stfs',
  get_stf: 'd6e_get_stf',
  create_stf: 'd6e_create_stf',
  update_stf: 'd6e_update_stf',
  delete_stf: 'd6e_delete_stf',
  list_stf_versions: 'd6e_list_stf_versions',
  add_stf_version: 'd6e_create_stf_version',
  instant_run_stf: 'd6e_instant_run_stf',
  describe_stf: 'd6e_describe_stf',
  list_stf_libraries: 'd6e_list_stf_libraries',
  get_stf_library_types: 'd6e_get_library_types',
  list_effects: 'd6e_list_effects',
  get_effect: 'd6e_get_effect',
  create_effect: 'd6e_create_effect',
  update_effect: 'd6e_update_effect',
  delete_effect: 'd6e_delete_effect',
  list_effect_versions: 'd6e_list_effect_versions',
  add_effect_version: 'd6e_create_effect_version',
  list_policies: 'd6e_list_policies',
  get_policy: 'd6e_get_policy',
  create_policy: 'd6e_create_policy',
  update_policy: 'd6e_update_policy',
  delete_policy: 'd6e_delete_policy',
  list_policy_groups: 'd6e_list_policy_groups',
  get_policy_group: 'd6e_get_policy_group',
  create_policy_group: 'd6e_create_policy_group',
  update_policy_group: 'd6e_update_policy_group',
  delete_policy_group: 'd6e_delete_policy_group',
  list_files: 'd6e_list_files',
  get_file: 'd6e_get_file',
  upload_file: 'd6e_upload_file',
  download_file: 'd6e_download_file, d6e_view_image',
  delete_file: 'd6e_delete_file',
  extract_file_text: 'd6e_extract_file_text',
  create_document: 'd6e_create_document',
  get_document: 'd6e_get_document',
  list_documents: 'd6e_list_documents',
  update_document: 'd6e_update_document',
  replace_document_section: 'd6e_replace_document_section',
  delete_document: 'd6e_delete_document',
  list_document_versions: 'd6e_get_document_versions',
  list_prompt_rules: 'd6e_list_workspace_prompt_rules',
  create_prompt_rule: 'd6e_create_workspace_prompt_rule',
  update_prompt_rule: 'd6e_update_workspace_prompt_rule',
  delete_prompt_rule: 'd6e_delete_workspace_prompt_rule',
  list_skills: 'd6e_list_workspace_skills',
  create_skill: 'd6e_create_workspace_skill',
  update_skill: 'd6e_update_workspace_skill',
  delete_skill: 'd6e_delete_workspace_skill',
  get_title_rule: 'd6e_get_workspace_title_rule',
  put_title_rule: 'd6e_set_workspace_title_rule',
  delete_title_rule: 'd6e_clear_workspace_title_rule',
  list_chat_templates: 'd6e_list_workspace_chat_templates',
  get_chat_template: 'd6e_get_workspace_chat_template',
  create_chat_template: 'd6e_create_workspace_chat_template',
  update_chat_template: 'd6e_update_workspace_chat_template',
  delete_chat_template: 'd6e_delete_workspace_chat_template',
  activate_chat_template: 'd6e_set_active_workspace_chat_template',
  deactivate_chat_templates: 'd6e_deactivate_workspace_chat_templates',
  get_dashboard_enabled: 'd6e_get_workspace_dashboard_enabled',
  put_dashboard_enabled: 'd6e_set_workspace_dashboard_enabled',
  list_saas_credentials: 'd6e_list_saas_credentials',
  saas_proxy: 'd6e_call_external_api',
  saas_proxy_download: 'd6e_download_external_file',
  read_drive_file: 'd6e_read_drive_file',
  list_audit_logs: 'd6e_list_audit_logs',
};

const hint = (a) => (a.readOnlyHint ? 'read' : a.destructiveHint ? 'write, destructive' : 'write');
/** The feature group (docs/mcp.md#tool-sets), and "default" when the default profile has the tool. */
const set = (name) => `${featureOf(name)}${DEFAULT_TOOLS.includes(name) ? ', **default**' : ''}`;
const rows = ['| Tool | REST | Kind | Set | Origin tool |', '| --- | --- | --- | --- | --- |'];
rows.push(`| \`set_workspace\` | (MCP only) | session | ${set('set_workspace')} | \`d6e_set_workspace\` |`);
rows.push(`| \`get_current_workspace\` | (MCP only) | read | ${set('get_current_workspace')} | \`d6e_get_current_workspace\` |`);
for (const t of toolsOf(routes).values()) {
  const origin = ORIGIN[t.name];
  rows.push(`| \`${t.name}\` | \`${t.rest}\` | ${hint(t.annotations)}${t.annotations.openWorldHint ? ', outside world' : ''} | ${set(t.name)} | ${origin ? origin.split(', ').map((o) => (o.startsWith('d6e') ? `\`${o}\`` : o)).join(', ') : '—'} |`);
}
rows.push('', '| Not a tool | Why |', '| --- | --- |');
for (const r of routes) {
  const why = exclusionOf(r);
  if (why !== undefined) rows.push(`| \`${r.method.toUpperCase()} ${r.path}\` | ${why} |`);
}
process.stdout.write(`${rows.join('\n')}\n`);
