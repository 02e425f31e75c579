import type { RuntimeName } from '@wds/stf-runtime';
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Timestamps are written as Date or ISO text and always read back as Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
/** Has a database default, and may be set on update. */
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string, string>;

export type Role = 'admin' | 'member';

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  jwt_subject: string | null;
  created_at: CreatedAt;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: CreatedAt;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
}

/** Who made a login link: the admin interface or `pnpm cli user login-link`. */
export type LoginLinkCreator = 'admin' | 'cli';

export interface LoginLinksTable {
  id: string;
  user_id: string;
  /** SHA-256 of the code (hex); the code itself is never stored. */
  code_hash: string;
  created_at: CreatedAt;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_by: LoginLinkCreator;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  token_hash: string;
  key_prefix: string;
  created_at: CreatedAt;
  expires_at: Timestamp | null;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface WorkspacesTable {
  id: string;
  name: string;
  ddl_policy_group_id: string | null;
  workflow_editor_policy_group_id: string | null;
  policy_editor_policy_group_id: string | null;
  mcp_timeout_ms: Generated<number>;
  custom_prompt: Generated<string>;
  auto_embed_files: Generated<boolean>;
  auto_embed_tables: Generated<boolean>;
  dashboard_enabled: Generated<boolean>;
  sql_approval_mode: Generated<SqlApprovalMode>;
  sql_approval_applies_to: Generated<SqlApprovalAppliesTo>;
  sql_approver_policy_group_id: string | null;
  sql_self_approval: Generated<boolean>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

/** Which statements wait for approval (docs/approvals.md#modes). */
export const SQL_APPROVAL_MODES = ['none', 'write_only', 'ddl_only', 'all'] as const;
export type SqlApprovalMode = (typeof SQL_APPROVAL_MODES)[number];
/** Whose statements wait: `agents` (API keys and MCP sessions) or `everyone`. */
export const SQL_APPROVAL_APPLIES_TO = ['agents', 'everyone'] as const;
export type SqlApprovalAppliesTo = (typeof SQL_APPROVAL_APPLIES_TO)[number];

export interface MembershipsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  role: Role;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface InvitationsTable {
  id: string;
  workspace_id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: CreatedAt;
  accepted_at: Timestamp | null;
  cancelled_at: Timestamp | null;
}

export interface RedirectUrisTable {
  id: string;
  workspace_id: string;
  redirect_uri: string;
  created_at: CreatedAt;
}

export interface PolicyGroupsTable {
  id: string;
  workspace_id: string;
  name: string;
  user_ids: Generated<string[]>;
  stf_ids: Generated<string[]>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface AuditLogsTable {
  id: string;
  workspace_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Json;
  request_id: string | null;
  /** Which interface the operation came through; null for the service's own work (migration 0010). */
  transport: 'http' | 'mcp' | null;
  created_at: CreatedAt;
}

export interface PoliciesTable {
  id: string;
  workspace_id: string;
  policy_group_id: string;
  name: string;
  mode: 'allow' | 'deny';
  table_name: string;
  operation: 'select' | 'insert' | 'update' | 'delete';
  condition: ColumnType<unknown, string | null, string | null>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface StfsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  is_public: Generated<boolean>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

export interface StfVersionsTable {
  id: string;
  stf_id: string;
  workspace_id: string;
  version: string;
  runtime: RuntimeName;
  code: Buffer;
  input_schema: ColumnType<unknown, string | null, string | null>;
  output_schema: ColumnType<unknown, string | null, string | null>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface StfSecretsTable {
  stf_id: string;
  env_key: string;
  sealed_value: Buffer;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface EffectsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

export interface EffectVersionsTable {
  id: string;
  effect_id: string;
  workspace_id: string;
  version: string;
  url: string;
  method: string;
  header_mappings: Json;
  body_mappings: Json;
  query_mappings: Json;
  input_schema: ColumnType<unknown, string | null, string | null>;
  timeout_secs: number | null;
  retries: Generated<number>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface WorkflowsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  allow_anonymous_execute: Generated<boolean>;
  definition: Json;
  /**
   * The version each unpinned step of its schedules, hooks and triggers runs: the newest when the workflow was last
   * saved (migration 0019; @wds/workflows AcceptedVersions), never one another editor added since.
   */
  accepted_versions: ColumnType<unknown, string | null | undefined, string | null>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

export type WorkflowRunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export type WorkflowRunTrigger = 'request' | 'async' | 'schedule' | 'webhook' | 'event';

/** A cron schedule of a workflow (migration 0013); it runs as its creator. */
export interface WorkflowSchedulesTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  name: string;
  /** Five fields (minute …), or six with seconds first; `timezone` an IANA name. */
  cron: string;
  timezone: string;
  /** The run's `$input`. */
  input: ColumnType<unknown, string | null, string | null>;
  paused: ColumnType<boolean, boolean | undefined, boolean>;
  created_by: string;
  /** The tick it fires at next (while paused: the one it would). */
  next_run_at: Timestamp;
  last_run_at: Timestamp | null;
  last_run_id: string | null;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** An inbound webhook of a workflow (migration 0014); it runs as its creator. */
export interface WorkflowHooksTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  name: string;
  /** The signing secret, sealed with SECRETS_KEY (associated data `hook:<id>`). */
  secret_sealed: Buffer;
  paused: ColumnType<boolean, boolean | undefined, boolean>;
  created_by: string;
  secret_rotated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** A delivery of a hook that carried a delivery id: a redelivery answers the same run. */
export interface WorkflowHookDeliveriesTable {
  hook_id: string;
  delivery_id: string;
  run_id: string;
  received_at: CreatedAt;
}

export type WorkflowTriggerEvent = 'file_uploaded' | 'document_changed' | 'row_inserted' | 'row_updated' | 'row_deleted';

/** An event trigger of a workflow (migration 0015); its runs run as its creator. */
export interface WorkflowTriggersTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  name: string;
  event: WorkflowTriggerEvent;
  /** Row events: the table's logical name. */
  table_name: string | null;
  paused: ColumnType<boolean, boolean | undefined, boolean>;
  created_by: string;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** Rows a statement changed in a workspace table (migration 0016): one batch per statement, realtime's and row triggers' source. */
export interface RowChangesTable {
  id: Generated<string>;
  batch: string;
  workspace_id: string;
  /** The table's logical name when the statement ran. */
  table_name: string;
  op: 'insert' | 'update' | 'delete';
  /** The row as written (insert, update). */
  row: unknown;
  /** The row before (update, delete). */
  old: unknown;
  /** A live row trigger waited for it when it was captured; cleared once dispatched. */
  needs_dispatch: ColumnType<boolean, boolean | undefined, boolean>;
  /** After a failed policy check: not tried again before. */
  dispatch_after: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: CreatedAt;
}

/** One event for one trigger (the outbox), and how its delivery goes. */
export interface WorkflowEventsTable {
  id: string;
  trigger_id: string;
  workspace_id: string;
  workflow_id: string;
  event: ColumnType<unknown, string, string>;
  status: 'pending' | 'running' | 'succeeded' | 'dead';
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  run_id: string | null;
  last_error: ColumnType<unknown, string | null | undefined, string | null>;
  /** Row events: the user whose select policy chose the rows (migration 0016). */
  owner_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface WorkflowRunsTable {
  id: string;
  workflow_id: string;
  workspace_id: string;
  status: WorkflowRunStatus;
  executed_by: string | null;
  input: ColumnType<unknown, string | null, string | null>;
  output: ColumnType<unknown, string | null, string | null>;
  error: ColumnType<unknown, string | null, string | null>;
  steps: ColumnType<unknown, string | undefined, string>;
  /** When it started running (a queued run: set again when a process claims it). */
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: Timestamp | null;
  duration_ms: number | null;
  /** The instance id of the process running it (null for runs recorded before 0009). */
  owner: string | null;
  /** Last time its process marked it alive while running; a sweep fails a running run whose heartbeat stopped. */
  heartbeat_at: Timestamp | null;
  /** What started it (migration 0012): a request waiting for it, an async request, a schedule, a webhook, an event. */
  trigger: ColumnType<WorkflowRunTrigger, WorkflowRunTrigger | undefined, WorkflowRunTrigger>;
  /** The schedule, hook or event trigger that started it. */
  trigger_id: string | null;
  /** When it was queued (runs that did not start at once). */
  queued_at: Timestamp | null;
  /** When a cancel was asked while it ran; its process stops it before its next step. */
  cancel_requested_at: Timestamp | null;
  /** An async run: the versions (and steps) of the moment it was asked for, which it runs (migration 0019). */
  accepted_versions: ColumnType<unknown, string | null | undefined, string | null>;
  /** How many times a process took it up (migration 0021; null: recorded before, ran once). */
  attempts: number | null;
  /** What it is the delivery of (event, schedule tick, hook delivery, the run itself): its effects' keys derive from it. */
  origin: string | null;
  /** The finished steps' outputs while it is in progress, so a resumed attempt does not run them again. */
  checkpoint: ColumnType<unknown, string | null | undefined, string | null>;
  /** Each step's input and output, masked and capped (migration 0026); apart from `steps`, which lists answer. */
  step_data: ColumnType<unknown, string | null | undefined, string | null>;
  /** The run a rerun repeats (migration 0026). */
  rerun_of: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface FilesTable {
  id: string;
  workspace_id: string;
  filename: string;
  content_type: string;
  /** bigint: read back as a string by pg; the storage package converts. */
  size: ColumnType<string, number | string, number | string>;
  sha256: string;
  blob_key: string;
  metadata: Json;
  created_by: string | null;
  created_at: CreatedAt;
  deleted_at: Timestamp | null;
}

export interface DocumentsTable {
  id: string;
  workspace_id: string;
  title: string;
  doc_type: string;
  status: string;
  content: string;
  metadata: Json;
  version: Generated<number>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

export interface DocumentVersionsTable {
  id: string;
  document_id: string;
  workspace_id: string;
  version: number;
  title: string;
  content: string;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface PinnedChartsTable {
  id: string;
  workspace_id: string;
  title: string;
  sql_query: string;
  chart_type: string;
  x_axis_column: string | null;
  y_axis_columns: ColumnType<unknown, string | null, string | null>;
  display_order: Generated<number>;
  description: string | null;
  is_visible: Generated<boolean>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  deleted_at: Timestamp | null;
}

export interface PromptRulesTable {
  id: string;
  workspace_id: string;
  content: string;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface SkillsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  content: string;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface TitleRulesTable {
  workspace_id: string;
  content: string;
  updated_by: string | null;
  updated_at: UpdatedAt;
}

export interface ChatTemplatesTable {
  id: string;
  workspace_id: string;
  name: string;
  content: string;
  is_active: Generated<boolean>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface WorkspaceCredentialsTable {
  workspace_id: string;
  provider: string;
  sealed_value: Buffer;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export type EmbeddingSurface = 'file' | 'table_row' | 'column';
export type EmbeddingStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'skipped';

export interface EmbeddingItemsTable {
  id: string;
  workspace_id: string;
  surface: EmbeddingSurface;
  file_id: string | null;
  table_name: string | null;
  row_id: string | null;
  column_name: string | null;
  target_key: string;
  status: ColumnType<EmbeddingStatus, EmbeddingStatus | undefined, EmbeddingStatus>;
  error: string | null;
  content_hash: string | null;
  model: string | null;
  dimensions: number | null;
  attempts: Generated<number>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
  started_at: Timestamp | null;
  completed_at: Timestamp | null;
}

/** The last table-row embedding request of a table, and how far its job got (migration 0009). */
export interface EmbeddingTablesTable {
  workspace_id: string;
  table_name: string;
  requested_at: ColumnType<Date, Date | string | undefined, Date | string>;
  force: ColumnType<boolean, boolean | undefined, boolean>;
  reconciled_at: Timestamp | null;
  failed_at: Timestamp | null;
  error: string | null;
}

/** The optional pgvector column `embedding_v` is not listed: it exists only where pgvector does. */
export interface EmbeddingChunksTable {
  item_id: string;
  chunk_index: number;
  workspace_id: string;
  content: string;
  embedding: number[];
}

/**
 * A counter per workspace and surface, bumped in the transaction of every change to its chunks (migration 0011):
 * in-process copies of the vectors compare it to know they are current.
 */
export interface EmbeddingGenerationsTable {
  workspace_id: string;
  surface: EmbeddingSurface;
  /** bigint: read back as a number (the int8 parser of connect.ts). */
  generation: number;
}

export type DriveSyncState = 'idle' | 'queued' | 'running' | 'completed' | 'failed';

export interface DriveSyncConfigsTable {
  workspace_id: string;
  settings: ColumnType<unknown, string | undefined, string>;
  state: ColumnType<DriveSyncState, DriveSyncState | undefined, DriveSyncState>;
  last_synced_at: Timestamp | null;
  last_sync_error: string | null;
  sync_id: string | null;
  updated_at: UpdatedAt;
}

export interface DriveSyncRootsTable {
  id: string;
  workspace_id: string;
  drive_id: string;
  drive_type: 'folder' | 'shared_drive' | 'my_drive';
  name: string;
  shared_drive_id: string | null;
  created_at: CreatedAt;
}

/** What a proposal's row stores: `expired` is not stored but read (a pending proposal past `expires_at`). */
export type StoredProposalStatus = 'pending' | 'approved' | 'executed' | 'failed' | 'rejected';

export interface SqlProposalsTable {
  id: string;
  workspace_id: string;
  proposed_by: string;
  credential_kind: 'session' | 'jwt' | 'api_key';
  api_key_id: string | null;
  api_key_name: string | null;
  via_mcp: boolean;
  original_sql: string;
  transformed_sql: string;
  sql_sha256: string;
  operation: string;
  affected_tables: string[];
  status: Generated<StoredProposalStatus>;
  decided_by: string | null;
  decided_at: Timestamp | null;
  decision_comment: string | null;
  /** bigint: read back as a number (the int8 parser of connect.ts). */
  affected_rows: ColumnType<number | null, number | null, number | null>;
  executed_sql: string | null;
  error_code: string | null;
  error_message: string | null;
  finished_at: Timestamp | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

export interface DriveNodesTable {
  workspace_id: string;
  root_id: string;
  drive_file_id: string;
  name: string;
  mime_type: string;
  parent_id: string | null;
  modified_time: Timestamp | null;
  /** bigint: read back as a number (the int8 parser of connect.ts). */
  size: ColumnType<number | string | null, number | string | null, number | string | null>;
  sync_id: string;
}

/** Service tables live in schema `platform`; Kysely sees them as `platform.<table>`. */
export interface Database {
  'platform.users': UsersTable;
  'platform.sessions': SessionsTable;
  'platform.login_links': LoginLinksTable;
  'platform.api_keys': ApiKeysTable;
  'platform.workspaces': WorkspacesTable;
  'platform.memberships': MembershipsTable;
  'platform.invitations': InvitationsTable;
  'platform.redirect_uris': RedirectUrisTable;
  'platform.policy_groups': PolicyGroupsTable;
  'platform.policies': PoliciesTable;
  'platform.stfs': StfsTable;
  'platform.stf_versions': StfVersionsTable;
  'platform.stf_secrets': StfSecretsTable;
  'platform.effects': EffectsTable;
  'platform.effect_versions': EffectVersionsTable;
  'platform.workflows': WorkflowsTable;
  'platform.workflow_runs': WorkflowRunsTable;
  'platform.workflow_schedules': WorkflowSchedulesTable;
  'platform.workflow_hooks': WorkflowHooksTable;
  'platform.workflow_hook_deliveries': WorkflowHookDeliveriesTable;
  'platform.workflow_triggers': WorkflowTriggersTable;
  'platform.workflow_events': WorkflowEventsTable;
  'platform.row_changes': RowChangesTable;
  'platform.files': FilesTable;
  'platform.documents': DocumentsTable;
  'platform.document_versions': DocumentVersionsTable;
  'platform.pinned_charts': PinnedChartsTable;
  'platform.prompt_rules': PromptRulesTable;
  'platform.skills': SkillsTable;
  'platform.title_rules': TitleRulesTable;
  'platform.chat_templates': ChatTemplatesTable;
  'platform.workspace_credentials': WorkspaceCredentialsTable;
  'platform.embedding_items': EmbeddingItemsTable;
  'platform.embedding_chunks': EmbeddingChunksTable;
  'platform.embedding_tables': EmbeddingTablesTable;
  'platform.embedding_generations': EmbeddingGenerationsTable;
  'platform.drive_sync_configs': DriveSyncConfigsTable;
  'platform.drive_sync_roots': DriveSyncRootsTable;
  'platform.drive_nodes': DriveNodesTable;
  'platform.audit_logs': AuditLogsTable;
  'platform.sql_proposals': SqlProposalsTable;
}

export type User = Selectable<UsersTable>;
export type Workspace = Selectable<WorkspacesTable>;
export type WorkspaceUpdate = Updateable<WorkspacesTable>;
export type Membership = Selectable<MembershipsTable>;
export type SqlProposalRow = Selectable<SqlProposalsTable>;
export type Invitation = Selectable<InvitationsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type PolicyRow = Selectable<PoliciesTable>;
export type PolicyGroupRow = Selectable<PolicyGroupsTable>;
export type StfRow = Selectable<StfsTable>;
export type StfVersionRow = Selectable<StfVersionsTable>;
export type EffectRow = Selectable<EffectsTable>;
export type EffectVersionRow = Selectable<EffectVersionsTable>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type WorkflowScheduleRow = Selectable<WorkflowSchedulesTable>;
export type WorkflowHookRow = Selectable<WorkflowHooksTable>;
export type WorkflowTriggerRow = Selectable<WorkflowTriggersTable>;
export type WorkflowEventRow = Selectable<WorkflowEventsTable>;
export type WorkflowRunRow = Selectable<WorkflowRunsTable>;
export type FileRow = Selectable<FilesTable>;
export type DocumentRow = Selectable<DocumentsTable>;
export type DocumentVersionRow = Selectable<DocumentVersionsTable>;
export type PinnedChartRow = Selectable<PinnedChartsTable>;
export type PromptRuleRow = Selectable<PromptRulesTable>;
export type SkillRow = Selectable<SkillsTable>;
export type ChatTemplateRow = Selectable<ChatTemplatesTable>;
export type EmbeddingItemRow = Selectable<EmbeddingItemsTable>;
export type AuditLog = Selectable<AuditLogsTable>;
export type NewAuditLog = Insertable<AuditLogsTable>;
