import type { ErrorBody } from '@wds/errors';

/**
 * What a model should call after an error, added to a tool error's `details` over MCP (the REST envelope's code and
 * message are unchanged): a model reads the details, and a named tool is one it can call next.
 */
const NEXT: Partial<Record<string, string>> = {
  POLICY_DENIED:
    'explain_sql shows which policy decides and why; list_policies and list_policy_groups show the policies (an admin or policy editor changes them with create_policy / update_policy)',
  APPROVAL_REQUIRED: 'get_sql_proposal with wait waits for the approver',
  SCHEMA_ACCESS_DENIED: 'list_tables and describe_table show the tables of this workspace',
  INVALID_TABLE: 'list_tables names the tables of this workspace',
};

export function withNextStep(body: ErrorBody): ErrorBody {
  const next = NEXT[body.code];
  if (!next) return body;
  const details = body.details;
  if (details === undefined || details === null) return { ...body, details: `next: ${next}` };
  if (typeof details === 'string') return details.includes(next) ? body : { ...body, details: `${details}; next: ${next}` };
  return body;
}
