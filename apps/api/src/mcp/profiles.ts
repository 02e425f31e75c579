import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { badRequest } from '@wds/errors';
import { type Principal, isInteractiveLogin } from '@wds/identity';
import type { AnyRoute } from '../http/route.js';

/**
 * Which tools a session lists and may call (docs/mcp.md#tool-sets). Chosen once, at initialize, from the `/mcp` URL's
 * query (`features`, `tools`, `read_only`) or the headers `X-MCP-Features`, `X-MCP-Tools`, `X-MCP-Read-Only`, and
 * narrowed to what the credential can ever run. Hiding a tool is a courtesy to the model's context, never a guard: a
 * listed tool's call still goes through the route's own authentication and role checks.
 */

/** The tools every session needs to find its way: who am I, which workspaces, which one is chosen. */
export const CORE_TOOLS = ['list_workspaces', 'get_workspace', 'set_workspace', 'get_current_workspace'] as const;

export const FEATURES = ['sql', 'files', 'documents', 'workflows', 'stfs', 'embeddings', 'setup', 'admin', 'drive', 'saas', 'approvals'] as const;
export type Feature = (typeof FEATURES)[number];

/** Tools by name (beyond the prefix rules below) that belong to a group. */
const NAMED: Record<string, Feature | 'core'> = {
  get_me: 'core',
  list_workspaces: 'core',
  get_workspace: 'core',
  set_workspace: 'core',
  get_current_workspace: 'core',
  query_sql: 'sql',
  list_tables: 'sql',
  describe_table: 'sql',
  execute_sql: 'sql',
  preview_sql: 'sql',
  explain_sql: 'sql',
  propose_sql: 'approvals',
  list_sql_proposals: 'approvals',
  get_sql_proposal: 'approvals',
  approve_sql_proposal: 'approvals',
  reject_sql_proposal: 'approvals',
  search_files: 'files',
  list_saas_credentials: 'saas',
  saas_proxy: 'saas',
  saas_proxy_download: 'saas',
  create_workspace: 'admin',
  update_workspace: 'admin',
  delete_workspace: 'admin',
  list_audit_logs: 'admin',
};

/** The group of the remaining tools, by the resource their name is about (first match wins). */
const BY_PATTERN: [RegExp, Feature][] = [
  [/_pinned_charts?$/, 'sql'],
  [/_polic(y|ies)(_groups?)?$/, 'admin'],
  [/_(member|members|invitation|invitations|redirect_uri|redirect_uris|api_key|api_keys)$/, 'admin'],
  [/(_drive_|drive_picker$)/, 'drive'],
  [/embedding|^search_tables$|^embed_/, 'embeddings'],
  [/_(prompt_rules?|skills?|title_rule|chat_templates?|dashboard_enabled)$/, 'setup'],
  [/_file$|_files$|_file_text$/, 'files'],
  [/_documents?(_versions|_section)?$/, 'documents'],
  [/_stfs?(_versions?|_secrets?|_libraries|_library_types)?$|^describe_stf$|^instant_run_stf$/, 'stfs'],
  [/workflow|_effects?(_versions?)?$/, 'workflows'],
];

/** The group a tool belongs to; a tool no rule places is a mistake the profile test reports. */
export function featureOf(name: string): Feature | 'core' | undefined {
  const named = NAMED[name];
  if (named) return named;
  return BY_PATTERN.find(([re]) => re.test(name))?.[1];
}

/**
 * The default profile: the common work of an agent in one workspace, at most 40 tools (Cursor warns above 40).
 * Reading and querying data, files and documents, running workflows and STFs, and asking for approval; the
 * configuration of a workspace (setup, admin, policies' writes, drive, SaaS, embeddings' upkeep, schedules, hooks,
 * triggers, effects, versions) is left to `features=…` (docs/mcp.md#tool-sets says why each is in or out).
 */
