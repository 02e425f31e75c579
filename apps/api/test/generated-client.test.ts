// Issue 18: a client generated from the served OpenAPI document (openapi-typescript) plus openapi-fetch, used by a
// sample program with no casts, no `any` and no hand-written types: it must typecheck under --strict, a variant
// reading a field that does not exist must not, and the program must run against a real server.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test as unit } from 'vitest';
import { routes } from '../src/app.js';
import { buildOpenApi } from '../src/http/openapi.js';
import { generateTypes, programDir, typecheck } from './programs.js';
import { test } from './support.js';

/** The sample program; `extra` is spliced in after the workspace is created (the negative control). */
const program = (extra = '') => `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

export async function walkthrough(baseUrl: string, token: string, userId: string): Promise<string[]> {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const seen: string[] = [];

  const ws = await client.POST('/api/v1/workspaces', { body: { name: 'generated client' } });
  if (!ws.data) throw new Error(\`workspace: \${ws.response.status}\`);
  const wsId: string = ws.data.id;
  const wsName: string = ws.data.name;
  seen.push(wsName);
  ${extra}
  const header = { 'X-Workspace-ID': wsId };
  const path = { id: wsId };

  const created = await client.POST('/api/v1/workspaces/{id}/sql', {
    params: { path },
    body: { sql: 'CREATE TABLE tickets (owner_id uuid, title text, status text)' },
  });
  if (!created.data) throw new Error(\`create table: \${created.response.status}\`);

  const group = await client.POST('/api/v1/policy-groups', { params: { header }, body: { name: 'support', user_ids: [userId] } });
  if (!group.data) throw new Error(\`policy group: \${group.response.status}\`);
  const groupId: string = group.data.id;
  for (const operation of ['select', 'insert'] as const) {
    const policy = await client.POST('/api/v1/policies', {
      params: { header },
      body: {
        name: \`own \${operation}\`,
        policy_group_id: groupId,
        mode: 'allow',
        table_name: 'tickets',
        operation,
        condition: { owner_id: '$user_id' },
      },
    });
    if (!policy.data) throw new Error(\`policy: \${policy.response.status}\`);
    const policyId: string = policy.data.id;
    seen.push(policyId);
  }

  const inserted = await client.POST('/api/v1/workspaces/{id}/sql', {
    params: { path },
    body: { sql: \`INSERT INTO tickets (owner_id, title) VALUES ('\${userId}', 'printer on fire')\` },
  });
  if (!inserted.data) throw new Error(\`insert: \${inserted.response.status}\`);
  const selected = await client.POST('/api/v1/workspaces/{id}/sql', { params: { path }, body: { sql: 'SELECT title FROM tickets' } });
  if (!selected.data) throw new Error(\`select: \${selected.response.status}\`);
  const result = selected.data;
  // SqlResult is a row set or a write count (whose rows are optional), or (202) a statement held for approval: a
  // SELECT answers the first.
  if ('affected_rows' in result || 'proposal' in result) throw new Error('select: not a row set');
  const count: number = result.rows.length;
  seen.push(\`rows \${count}\`);

  const code = Buffer.from('return { doubled: $input.n * 2 };').toString('base64');
  const stf = await client.POST('/api/v1/stfs', { params: { header }, body: { name: 'double', version: '1', runtime: 'javascript', code } });
  if (!stf.data) throw new Error(\`stf: \${stf.response.status}\`);
  const stfId: string = stf.data.id;
  const run = await client.POST('/api/v1/stfs/instant-run', { params: { header }, body: { stf_id: stfId, input: { n: 21 } } });
  if (!run.data) throw new Error(\`instant-run: \${run.response.status}\`);
  const answer = run.data;
  if (!answer.success) throw new Error('instant-run failed');
  seen.push(\`output \${JSON.stringify(answer.output)}\`);

  const upload = await client.POST('/api/v1/workspaces/{id}/files', {
    params: { path, header },
    body: { filename: 'notes.txt', content_type: 'text/plain', content: Buffer.from('hello').toString('base64') },
  });
  if (!upload.data) throw new Error(\`upload: \${upload.response.status}\`);
  const fileId: string = upload.data.id;
  const file = await client.GET('/api/v1/workspaces/{id}/files/{fileId}', { params: { path: { id: wsId, fileId }, header } });
  if (!file.data) throw new Error(\`file: \${file.response.status}\`);
  const size: number = file.data.size;
  seen.push(\`file \${file.data.filename} \${size}\`);

  const doc = await client.POST('/api/v1/workspaces/{id}/documents', {
    params: { path, header },
    body: { title: 'Runbook', doc_type: 'guide', status: 'draft', content: '# Runbook\\n\\nRestart it.' },
  });
  if (!doc.data) throw new Error(\`document: \${doc.response.status}\`);
  const docId: string = doc.data.id;
  const read = await client.GET('/api/v1/workspaces/{id}/documents/{docId}', { params: { path: { id: wsId, docId }, header } });
  if (!read.data) throw new Error(\`document read: \${read.response.status}\`);
  const title: string = read.data.title;
  seen.push(\`document \${title}\`);
  return seen;
}
`;

