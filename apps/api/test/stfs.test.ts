import { describe, expect, test } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const jsStf = (over: Record<string, unknown> = {}) => ({
  name: 'double',
  version: '1.0.0',
  runtime: 'javascript',
  code: b64('return { n: $input.n * 2 }'),
  input_schema: { type: 'object', properties: { n: { type: 'number' } } },
  output_schema: { type: 'object' },
  ...over,
});

describe('STFs', () => {
  test("runtime 'js' (the origin platform's name) is accepted and stored as javascript", async ({ h, owner, ws }) => {
    const c = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf({ runtime: 'js' }) });
    expect(c.status).toBe(201);
    expect(c.body.latest_version).toMatchObject({ runtime: 'javascript' });
    const v2 = await h.call('POST', `/api/v1/stfs/${c.body.id}/versions`, { token: owner.token, workspace: ws.id, body: { version: '1.1.0', runtime: 'js', code: b64('return 3') } });
    expect([v2.status, v2.body.runtime]).toEqual([201, 'javascript']);
    const run = await h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: c.body.id } });
    expect(run.body).toMatchObject({ success: true, output: 3 });
  });

  test('create with a first version, list, get, patch, versions, describe, soft delete', async ({ h, owner, ws }) => {
    const c = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf({ description: 'doubles n' }) });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ name: 'double', description: 'doubles n', is_public: false, latest_version: { version: '1.0.0', runtime: 'javascript' } });
    expect(c.body.version).toMatchObject({ version: '1.0.0', code: b64('return { n: $input.n * 2 }') });
    const id = c.body.id;

    expect((await h.call('GET', '/api/v1/stfs', { token: owner.token, workspace: ws.id })).body.map((s: any) => s.id)).toEqual([id]);
    expect((await h.call('GET', `/api/v1/stfs/${id}`, { token: owner.token, workspace: ws.id })).body.name).toBe('double');
    const p = await h.call('PATCH', `/api/v1/stfs/${id}`, { token: owner.token, workspace: ws.id, body: { is_public: true } });
    expect(p.body.is_public).toBe(true);

    const v2 = await h.call('POST', `/api/v1/stfs/${id}/versions`, {
      token: owner.token,
      workspace: ws.id,
      body: { version: '1.1.0', runtime: 'javascript', code: b64('return 1'), output_schema: { type: 'number' } },
    });
    expect(v2.status).toBe(201);
    const dup = await h.call('POST', `/api/v1/stfs/${id}/versions`, { token: owner.token, workspace: ws.id, body: { version: '1.1.0', runtime: 'javascript', code: b64('return 2') } });
    expect(dup.status).toBe(409);
    const versions = await h.call('GET', `/api/v1/stfs/${id}/versions`, { token: owner.token, workspace: ws.id });
    expect(versions.body.map((x: any) => x.version)).toEqual(['1.1.0', '1.0.0']);

    const d = await h.call('POST', `/api/v1/stfs/${id}/describe`, { token: owner.token, workspace: ws.id, body: {} });
    expect(d.body).toMatchObject({ version: '1.1.0', output_schema: { type: 'number' }, input_schema: null });
    const d1 = await h.call('POST', `/api/v1/stfs/${id}/describe`, { token: owner.token, workspace: ws.id, body: { version: '1.0.0' } });
    expect(d1.body.input_schema).toEqual({ type: 'object', properties: { n: { type: 'number' } } });

    expect((await h.call('DELETE', `/api/v1/stfs/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('GET', `/api/v1/stfs/${id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
    expect((await h.call('GET', '/api/v1/stfs', { token: owner.token, workspace: ws.id })).body).toEqual([]);
  });

  test('bad input is 400 with details', async ({ h, owner, ws }) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ code: 'not base64!!' }, 'code'],
      [{ code: '' }, 'code'],
      [{ runtime: 'python' }, 'runtime'],
      [{ runtime: 'docker', code: b64('{"image":"localhost/x","command":"python main.py"}') }, 'command must be'],
      [{ runtime: 'docker', code: b64('{"image":"localhost/x","command":["x"],"env":{"1X":"y"}}') }, 'env name'],
      [{ runtime: 'wasm', code: b64('not wasm') }, 'WebAssembly'],
      [{ runtime: 'javascript', code: Buffer.from([0xff, 0xfe]).toString('base64') }, 'UTF-8'],
      [{ name: '' }, 'name'],
      [{ version: '' }, 'version'],
    ];
    for (const [over, field] of cases) {
      const r = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf(over) });
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details, JSON.stringify(over)).toContain(field);
    }
    const huge = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: jsStf({ code: Buffer.alloc(h.services.config.STF_MAX_CODE_BYTES + 1, 32).toString('base64') }),
    });
    expect(huge.status).toBe(400);
    expect(huge.body.details).toContain('at most');
    const docker = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: jsStf({ runtime: 'docker', code: b64(JSON.stringify({ image: 'localhost/py:3', command: ['python3', '/app.py'], secret_keys: ['TOKEN'] })) }),
    });
    expect(docker.status).toBe(201);
  });

  test('javascript that does not compile is refused with its line and column, and nothing is stored', async ({ h, owner, ws }) => {
    const auth = { token: owner.token, workspace: ws.id };
    const script = await h.call('POST', '/api/v1/stfs', { ...auth, body: jsStf({ name: 'broken', code: b64('const a = 1;\nconst b = 2;\nreturn a +* b;') }) });
    expect(script.status).toBe(400);
    expect(script.body.code).toBe('VALIDATION_ERROR');
    expect(script.body.details).toMatch(/^code: SyntaxError: .+ \(line 3, column 11\)\nreturn a \+\* b;\n {10}\^$/);
    const module = await h.call('POST', '/api/v1/stfs', {
      ...auth,
      body: jsStf({ name: 'broken', code: b64("import { format } from 'date-fns';\nexport default (input) => format(input +);") }),
    });
    expect(module.status).toBe(400);
    expect(module.body.details).toContain('(line 2, column 41)');
    expect((await h.call('GET', '/api/v1/stfs', auth)).body).toEqual([]);

    // Imports are only parsed at save time.
    const ok = await h.call('POST', '/api/v1/stfs', {
      ...auth,
      body: jsStf({ code: b64("import { format } from 'date-fns';\nexport default (input) => format(new Date(input.d), 'yyyy');") }),
    });
    expect(ok.status).toBe(201);
    const id = ok.body.id;
    const bad = await h.call('POST', `/api/v1/stfs/${id}/versions`, {
      ...auth,
      body: { version: '2.0.0', runtime: 'javascript', code: b64('if ($input.n > 1) {\n  return 1;\n') },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('VALIDATION_ERROR');
    expect(bad.body.details).toContain('unexpected end of the code');
    expect(bad.body.details).toContain('(line 2, column 12)');
    const versions = await h.call('GET', `/api/v1/stfs/${id}/versions`, auth);
    expect(versions.body.map((x: any) => x.version)).toEqual(['1.0.0']);
    expect((await h.call('GET', '/api/v1/stfs', auth)).body.map((x: any) => x.id)).toEqual([id]);
  });

  test('members may read; only workflow editors may change', async ({ h, owner, ws }) => {
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const id = (await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf() })).body.id;
    expect((await h.call('GET', `/api/v1/stfs/${id}`, { token: m.token, workspace: ws.id })).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/api/v1/stfs', jsStf()],
      ['PATCH', `/api/v1/stfs/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/stfs/${id}`, undefined],
      ['POST', `/api/v1/stfs/${id}/versions`, { version: '2', runtime: 'javascript', code: b64('1') }],
      ['POST', `/api/v1/stfs/${id}/secrets`, { env_key: 'K', value: 'v' }],
      ['DELETE', `/api/v1/stfs/${id}/secrets/K`, undefined],
    ] as const) {
      const r = await h.call(method, path, { token: m.token, workspace: ws.id, body });
      expect(r.status, `${method} ${path}`).toBe(403);
    }
    // A workflow-editor group makes its members editors (and no longer the admins by default).
    const g = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [m.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: g } });
    expect((await h.call('PATCH', `/api/v1/stfs/${id}`, { token: m.token, workspace: ws.id, body: { name: 'x' } })).status).toBe(200);
    expect((await h.call('PATCH', `/api/v1/stfs/${id}`, { token: owner.token, workspace: ws.id, body: { name: 'y' } })).status).toBe(403);
  });

  test('another workspace cannot see, change or use them', async ({ h, owner, ws }) => {
    const id = (await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf({ name: 'canary-stf-name' }) })).body.id;
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    for (const [method, path, body] of [
      ['GET', `/api/v1/stfs/${id}`, undefined],
      ['PATCH', `/api/v1/stfs/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/stfs/${id}`, undefined],
      ['GET', `/api/v1/stfs/${id}/versions`, undefined],
      ['POST', `/api/v1/stfs/${id}/versions`, { version: '9', runtime: 'javascript', code: b64('1') }],
      ['GET', `/api/v1/stfs/${id}/secrets`, undefined],
      ['POST', `/api/v1/stfs/${id}/secrets`, { env_key: 'K', value: 'v' }],
      ['POST', `/api/v1/stfs/${id}/describe`, {}],
    ] as const) {
      const r = await h.call(method, path, { token: mallory.token, workspace: hers.id, body });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    const list = await h.call('GET', '/api/v1/stfs', { token: mallory.token, workspace: hers.id });
    expect(JSON.stringify(list.body)).not.toContain('canary-stf-name');
  });
});