export const DEFAULT_TOOLS: readonly string[] = [
  ...CORE_TOOLS,
  // sql: the read tools hosts may auto-approve, then the writes and their dry runs
  'query_sql',
  'list_tables',
  'describe_table',
  'execute_sql',
  'preview_sql',
  'explain_sql',
  // approvals: a held statement, its proposal, and an approver's answer
  'propose_sql',
  'list_sql_proposals',
  'get_sql_proposal',
  'approve_sql_proposal',
  'reject_sql_proposal',
  // files
  'list_files',
  'get_file',
  'upload_file',
  'download_file',
  'extract_file_text',
  'search_files',
  // documents
  'list_documents',
  'get_document',
  'create_document',
  'update_document',
  'replace_document_section',
  // workflows: find and run one, follow or stop its runs (writing workflows is features=workflows: their step
  // schemas alone are ~1,600 tokens)
  'list_workflows',
  'get_workflow',
  'execute_workflow',
  'list_workflow_runs',
  'get_workflow_run',
  'cancel_workflow_run',
  // stfs: find, write and try code
  'list_stfs',
  'get_stf',
  'create_stf',
  'instant_run_stf',
  'list_stf_libraries',
  // rows by meaning, and why a statement was denied
  'search_tables',
  'list_policies',
];

export const MAX_DEFAULT_TOOLS = 40;

/** What the caller asked for at initialize. */
export interface ToolRequest {
  features: string[];
  tools: string[];
  readOnly: boolean;
}

const listOf = (...values: (string | undefined)[]) =>
  values
    .flatMap((v) => (v ?? '').split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');

const truthy = (v: string | undefined) => v !== undefined && ['true', '1', 'yes'].includes(v.trim().toLowerCase());

/** The query string's and the headers' forms, joined (either may be used; both add up). */
export function toolRequestOf(url: string, header: (name: string) => string | undefined): ToolRequest {
  const q = new URL(url).searchParams;
  return {
    features: listOf(...q.getAll('features'), header('x-mcp-features')),
    tools: listOf(...q.getAll('tools'), header('x-mcp-tools')),
    readOnly: q.getAll('read_only').some(truthy) || truthy(header('x-mcp-read-only')),
  };
}

/** Where a tool comes from: a route, or the session tools MCP adds (no route). */
export interface ListedTool {
  tool: Tool;
  route: AnyRoute | undefined;
}

/**
 * Whether the credential could ever run the tool: session-only routes for session tokens, interactive-login routes
 * for logins, admin-role routes for admins (when the connection's workspace is known at initialize).
 */
export function credentialMayRun(route: AnyRoute | undefined, principal: Principal, role: string | undefined): boolean {
  if (!route) return true;
  if (route.auth === 'session' && principal.kind !== 'session') return false;
  if (route.auth === 'login' && !isInteractiveLogin(principal)) return false;
  if (route.role === 'admin' && role !== undefined && role !== 'admin') return false;
  return true;
}

/**
 * The session's tools, in the order of `all`: 400 for a feature or tool name that does not exist (a typo would
 * otherwise silently give a smaller set).
 */
export function selectTools(all: readonly ListedTool[], request: ToolRequest, principal: Principal, role: string | undefined): Tool[] {
  const names = new Set(all.map((t) => t.tool.name));
  const unknownFeatures = request.features.filter((f) => f !== 'all' && f !== 'default' && f !== 'core' && !(FEATURES as readonly string[]).includes(f));
  if (unknownFeatures.length) {
    throw badRequest(`Unknown MCP feature ${unknownFeatures.join(', ')}`, `features are all, default, ${FEATURES.join(', ')}`);
  }
  const unknownTools = request.tools.filter((t) => !names.has(t));
  if (unknownTools.length) throw badRequest(`Unknown MCP tool ${unknownTools.join(', ')}`, 'features=all lists every tool');

  const wanted = new Set<string>();
  const everything = request.features.includes('all');
  if (request.features.length === 0 && request.tools.length === 0) for (const n of DEFAULT_TOOLS) wanted.add(n);
  if (request.features.includes('default')) for (const n of DEFAULT_TOOLS) wanted.add(n);
  for (const t of all) {
    const f = featureOf(t.tool.name);
    // Any features=… selection has the core tools (finding and choosing the workspace).
    const core = f === 'core' && request.features.length > 0;
    if (everything || core || (f !== undefined && request.features.includes(f))) wanted.add(t.tool.name);
  }
  for (const n of request.tools) wanted.add(n);

  return all
    .filter((t) => wanted.has(t.tool.name))
    .filter((t) => !request.readOnly || t.tool.annotations?.readOnlyHint === true || SESSION_ONLY.has(t.tool.name))
    .filter((t) => credentialMayRun(t.route, principal, role))
    .map((t) => t.tool);
}

/** Tools that change only the MCP session (never data): kept in read-only sessions, or one could not choose a workspace. */
const SESSION_ONLY = new Set(['set_workspace']);