describe('a client generated from the OpenAPI document', () => {
  let dir: string;
  beforeAll(() => {
    dir = programDir('generated-client', ['schema.d.ts', 'walkthrough.ts', 'negative.ts']);
    // The document exactly as GET /api/v1/openapi.json serves it.
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(buildOpenApi(routes)));
    generateTypes(join(dir, 'openapi.json'), join(dir, 'schema.d.ts'));
    writeFileSync(join(dir, 'walkthrough.ts'), program());
    writeFileSync(join(dir, 'negative.ts'), program('const missing: string = ws.data.no_such_field;\n  seen.push(missing);'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  unit('the generated types are the declared schemas, not unknown', () => {
    const schema = readFileSync(join(dir, 'schema.d.ts'), 'utf8');
    expect(schema).toContain('export interface paths {');
    expect(schema).toMatch(/"\/api\/v1\/workspaces\/\{id\}\/sql": \{/);
    expect(schema).toMatch(/"application\/json": components\["schemas"\]\["SqlResult"\]/);
  });

  unit('tsc --strict accepts the walk-through program and refuses a read of a field the workspace lacks', () => {
    const tsc = typecheck(dir);
    const diagnostics = tsc.output.split('\n').filter((l) => l.trim() !== '');
    const of = (file: string) => diagnostics.filter((l) => l.startsWith(file) || l.includes(`/${file}(`));
    // Everything that is not the negative control's expected error must be empty (lib and schema.d.ts included).
    const unexpected = diagnostics.filter((l) => !(l.includes('negative.ts(') && l.includes('no_such_field')));
    expect(unexpected, unexpected.join('\n')).toEqual([]);
    expect(of('walkthrough.ts')).toEqual([]);
    const negative = of('negative.ts');
    expect(negative.length, diagnostics.join('\n')).toBe(1);
    expect(negative[0]).toMatch(/error TS2339: Property 'no_such_field' does not exist on type/);
    expect(tsc.status).not.toBe(0);
  });

  test('the same program runs against a real server', async ({ base, h }) => {
    const me = await h.user('generated');
    // vitest strips the type-only import of ./schema.js: this is the program tsc checked, run as is.
    const mod: { walkthrough(b: string, t: string, u: string): Promise<string[]> } = await import(pathToFileURL(join(dir, 'walkthrough.ts')).href);
    const seen = await mod.walkthrough(base, me.token, me.id);
    expect(seen).toContain('generated client');
    expect(seen).toContain('rows 1');
    expect(seen).toContain('output {"doubled":42}');
    expect(seen).toContain('file notes.txt 5');
    expect(seen).toContain('document Runbook');
  });
});