describe('POST /stfs/{id}/describe', () => {
  test('returns stored schemas, else asks the code with {operation:"describe"} (without sql)', async ({ h, owner, ws }) => {
    const create = async (code: string, extra: Record<string, unknown> = {}) => {
      const r = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'd', version: '1', runtime: 'javascript', code: b64(code), ...extra } });
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    const describeIt = async (id: string) => (await h.call('POST', `/api/v1/stfs/${id}/describe`, { token: owner.token, workspace: ws.id, body: {} })).body;

    const stored = await create('throw new Error("must not run")', { input_schema: { type: 'object' } });
    expect(await describeIt(stored)).toMatchObject({ input_schema: { type: 'object' }, output_schema: null, source: 'stored' });

    const selfDescribing = await create(`
      if ($input && $input.operation === 'describe') {
        let sqlAvailable = true;
        try { sql('SELECT 1'); } catch { sqlAvailable = false; }
        return { input_schema: { type: 'object', properties: { n: { type: 'number' } } }, output_schema: { type: 'number' }, description: 'sql ' + sqlAvailable };
      }
      return $input.n * 2;`);
    expect(await describeIt(selfDescribing)).toMatchObject({
      version: '1',
      runtime: 'javascript',
      input_schema: { type: 'object', properties: { n: { type: 'number' } } },
      output_schema: { type: 'number' },
      description: 'sql false',
      source: 'run',
    });

    const silent = await create('return 42');
    expect(await describeIt(silent)).toMatchObject({ input_schema: null, output_schema: null, source: 'none' });
    const failing = await create('throw new Error("no describe here")');
    expect(await describeIt(failing)).toMatchObject({ source: 'none', error: { kind: 'runtime', message: expect.stringContaining('no describe here') } });
  });
});

