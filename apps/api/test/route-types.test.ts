import type { Uuid } from '@wds/db';
import type { Principal } from '@wds/identity';
import type { WorkspaceAccess } from '@wds/workspaces';
import { describe, expectTypeOf, it } from 'vitest';
import { type PathParams, defineRoute } from '../src/http/route.js';

// Compile-time properties of route declarations (`pnpm typecheck` checks them; the test run only runs them).
describe('route declarations type their handlers', () => {
  it('params come from the path: ids as Uuid, other names as string, nothing else', () => {
    expectTypeOf<PathParams<'/api/v1/workflows/:workflowId/runs/:runId'>>().toEqualTypeOf<{ workflowId: Uuid; runId: Uuid }>();
    expectTypeOf<PathParams<'/api/v1/workspaces/:id/stf-libraries/:name'>>().toEqualTypeOf<{ id: Uuid; name: string }>();
    expectTypeOf<PathParams<'/api/v1/auth/me'>>().toEqualTypeOf<{}>();
    defineRoute({
      method: 'get',
      path: '/api/v1/workflows/:workflowId',
      operation: 'get_workflow',
      summary: 'a misspelt parameter',
      auth: 'user',
      workspace: 'header',
      handler: async ({ params }) => {
        expectTypeOf(params.workflowId).toEqualTypeOf<Uuid>();
        // @ts-expect-error the path names workflowId, not workflowID
        return params.workflowID;
      },
    });
  });

  it('principal and access are there only when the route requires them', () => {
    defineRoute({
      method: 'get',
      path: '/api/v1/workflows',
      operation: 'list_workflows',
      summary: 'a member route',
      auth: 'user',
      workspace: 'header',
      handler: async (ctx) => {
        expectTypeOf(ctx.principal).toEqualTypeOf<Principal>();
        expectTypeOf(ctx.access).toEqualTypeOf<WorkspaceAccess>();
      },
    });
    defineRoute({
      method: 'get',
      path: '/api/v1/auth/me',
      operation: 'get_me',
      summary: 'signed in, outside a workspace',
      auth: 'session',
      handler: async (ctx) => {
        expectTypeOf(ctx.principal).toEqualTypeOf<Principal>();
        // @ts-expect-error no workspace: no access
        return ctx.access;
      },
    });
    defineRoute({
      method: 'post',
      path: '/api/v1/workflows/:workflowId/execute',
      operation: 'execute_workflow',
      summary: 'maybe anonymous',
      auth: 'optional',
      handler: async (ctx) => {
        expectTypeOf(ctx.principal).toEqualTypeOf<Principal | undefined>();
      },
    });
    defineRoute({
      method: 'get',
      path: '/admin/v1/users/:userId/sessions',
      operation: 'admin_create_session',
      summary: 'the admin token: no principal',
      auth: 'admin',
      handler: async (ctx) => {
        // @ts-expect-error admin routes have no principal
        return ctx.principal;
      },
    });
  });
});
