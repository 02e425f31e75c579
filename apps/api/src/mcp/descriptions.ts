/**
 * Tool and argument descriptions written for a model (docs/mcp.md#descriptions): what a tool does and when to use
 * it, what each id names and which tool lists it, and no HTTP (the REST mapping is the tool's `_meta`). A tool not
 * named here keeps its route's summary, which says what it does.
 */

/** Descriptions that replace the route's summary: the common tools, and summaries that talk HTTP. */
export const TOOL_DESCRIPTIONS: Record<string, string> = {
  get_me: 'Who you are: the user this connection acts for. Use it to learn your own user id.',
  list_workspaces:
    'The workspaces you belong to, with your role in each. Use it first when no workspace is chosen, then set_workspace.',
  get_workspace: "The chosen workspace's details and settings (approval mode, time limits, editor groups).",
  execute_sql:
    'Run one SQL statement (SELECT, INSERT, UPDATE, DELETE, CREATE/ALTER/DROP TABLE or INDEX) on the workspace tables, under your row policies. Use it to change data or tables; for reads prefer query_sql. When the workspace requires approval, a write is held as a proposal instead (answer code APPROVAL_REQUIRED; follow it with get_sql_proposal).',
  preview_sql:
    'Show how a statement would be rewritten, without running it; with_policies: true adds your row policies. A statement that changes anything is also stored as a proposal (proposal_id). Use it to check a write before execute_sql.',
  explain_sql:
    'Explain why a statement runs as it does or is denied: per table the decision, the policies that apply and the filter added; with row_id, which conditions one row matches. Nothing runs. Use it after a POLICY_DENIED error.',
  propose_sql:
    'Store a statement that changes something as a proposal for an approver; nothing runs. Use it when the workspace asks for approval of writes; then wait with get_sql_proposal.',
  list_sql_proposals: "The workspace's SQL proposals, newest first (approvers see all, other members their own); status filters them.",
  get_sql_proposal:
    'One SQL proposal and its status; with wait (seconds, at most 60) it answers as soon as the status changes. Use it to wait for an approver.',
  approve_sql_proposal:
    'Approve a pending SQL proposal (approvers only): its statement runs once, as its proposer, under the policies in force now.',
  reject_sql_proposal: 'Reject a pending SQL proposal (approvers), or withdraw your own.',
  list_policies: 'The row policies of the workspace: which group may read or change which rows of which table. Use it to understand a POLICY_DENIED error.',
  instant_run_stf:
    'Run STF code without a workflow: a saved version (stf_version_id, or the newest of stf_id), or unsaved code (runtime and base64 code). Use it to try code before saving it with create_stf.',
  list_stfs: 'The STFs (stored TypeScript/JavaScript functions) of the workspace, each with its latest version. Use it to find an stf_id.',
  create_stf: 'Create an STF (a stored function that workflow steps run) with its first version (workflow editors).',
  get_stf: 'One STF and its details.',
  list_stf_libraries:
    'The libraries STF code can import by name (each also as @d6e-ai/<name>), with version and description. Use it before writing STF code.',
  get_stf_library_types:
    'The TypeScript declarations of one library STF code can import (by its name from list_stf_libraries, e.g. docx). Large: use it only for the library you are about to use.',
  list_workflows: 'The workflows of the workspace (name narrows to an exact name). Use it to find a workflowId for execute_workflow.',
  get_workflow: 'One workflow with its steps.',
  create_workflow: 'Create a workflow (workflow editors): its steps (STFs, effects, tables) are checked against this workspace.',
  update_workflow:
    'Change a workflow (workflow editors); step lists given replace the saved ones. Whoever changes its steps takes over its schedules, hooks and triggers.',
  execute_workflow:
    "Run a workflow with `input` as its $input and answer the last STF step's output; a failed step is a RUNTIME_ERROR naming the step. With async=true it answers the run id at once and the run is queued: follow it with get_workflow_run.",
  list_workflow_runs:
    'Runs of a workflow, newest first (status, trigger, per-step records, timings; without input and output); status, trigger and trigger_id filter them.',
  get_workflow_run:
    "One run of a workflow with its input, output, error and per-step records. Use it to follow an async run or find why a run failed. A run made of rows only the user it ran as may read is redacted for others.",
  cancel_workflow_run:
    'Cancel a run (its executor, or workflow editors): a queued run ends at once; a running one skips the steps not yet started. Fails for a run that has ended. Answers the run as it is now.',
  rerun_workflow_run:
    "Run a workflow again with a recorded run's $input, as you now (your right to execute it, your policies), never as the user it ran as; answers as execute_workflow does (async=true queues it). Refused for a run that has not ended, or whose input only the user it ran as may read.",
  list_files: 'The files of the workspace, newest first (metadata only). Use it to find a fileId; search_files finds files by their content.',
  get_file: "One file's metadata (name, type, size, embedding state).",
  upload_file:
    'Store a file in the workspace: filename, content (base64), optional content_type and metadata (storage editors). A file larger than one tool call allows cannot be uploaded here.',
  download_file:
    "A file's content: text as text, images as an image, other bytes as base64. A large file comes in parts: range (bytes=<start>-) asks for the next one. For the text of a PDF or HTML file use extract_file_text.",
  extract_file_text:
    'The text of a file (text, Markdown, CSV/TSV, JSON, HTML, XML, PDF), a page of characters at a time (offset, limit). Images and other binary files are refused: use download_file for them.',
  delete_file: 'Delete a file (storage editors).',
  search_files: 'Files whose text is most similar to a query (by meaning), with the best-matching passage and its score. Use it to find files about something.',
  list_documents: 'The Markdown documents of the workspace, without content; doc_type and status filter them exactly. Use it to find a docId.',
  get_document: 'One document with its Markdown content.',
  create_document: 'Create a Markdown document (title, doc_type, status, content, metadata) at version 1 (workflow editors).',
  update_document: 'Change a document (workflow editors); a content change adds a version. To change one section only, use replace_document_section.',
  replace_document_section:
    'Replace one section of a document (workflow editors): the body under `heading` up to the next heading of its level, or `old_text` (exactly one occurrence) with `new_text`. Cheaper than update_document for a small change.',
  search_tables: 'Rows of any embedded table most similar to a query (by meaning), with scores; only rows you may read. Use it to find rows about something.',
  remove_member: 'Remove a member from the workspace (admins).',
  get_skill: 'One skill of the workspace, with its content.',
  delete_skill: 'Delete a skill of the workspace (admins).',
  get_chat_template: 'One chat template of the workspace, with its content.',
  get_policy: 'One row policy: its group, table, operation, mode and condition.',
  update_policy: 'Change a row policy (its condition, operation, mode or group).',
  delete_policy: 'Delete a row policy; the access it gave or denied ends at once.',
  get_policy_group: 'One policy group: its users and STFs.',
  get_effect: 'One effect (an outbound call definition) with its latest version.',
  update_workflow_hook: 'Rename or pause a webhook (workflow editors; its deliveries then run as the changer); a paused hook refuses deliveries.',
  delete_workflow_hook: 'Delete a webhook (workflow editors): its URL refuses deliveries from then on; its runs stay in the run history.',
  replay_workflow_trigger_event: 'Replay a dead trigger event (workflow editors): pending again with fresh attempts; refused for an event that is not dead.',
  delete_title_rule: 'Delete the title rule; fails when none is set.',
  list_redirect_uris: 'The OAuth redirect URIs of the workspace.',
  add_redirect_uri: 'Register an OAuth redirect URI (https, no fragment, at most 2000 characters).',
  remove_redirect_uri: 'Remove an OAuth redirect URI (named by `uri`).',
  create_workspace: 'Create a workspace; you become its admin. Only a person signed in (not an API key) may.',
  list_api_keys: 'Your API keys (metadata only). Only a person signed in may manage keys.',
  create_api_key: 'Create an API key for yourself; the raw key is answered once. Only a person signed in may.',
  revoke_api_key: 'Revoke one of your API keys; it stops working at once.',
  saas_proxy:
    "Call a connected provider's API (list_saas_credentials names them) with the workspace credential; answers the provider's status, headers and body (10 MB cap; redirects are returned, not followed).",
  saas_proxy_download: 'Call a connected provider and store its successful answer as a file of the workspace (100 MB cap; storage editors).',
};