describe('STF secrets', () => {
  test('upsert, list key names only, delete; values never leave, not even in the audit log', async ({ h, owner, ws }) => {
    const id = (await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: jsStf() })).body.id;
    const set = await h.call('POST', `/api/v1/stfs/${id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'API_TOKEN', value: 'canary-secret-value-1' } });
    expect(set.status).toBe(200);
    expect(JSON.stringify(set.body)).not.toContain('canary-secret');
    await h.call('POST', `/api/v1/stfs/${id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'API_TOKEN', value: 'canary-secret-value-2' } });
    const list = await h.call('GET', `/api/v1/stfs/${id}/secrets`, { token: owner.token, workspace: ws.id });
    expect(list.body.map((s: any) => s.env_key)).toEqual(['API_TOKEN']);
    expect(JSON.stringify(list.body)).not.toContain('canary-secret');
    const audit = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id });
    expect(audit.body.map((e: any) => e.action)).toContain('upsert_stf_secret');
    expect(JSON.stringify(audit.body)).not.toContain('canary-secret');
    const bad = await h.call('POST', `/api/v1/stfs/${id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'no-dash', value: 'x' } });
    expect(bad.status).toBe(400);
    expect((await h.call('DELETE', `/api/v1/stfs/${id}/secrets/API_TOKEN`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('DELETE', `/api/v1/stfs/${id}/secrets/API_TOKEN`, { token: owner.token, workspace: ws.id })).status).toBe(404);
  });
});
