import { MAX_CREDENTIAL_BYTES, deleteCredential, putCredential } from '@wds/setup';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { withJsonSchema } from '../http/schemas.js';
import { secretBox } from '../http/secrets.js';

/**
 * Provider credentials of a workspace, set through the admin interface (docs/setup.md#provider-credentials). The value
 * is sealed with the service's secrets key and never appears in a response, log line or audit entry; members see only
 * which providers are connected (GET …/setup/saas-credentials).
 */
const path = '/admin/v1/workspaces/:id/credentials/:provider';


// Messages name the rule, never the value received.
const Value = v.pipe(
  v.string('must be a string (a token, or JSON text)'),
  v.minLength(1, 'must not be empty'),
  withJsonSchema(v.check<string, string>((s) => Buffer.byteLength(s) <= MAX_CREDENTIAL_BYTES, `at most ${MAX_CREDENTIAL_BYTES} bytes`), {
    description: `at most ${MAX_CREDENTIAL_BYTES} bytes of UTF-8`,
  }),
);

export const adminCredentialRoutes = [
  defineRoute({
    method: 'put',
    path,
    operation: 'admin_put_workspace_credential',
    summary: 'Store (or replace) a provider credential of a workspace, sealed at rest; body { value }',
    auth: 'admin',
    body: v.object({ value: Value }),
    status: 204,
    handler: async (ctx) => {
      const workspaceId = ctx.params.id;
      const provider = ctx.params.provider;
      const box = secretBox(ctx);
      await putCredential(ctx.db, box, workspaceId, provider, ctx.body.value);
      ctx.audit({ workspaceId, resourceId: provider, details: { provider } });
    },
  }),
  defineRoute({
    method: 'delete',
    path,
    operation: 'admin_delete_workspace_credential',
    summary: 'Remove a provider credential of a workspace',
    auth: 'admin',
    status: 204,
    handler: async (ctx) => {
      const workspaceId = ctx.params.id;
      const provider = ctx.params.provider;
      await deleteCredential(ctx.db, workspaceId, provider);
      ctx.audit({ workspaceId, resourceId: provider, details: { provider } });
    },
  }),
];