/** What each path parameter names, and the tool that lists it. */
export const PARAM_DESCRIPTIONS: Record<string, string> = {
  memberId: "The member's user id, from list_members",
  invitationId: "The invitation's id, from list_invitations",
  ruleId: "The prompt rule's id, from list_prompt_rules",
  skillId: "The skill's id, from list_skills",
  templateId: "The chat template's id, from list_chat_templates",
  keyId: "The API key's id, from list_api_keys",
  proposalId: "The SQL proposal's id, from list_sql_proposals (or the proposal an APPROVAL_REQUIRED answer names)",
  policyId: "The policy's id, from list_policies",
  groupId: "The policy group's id, from list_policy_groups",
  stfId: "The STF's id, from list_stfs",
  envKey: "The secret's name (an environment variable name), from list_stf_secrets",
  name: "The library's name, from list_stf_libraries (e.g. docx)",
  effectId: "The effect's id, from list_effects",
  workflowId: "The workflow's id, from list_workflows",
  runId: "The run's id, from list_workflow_runs (or the run id execute_workflow answers)",
  scheduleId: "The schedule's id, from list_workflow_schedules",
  hookId: "The webhook's id, from list_workflow_hooks",
  triggerId: "The trigger's id, from list_workflow_triggers",
  eventId: "The trigger event's id, from list_workflow_trigger_events",
  fileId: "The file's id, from list_files or search_files",
  docId: "The document's id, from list_documents",
  rootId: "The drive sync root's id, from list_drive_sync_roots",
  chartId: "The pinned chart's id, from list_pinned_charts",
  table: "The table's name, from list_tables",
};

