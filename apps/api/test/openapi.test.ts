import { ERROR_STATUS } from '@wds/errors';
import * as v from 'valibot';
import { describe, expect, test as unit } from 'vitest';
import { routes } from '../src/app.js';
import { DOCS_ASSETS } from '../src/http/docs-page.js';
import { OpenApiSchemaError, buildOpenApi } from '../src/http/openapi.js';
import { defineRoute } from '../src/http/route.js';
import { withJsonSchema } from '../src/http/schemas.js';
import { test } from './support.js';

/** A JSON document walked by path. */
type Json = any;
const doc: Json = buildOpenApi(routes);
const op = (method: string, path: string): Json => doc.paths[path][method];
const param = (o: Json, name: string, where: string): Json => o.parameters.find((p: Json) => p.name === name && p.in === where);
const operations = (): [string, string, Json][] =>
  Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, o]) => [method, path, o] as [string, string, Json]),
  );

describe('OpenAPI document', () => {
  unit('an open object says so (additionalProperties), so generated clients do not type it as an empty record', () => {
    const closed: string[] = [];
    const walk = (o: unknown, at: string): void => {
      if (!o || typeof o !== 'object') return;
      const s = o as Record<string, unknown>;
      if (s.type === 'object' && s.properties === undefined && s.additionalProperties === undefined) closed.push(at);
      for (const [k, v] of Object.entries(s)) walk(v, `${at}/${k}`);
    };
    walk(doc, '');
    expect(closed).toEqual([]);
  });

  unit('query parameters are typed from their declared bounds: integers and booleans, not strings', () => {
    const limit = param(op('get', '/api/v1/workspaces/{id}/files'), 'limit', 'query');
    expect(limit.schema).toEqual({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
    const textLimit = param(op('get', '/api/v1/workspaces/{id}/files/{fileId}/text'), 'limit', 'query');
    expect(textLimit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1_000_000, default: 100_000 });
    expect(param(op('get', '/api/v1/pinned-charts'), 'include_hidden', 'query').schema.type).toBe('boolean');
    // No digits-only string is left anywhere: every intQuery reads as an integer.
    for (const [method, path, o] of operations()) {
      for (const p of (o.parameters ?? []) as Json[]) {
        if (p.in !== 'query') continue;
        expect(p.schema.pattern, `${method} ${path} ${p.name}`).not.toBe('^\\d+$');
        expect(p.schema.enum, `${method} ${path} ${p.name}`).not.toEqual(['true', 'false']);
        if (p.name === 'limit' || p.name === 'offset') expect(p.schema.type, `${method} ${path} ${p.name}`).toBe('integer');
      }
    }
  });

  unit('path ids are UUIDs; other path parameters plain strings', () => {
    expect(param(op('get', '/api/v1/workspaces/{id}/files/{fileId}'), 'fileId', 'path').schema).toEqual({ type: 'string', format: 'uuid' });
    expect(param(op('get', '/api/v1/workspaces/{id}/members'), 'id', 'path').schema.format).toBe('uuid');
    expect(param(op('get', '/api/v1/stf-libraries/{name}/types'), 'name', 'path').schema).toEqual({ type: 'string' });
    for (const [method, path, o] of operations()) {
      for (const p of (o.parameters ?? []) as Json[]) {
        if (p.in === 'path' && (p.name === 'id' || p.name.endsWith('Id'))) expect(p.schema.format, `${method} ${path} ${p.name}`).toBe('uuid');
      }
    }
  });

  unit('operationIds are unique over the whole document', () => {
    const ids = operations().map(([, , o]) => o.operationId);
    expect(ids.every((id) => typeof id === 'string' && id !== '')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(op('post', '/api/v1/workspaces/{id}/files').operationId).toBe('upload_file');
    expect(op('post', '/api/v1/workspaces/{id}/files/multipart').operationId).toBe('upload_file_multipart');
  });

  unit('a second route with a taken operationId is refused', () => {
    const upload = routes.find((r) => r.path === '/api/v1/workspaces/:id/files/multipart');
    expect(upload).toBeDefined();
    const clash = { ...upload, openapi: { ...upload?.openapi, operationId: 'upload_file' } } as typeof routes[number];
    expect(() => buildOpenApi([...routes.filter((r) => r !== upload), clash])).toThrow(/operationId upload_file is taken/);
  });

  unit('both uploads declare their request bodies', () => {
    const json = op('post', '/api/v1/workspaces/{id}/files').requestBody;
    expect(json.required).toBe(true);
    const schema = json.content['application/json'].schema;
    expect(schema.required).toEqual(['filename', 'content']);
    expect(schema.properties.content).toMatchObject({ type: 'string', contentEncoding: 'base64' });
    const multipart = op('post', '/api/v1/workspaces/{id}/files/multipart').requestBody.content['multipart/form-data'].schema;
    expect(multipart.required).toEqual(['file']);
    expect(multipart.properties.file.contentMediaType).toBe('application/octet-stream');
    expect(op('post', '/api/v1/workspaces/{id}/files').responses['413']).toEqual({ $ref: '#/components/responses/Error413' });
  });

  unit('workflow execute: X-Workspace-ID header, any-JSON body, X-Workflow-Run-Id response header', () => {
    const execute = op('post', '/api/v1/workflows/{workflowId}/execute');
    expect(param(execute, 'X-Workspace-ID', 'header')).toMatchObject({ required: true, schema: { type: 'string', format: 'uuid' } });
    expect(execute.requestBody.required).toBe(false);
    expect(execute.requestBody.content['application/json'].schema).toEqual({});
    expect(execute.responses['200'].headers['X-Workflow-Run-Id']).toBeDefined();
    expect(execute.responses['422']).toBeDefined();
    // Every header-scoped route requires the header; path-scoped ones accept it.
    for (const r of routes.filter((x) => x.workspace === 'header')) {
      const o = op(r.method, r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
      expect(param(o, 'X-Workspace-ID', 'header')?.required, `${r.method} ${r.path}`).toBe(true);
    }
    expect(param(op('get', '/api/v1/workspaces/{id}/members'), 'X-Workspace-ID', 'header').required).toBe(false);
  });

  unit('one Error schema with the closed code enum; per-status error responses on every operation', () => {
    const error = doc.components.schemas.Error;
    expect(error.required).toEqual(['error', 'code']);
    expect(error.properties.code.enum).toEqual(Object.keys(ERROR_STATUS));
    expect(Object.keys(error.properties)).toEqual(['error', 'code', 'details']);
    const r404 = doc.components.responses.Error404.content['application/json'].schema;
    expect(r404.allOf[0]).toEqual({ $ref: '#/components/schemas/Error' });
    expect(r404.allOf[1].properties.code.enum).toEqual(['NOT_FOUND']);
    for (const r of routes) {
      const o = op(r.method, r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
      expect(o.responses.default, `${r.method} ${r.path}`).toEqual({ $ref: '#/components/responses/Error' });
      expect(o.responses['400']).toBeDefined();
      expect(o.responses['429']).toBeDefined();
      if (r.auth !== 'none') {
        expect(o.responses['401'], `${r.method} ${r.path}`).toBeDefined();
        expect(o.responses['403'], `${r.method} ${r.path}`).toBeDefined();
      }
    }
    // Every $ref to a response resolves.
    const refs = JSON.stringify(doc).match(/#\/components\/responses\/[A-Za-z0-9]+/g) ?? [];
    for (const ref of new Set(refs)) expect(doc.components.responses[ref.split('/').pop() as string], ref).toBeDefined();
  });

  unit('servers, health paths and the document itself are listed', () => {
    expect(doc.servers).toEqual([{ url: '/', description: 'This server' }]);
    for (const p of ['/healthz', '/readyz', '/api/v1/openapi.json', '/api/v1/docs']) expect(doc.paths[p]?.get, p).toBeDefined();
    expect(doc.paths['/readyz'].get.responses['503']).toBeDefined();
  });

  unit('security schemes tell session-only, any-credential, admin and anonymous operations apart', () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminToken', 'bearer', 'login', 'session']);
    const securityOf = (auth: string) => routes.filter((r) => r.auth === auth).map((r) => op(r.method, r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')).security);
    for (const s of securityOf('session')) expect(s).toEqual([{ session: [] }]);
    expect(securityOf('login')).toEqual([[{ login: [] }]]);
    for (const s of securityOf('user')) expect(s).toEqual([{ bearer: [] }]);
    for (const s of securityOf('admin')) expect(s).toEqual([{ adminToken: [] }]);
    for (const s of securityOf('optional')) expect(s).toEqual([{}, { bearer: [] }]);
    expect(op('post', '/api/v1/auth/token').security).toEqual([]);
  });

  unit('downloads declare their bodies, Range and 206/416', () => {
    const download = op('get', '/api/v1/workspaces/{id}/files/{fileId}/download');
    expect(param(download, 'Range', 'header')).toBeDefined();
    expect(Object.keys(download.responses)).toEqual(expect.arrayContaining(['200', '206', '416']));
    expect(download.responses['206'].headers['Content-Range']).toBeDefined();
    expect(download.responses['200'].content['*/*'].schema.contentMediaType).toBe('application/octet-stream');
    expect(op('get', '/api/v1/stf-libraries/{name}/types').responses['200'].content['text/plain']).toBeDefined();
  });

  unit('the core operations declare their success bodies, with named views as components', () => {
    const body = (method: string, path: string, status = '200'): Json => op(method, path).responses[status].content['application/json'].schema;
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const view = (name: string): Json => doc.components.schemas[name];
    expect(body('post', '/api/v1/workspaces', '201')).toEqual(ref('Workspace'));
    expect(body('get', '/api/v1/workspaces')).toEqual({ type: 'array', items: ref('WorkspaceWithRole') });
    expect(body('get', '/api/v1/workspaces/{id}')).toEqual(ref('WorkspaceWithRole'));
    expect(view('Workspace').required).toEqual(expect.arrayContaining(['id', 'name', 'mcp_timeout_ms', 'created_at', 'updated_at']));
    expect(view('WorkspaceWithRole').required).toContain('role');
    expect(view('Workspace').properties.id).toEqual({ type: 'string', format: 'uuid' });
    expect(view('Workspace').properties.created_at).toEqual({ type: 'string', format: 'date-time' });
    // execute_sql: rows of a read, or the count of a write.
    expect(body('post', '/api/v1/workspaces/{id}/sql')).toEqual(ref('SqlResult'));
    const [read, write] = view('SqlResult').anyOf;
    expect(read.required).toEqual(['rows', 'executed_sql']);
    expect(write.required).toEqual(['affected_rows', 'executed_sql']);
    expect(body('post', '/api/v1/workspaces/{id}/sql/preview')).toEqual(ref('SqlPreview'));
    expect(view('SqlPreview').required).toEqual(
      expect.arrayContaining(['proposal_id', 'original_sql', 'transformed_sql', 'operation', 'affected_tables', 'requires_approval']),
    );
    expect(body('post', '/api/v1/policy-groups', '201')).toEqual(ref('PolicyGroup'));
    expect(body('get', '/api/v1/policy-groups')).toEqual({ type: 'array', items: ref('PolicyGroup') });
    expect(view('PolicyGroup').required).toEqual(expect.arrayContaining(['id', 'name', 'user_ids', 'stf_ids']));
    expect(body('post', '/api/v1/policies', '201')).toEqual(ref('Policy'));
    expect(body('get', '/api/v1/policies')).toEqual({ type: 'array', items: ref('Policy') });
    expect(view('Policy').required).toEqual(expect.arrayContaining(['id', 'policy_group_id', 'mode', 'table_name', 'operation', 'condition']));
    expect(view('Policy').properties.mode.enum).toEqual(['allow', 'deny']);
    expect(body('post', '/api/v1/stfs', '201')).toEqual(ref('StfCreated'));
    expect(view('StfCreated').properties.version).toEqual(ref('StfVersion'));
    expect(body('get', '/api/v1/stfs')).toEqual({ type: 'array', items: ref('Stf') });
    expect(body('get', '/api/v1/stfs/{stfId}')).toEqual(ref('Stf'));
    expect(view('Stf').required).toEqual(expect.arrayContaining(['id', 'name', 'is_public', 'latest_version']));
    expect(body('get', '/api/v1/stfs/{stfId}/versions')).toEqual({ type: 'array', items: ref('StfVersion') });
    expect(body('post', '/api/v1/stfs/{stfId}/versions', '201')).toEqual(ref('StfVersion'));
    expect(view('StfVersion').required).toEqual(expect.arrayContaining(['id', 'stf_id', 'version', 'runtime', 'code']));
    // instant-run: a failure of the code is a 200 too.
    expect(body('post', '/api/v1/stfs/instant-run')).toEqual(ref('RunAnswer'));
    const answers = view('RunAnswer').oneOf ?? view('RunAnswer').anyOf;
    expect(answers.map((a: Json) => a.properties.success.const)).toEqual([true, false]);
    expect(answers[0].required).toEqual(['success', 'output', 'logs', 'duration_ms']);
    expect(answers[1].required).toEqual(['success', 'error', 'logs']);
    for (const path of ['/api/v1/workspaces/{id}/files', '/api/v1/workspaces/{id}/files/multipart']) expect(body('post', path, '201')).toEqual(ref('File'));
    expect(body('get', '/api/v1/workspaces/{id}/files')).toEqual({ type: 'array', items: ref('File') });
    expect(body('get', '/api/v1/workspaces/{id}/files/{fileId}')).toEqual(ref('File'));
    expect(view('File').required).toEqual(expect.arrayContaining(['id', 'filename', 'content_type', 'size', 'sha256', 'metadata', 'created_at']));
    expect(body('post', '/api/v1/workspaces/{id}/documents', '201')).toEqual(ref('Document'));
    expect(body('get', '/api/v1/workspaces/{id}/documents/{docId}')).toEqual(ref('Document'));
    expect(body('get', '/api/v1/workspaces/{id}/documents')).toEqual({ type: 'array', items: ref('DocumentSummary') });
    expect(view('Document').required).toEqual(expect.arrayContaining(['id', 'title', 'doc_type', 'status', 'content', 'version']));
    expect(view('DocumentSummary').required).not.toContain('content');
    // Workflows: the definition as saved; runs with their per-step records (deprecations when there are any).
    expect(body('post', '/api/v1/workflows', '201')).toEqual(ref('Workflow'));
    expect(body('get', '/api/v1/workflows')).toEqual({ type: 'array', items: ref('Workflow') });
    for (const m of ['get', 'patch']) expect(body(m, '/api/v1/workflows/{workflowId}')).toEqual(ref('Workflow'));
    expect(view('Workflow').required).toEqual(
      expect.arrayContaining(['id', 'name', 'description', 'allow_anonymous_execute', 'input_schema', 'input_steps', 'stf_steps', 'effect_steps']),
    );
    expect(view('Workflow').properties.stf_steps.items.required).toEqual(['stf_version_id', 'pin_version', 'input_mappings']);
    expect(body('post', '/api/v1/workflows/{workflowId}/execute').description).toMatch(/Any JSON/);
    expect(body('get', '/api/v1/workflows/{workflowId}/runs')).toEqual({ type: 'array', items: ref('WorkflowRunSummary') });
    expect(body('get', '/api/v1/workflows/{workflowId}/runs/{runId}')).toEqual(ref('WorkflowRun'));
    expect(view('WorkflowRunSummary').required).toEqual(
      expect.arrayContaining(['id', 'workflow_id', 'status', 'executed_by', 'error', 'steps', 'started_at', 'finished_at', 'duration_ms']),
    );
    expect(view('WorkflowRunSummary').required).not.toContain('input');
    expect(view('WorkflowRun').required).toEqual(expect.arrayContaining(['input', 'output', 'steps']));
    const step = view('WorkflowRun').properties.steps.items;
    // The run view's steps carry their input and output (issue 31); the list's never do.
    expect(step.required).toEqual(['kind', 'index', 'status', 'input', 'output']);
    expect(step.properties.deprecations.items.required).toEqual(['at', 'found', 'use']);
    const listed = view('WorkflowRunSummary').properties.steps.items;
    expect(listed.required).toEqual(['kind', 'index', 'status']);
    expect(Object.keys(listed.properties)).not.toEqual(expect.arrayContaining(['input']));
    expect(Object.keys(listed.properties)).not.toEqual(expect.arrayContaining(['output']));
    expect(body('post', '/api/v1/workflows/{workflowId}/runs/{runId}/rerun').description).toMatch(/Any JSON/);
    // Effects.
    expect(body('post', '/api/v1/effects', '201')).toEqual(ref('EffectCreated'));
    expect(view('EffectCreated').properties.version).toEqual(ref('EffectVersion'));
    expect(body('get', '/api/v1/effects')).toEqual({ type: 'array', items: ref('Effect') });
    for (const m of ['get', 'patch']) expect(body(m, '/api/v1/effects/{effectId}')).toEqual(ref('Effect'));
    expect(view('Effect').required).toEqual(expect.arrayContaining(['id', 'name', 'description', 'latest_version']));
    expect(body('get', '/api/v1/effects/{effectId}/versions')).toEqual({ type: 'array', items: ref('EffectVersion') });
    expect(body('post', '/api/v1/effects/{effectId}/versions', '201')).toEqual(ref('EffectVersion'));
    expect(view('EffectVersion').required).toEqual(
      expect.arrayContaining(['id', 'effect_id', 'version', 'url', 'method', 'header_mappings', 'body_mappings', 'query_mappings', 'timeout_secs', 'retries']),
    );
    // Members, invitations, redirect URIs.
    expect(body('get', '/api/v1/workspaces/{id}/members')).toEqual({ type: 'array', items: ref('Member') });
    expect(body('post', '/api/v1/workspaces/{id}/members', '201')).toEqual(ref('MemberAdded'));
    expect(body('patch', '/api/v1/workspaces/{id}/members/{memberId}')).toEqual(ref('Member'));
    expect(view('Member').required).toEqual(expect.arrayContaining(['id', 'user_id', 'user_email', 'user_name', 'role', 'created_at']));
    expect(view('MemberAdded').anyOf.map((a: Json) => a.required)).toEqual([['membership'], ['invitation']]);
    expect(body('get', '/api/v1/workspaces/{id}/invitations')).toEqual({ type: 'array', items: ref('Invitation') });
    expect(view('Invitation').required).toEqual(expect.arrayContaining(['id', 'email', 'role', 'invited_by']));
    expect(body('get', '/api/v1/workspaces/{id}/redirect-uris').properties.items).toEqual({ type: 'array', items: ref('RedirectUri') });
    expect(body('post', '/api/v1/workspaces/{id}/redirect-uris', '201')).toEqual(ref('RedirectUri'));
    // API keys: the raw key is answered by create only.
    expect(body('post', '/api/v1/api-keys', '201')).toEqual(ref('ApiKeyCreated'));
    expect(view('ApiKeyCreated').required).toContain('key');
    expect(body('get', '/api/v1/api-keys')).toEqual({ type: 'array', items: ref('ApiKey') });
    expect(view('ApiKey').required).toEqual(expect.arrayContaining(['id', 'name', 'prefix', 'created_at', 'expires_at', 'last_used_at']));
    expect(Object.keys(view('ApiKey').properties)).not.toContain('key');
    // Pinned charts.
    expect(body('post', '/api/v1/pinned-charts', '201')).toEqual(ref('PinnedChart'));
    expect(body('get', '/api/v1/pinned-charts')).toEqual({ type: 'array', items: ref('PinnedChart') });
    for (const m of ['get', 'patch']) expect(body(m, '/api/v1/pinned-charts/{chartId}')).toEqual(ref('PinnedChart'));
    expect(view('PinnedChart').required).toEqual(
      expect.arrayContaining(['id', 'title', 'sql_query', 'chart_type', 'x_axis_column', 'y_axis_columns', 'display_order', 'is_visible']),
    );
    // STF secrets (names only) and describe.
    expect(body('get', '/api/v1/stfs/{stfId}/secrets')).toEqual({ type: 'array', items: ref('StfSecretKey') });
    expect(body('post', '/api/v1/stfs/{stfId}/secrets')).toEqual(ref('StfSecretKey'));
    expect(view('StfSecretKey').required).toEqual(['env_key', 'created_at', 'updated_at']);
    expect(Object.keys(view('StfSecretKey').properties)).not.toContain('value');
    expect(body('post', '/api/v1/stfs/{stfId}/describe')).toEqual(ref('StfDescription'));
    const described = view('StfDescription').oneOf ?? view('StfDescription').anyOf;
    expect(described.map((d: Json) => d.properties.source.const)).toEqual(['stored', 'run', 'none']);
    for (const d of described) expect(d.required).toEqual(expect.arrayContaining(['stf_id', 'stf_version_id', 'version', 'runtime', 'input_schema', 'output_schema', 'source']));
    // Semantic search: hits with scores, and the embedding state counts.
    expect(body('post', '/api/v1/workspaces/{id}/embeddings/files/search')).toEqual(ref('FileSearchResult'));
    expect(body('post', '/api/v1/workspaces/{id}/embeddings/tables/search')).toEqual(ref('TableSearchResult'));
    expect(view('FileSearchResult').properties.results.items.required).toEqual(['file_id', 'filename', 'content_type', 'score', 'chunk_index', 'content']);
    expect(view('TableSearchResult').properties.results.items.required).toEqual(['table_name', 'score', 'row']);
    expect(view('TableSearchResult').properties.status).toEqual(ref('EmbeddingCounts'));
    expect(view('EmbeddingCounts').required).toEqual(['pending', 'processing', 'completed', 'failed', 'skipped']);
    // Every $ref names a component.
    for (const m of JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) expect(doc.components.schemas[m[1] as string], m[1]).toBeDefined();
    expect(op('delete', '/api/v1/workspaces/{id}').responses['204']).toEqual({ description: 'Success' });
  });

  unit('every operation states its success body (JSON view, binary, text), except those answering 204 or 101', () => {
    const undeclared: string[] = [];
    for (const [method, path, o] of operations()) {
      const [status, success] = Object.entries(o.responses as Record<string, Json>).find(([s]) => /^(2..|101)$/.test(s)) ?? [];
      // No content, by definition: 204, and 101 (the WebSocket of GET /ws takes over the connection).
      if (status === '204' || status === '101') continue;
      if (!success?.content || Object.keys(success.content).length === 0) undeclared.push(`${method} ${path}`);
    }
    expect(undeclared).toEqual([]);
    // A route answering JSON declares it as `response` (so the harness validates real answers); the others state
    // their media types in `openapi.responses`.
    const unchecked = routes.filter((r) => !r.response && r.status !== 204 && !r.openapi?.responses).map((r) => `${r.method} ${r.path}`);
    expect(unchecked).toEqual([]);
  });

  unit('the OAuth token exchange states the RFC 6749 answers it hands back, and a policy condition its grammar', () => {
    const token = op('post', '/api/v1/auth/token');
    expect(token.security).toEqual([]);
    expect(token.responses['200'].content['application/json'].schema.required).toEqual(['access_token', 'token_type']);
    expect(token.responses['400'].content['application/json'].schema.required).toEqual(['error']);
    expect(token.responses['502']).toBeDefined();
    const condition = op('post', '/api/v1/policies').requestBody.content['application/json'].schema.properties.condition;
    expect(condition.anyOf[0]).toMatchObject({ type: 'object', propertyNames: { pattern: '^[a-z_][a-z0-9_]*$' } });
    expect(condition.anyOf[0].additionalProperties.anyOf[2].properties.$in.maxItems).toBe(100);
    // A named view with a stated part is still referred to, not copied in.
    expect(op('get', '/api/v1/policies').responses['200'].content['application/json'].schema).toEqual({ type: 'array', items: { $ref: '#/components/schemas/Policy' } });
    expect(doc.components.schemas.Policy.properties.condition.anyOf[0].propertyNames).toBeDefined();
  });

  unit('a declared response is stated under the route status; a handler answer is checked against it by type', () => {
    const response = v.object({ id: v.string(), n: v.number() });
    const route = defineRoute({
      method: 'post', path: '/y', operation: 'get_me', summary: 'y', auth: 'user', status: 201, response,
      handler: async () => ({ id: 'a', n: 1 }),
    });
    const built: Json = buildOpenApi([route]);
    expect(built.paths['/y'].post.responses['201'].content['application/json'].schema).toMatchObject({ type: 'object', required: ['id', 'n'] });
    defineRoute({
      method: 'get', path: '/z', operation: 'get_me', summary: 'z', auth: 'user', response,
      // @ts-expect-error: the answer lacks `n`
      handler: async () => ({ id: 'a' }),
    });
  });

  unit('schemas that cannot be stated without help carry their own JSON Schema', () => {
    const run = op('post', '/api/v1/stfs/instant-run').requestBody.content['application/json'].schema;
    expect(run.dependentRequired).toEqual({ code: ['runtime'], runtime: ['code'] });
    expect(run.oneOf).toHaveLength(3);
    const metadata = op('post', '/api/v1/workspaces/{id}/documents').requestBody.content['application/json'].schema.properties.metadata;
    expect(JSON.stringify(metadata)).toContain('"type":"object"');
    expect(JSON.stringify(doc)).not.toContain('json-schema.org');
  });

  unit('conversion is strict: a schema JSON Schema cannot state, without an override, fails the document', () => {
    const route = (query: v.GenericSchema) =>
      defineRoute({ method: 'get', path: '/x', operation: 'get_me', summary: 'x', auth: 'user', query, handler: async () => ({}) });
    const unstated = v.object({ q: v.pipe(v.string(), v.check((s) => s.length % 2 === 0, 'even')) });
    expect(() => buildOpenApi([route(unstated)])).toThrow(OpenApiSchemaError);
    expect(() => buildOpenApi([route(v.object({ d: v.optional(v.date()) }))])).toThrow(OpenApiSchemaError);
    // A bound after a change of type (minValue after toNumber) would be cut off by the input's conversion.
    expect(() => buildOpenApi([route(v.object({ n: v.pipe(v.string(), v.toNumber(), v.minValue(1)) }))])).toThrow(/minValue|min_value/);
    const stated = v.object({ q: v.pipe(v.string(), withJsonSchema(v.check<string, string>((s) => s.length % 2 === 0, 'even'), { description: 'even length' })) });
    const ok: Json = buildOpenApi([route(stated)]);
    expect(ok.paths['/x'].get.parameters.find((p: Json) => p.name === 'q').schema).toEqual({ type: 'string', description: 'even length' });
  });
});

describe('API reference page', () => {
  test('GET /api/v1/docs is an HTML page using only local assets, each served with its type', async ({ h }) => {
    const page = await h.call('GET', '/api/v1/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = page.body as string;
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(u.startsWith('/'), u).toBe(true);
    expect(html).not.toMatch(/https?:\/\//);
    const assets = urls.filter((u) => u.startsWith('/api/v1/docs/assets/'));
    expect(assets.map((u) => u.split('/').pop()).sort()).toEqual([...DOCS_ASSETS].sort());
    for (const u of assets) {
      const r = await h.app.request(u);
      expect(r.status, u).toBe(200);
      expect(r.headers.get('content-type'), u).toMatch(u.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(r.headers.get('cache-control'), u).toMatch(/max-age=\d+/);
      expect((await r.arrayBuffer()).byteLength, u).toBeGreaterThan(0);
    }
    const init = await (await h.app.request('/api/v1/docs/assets/init.js')).text();
    expect(init).toContain("'/api/v1/openapi.json'");
  });

  test('nothing but the listed assets is served', async ({ h }) => {
    for (const path of [
      '/api/v1/docs/assets/../../package.json',
      '/api/v1/docs/assets/..%2F..%2Fpackage.json',
      '/api/v1/docs/assets/%2e%2e%2fpackage.json',
      '/api/v1/docs/assets/package.json',
      '/api/v1/docs/assets/index.html',
      '/api/v1/docs/assets/swagger-ui.js.map',
      '/api/v1/docs/assets/constructor',
    ]) {
      const r = await h.call('GET', path);
      expect(r.status, path).toBe(404);
    }
  });
});