/** Id arguments of bodies and queries, where the route's schema says nothing of them. */
export const ARGUMENT_DESCRIPTIONS: Record<string, string> = {
  as_user_id: 'Run as this member too (only rows you both may read): a user id from list_members',
  row_id: 'The id of one row you may read, to see which policy conditions it matches',
  policy_group_id: "The policy group's id, from list_policy_groups",
  ddl_policy_group_id: "The id of the policy group whose members may run DDL, from list_policy_groups",
  workflow_editor_policy_group_id: "The id of the policy group whose members may edit workflows, from list_policy_groups",
  policy_editor_policy_group_id: "The id of the policy group whose members may edit policies, from list_policy_groups",
  sql_approver_policy_group_id: "The id of the policy group whose members approve SQL proposals, from list_policy_groups",
  user_ids: 'User ids of the group, from list_members (replace the whole list)',
  stf_ids: "STF ids of the group, from list_stfs (replace the whole list)",
  stf_version_id: "The STF version's id, from list_stf_versions",
  stf_id: "The STF's id, from list_stfs (its newest version runs)",
  trigger_id: "A trigger's id, from list_workflow_triggers",
  file_ids: 'File ids, from list_files',
  drive_id: 'The folder or drive id, from drive_picker',
  shared_drive_id: 'The shared drive id, from drive_picker',
  drive_file_id: "The drive file's id, from drive_picker or the synced nodes of get_drive_sync_status",
  file_id: "A file's id, from list_files",
  user_id: "A user's id, from list_members",
  resource_id: 'The id of the resource the entries are about (a file, workflow, table…)',
  workspace_id: "The workspace's id, from list_workspaces",
};

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

/** The input schema with every described id argument described (the route's own description, when it has one, stays). */
export function describeArguments(schema: Schema, pathParams: readonly string[]): Schema {
  if (!schema.properties) return schema;
  const properties: Record<string, Record<string, unknown>> = {};
  for (const [name, s] of Object.entries(schema.properties)) {
    const described = pathParams.includes(name) ? PARAM_DESCRIPTIONS[name] : s.description === undefined ? ARGUMENT_DESCRIPTIONS[name] : undefined;
    properties[name] = described ? { ...s, description: described } : s;
  }
  return { ...schema, properties };
}

/** A tool's description: the one written here, or its route's summary as a sentence. */
export function describeTool(name: string, summary: string): string {
  return TOOL_DESCRIPTIONS[name] ?? (/[.!?]$/.test(summary) ? summary : `${summary}.`);
}
