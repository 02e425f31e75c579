import { describe, expect, test } from './support.js';

/**
 * instant-run's code mode (issue 17): the origin platform's development loop, `{ runtime: "js", code: <base64>,
 * input, sources }`, runs code that is not saved — as the calling user, checked as a save would be, with no secrets.
 */
const b64 = (s: string) => Buffer.from(s).toString('base64');
const run = (h: any, token: string, ws: string, body: unknown) => h.call('POST', '/api/v1/stfs/instant-run', { token, workspace: ws, body });

describe('POST /stfs/instant-run with code', () => {
  test('runs origin-style script code (imports, $input, $sources, top-level return) without saving it', async ({ h, owner, ws }) => {
    const code = [
      "import CryptoJS from '@d6e-ai/crypto-js';",
      "import { SHA256 } from 'crypto-js';",
      '// a comment that says export default does not make this a module',
      'const { text } = $input;',
      'return { digest: SHA256(text).toString(), same: CryptoJS.SHA256(text).toString() === SHA256(text).toString(), from: $sources.prev, caller: $caller };',
    ].join('\n');
    const r = await run(h, owner.token, ws.id, { runtime: 'js', code: b64(code), input: { text: 'abc' }, sources: { prev: 7 } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      output: { digest: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', same: true, from: 7, caller: owner.id },
    });
    // Nothing was saved.
    expect((await h.call('GET', '/api/v1/stfs', { token: owner.token, workspace: ws.id })).body).toHaveLength(0);
    // The run is audited as an unsaved run: no resource, the code's digest and size.
    const audit = await h.call('GET', '/api/v1/audit-logs?action=instant_run_stf', { token: owner.token, workspace: ws.id });
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({
      resource_id: null,
      user_id: owner.id,
      details: { runtime: 'javascript', unsaved: true, code_bytes: Buffer.byteLength(code) },
    });
    expect(audit.body[0].details.code_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(audit.body[0])).not.toContain('SHA256(text)');
  });

  test('accepts javascript and the module form too; a failure of the code is a 200 answer', async ({ h, owner, ws }) => {
    const mod = await run(h, owner.token, ws.id, { runtime: 'javascript', code: b64('export default (input) => input.n + 1'), input: { n: 1 } });
    expect(mod.body).toMatchObject({ success: true, output: 2 });
    const thrown = await run(h, owner.token, ws.id, { runtime: 'js', code: b64('throw new Error("boom")') });
    expect(thrown.status).toBe(200);
    expect(thrown.body).toMatchObject({ success: false, error: { kind: 'runtime', message: 'Error: boom' } });
    const missing = await run(h, owner.token, ws.id, { runtime: 'js', code: b64("import x from 'left-pad';\nreturn x;") });
    expect(missing.body).toMatchObject({ success: false, error: { message: expect.stringContaining('module not allowed: left-pad') } });
  });

  test('sql() runs as the calling user: policies apply and another workspace stays invisible', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (title text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO notes (title) VALUES ('ours')");
    const code = b64('try { return sql("SELECT title FROM notes") } catch (e) { return "refused: " + e.message }');
    expect((await run(h, owner.token, ws.id, { runtime: 'js', code })).body).toMatchObject({ success: true, output: [{ title: 'ours' }] });

    // A workflow editor without a policy on the table: refused inside the run, no rows.
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const editors = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [m.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: editors } });
    const asMember = await run(h, m.token, ws.id, { runtime: 'js', code });
    expect(asMember.body).toMatchObject({ success: true, output: expect.stringContaining('refused') });
    expect(JSON.stringify(asMember.body)).not.toContain('ours');

    // Another workspace's owner, with a table of the same name, sees only their own rows.
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    await h.sqlOk(mallory.token, hers.id, 'CREATE TABLE notes (title text)');
    await h.allowAll(mallory.token, hers.id, [mallory.id], ['notes']);
    const theirs = await run(h, mallory.token, hers.id, { runtime: 'js', code });
    expect(theirs.body).toMatchObject({ success: true, output: [] });
    // …and cannot run code in ours.
    expect((await run(h, mallory.token, ws.id, { runtime: 'js', code })).status).toBe(403);
  });

  test('has no secrets of any STF', async ({ h, owner, ws }) => {
    const s = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 's', version: '1', runtime: 'js', code: b64('return 1') } });
    await h.call('POST', `/api/v1/stfs/${s.body.id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'API_TOKEN', value: 'canary-secret-555' } });
    const r = await run(h, owner.token, ws.id, { runtime: 'js', code: b64('return { env: $env, keys: Object.keys($env) }') });
    expect(r.body).toMatchObject({ success: true, output: { env: {}, keys: [] } });
    expect(JSON.stringify(r.body)).not.toContain('canary-secret');
  });

  test('refuses what a save refuses, and malformed requests, with 400', async ({ h, owner, ws }) => {
    const syntax = await run(h, owner.token, ws.id, { runtime: 'js', code: b64("import { a } from 'crypto-js';\n\nconst = 1;\nreturn a;") });
    expect(syntax.status).toBe(400);
    expect(syntax.body.code).toBe('VALIDATION_ERROR');
    expect(syntax.body.details).toMatch(/SyntaxError.*line 3/s);
    for (const body of [
      { code: b64('return 1') }, // no runtime
      { runtime: 'js' }, // no code
      { runtime: 'python', code: b64('return 1') },
      { runtime: 'js', code: '' },
      { runtime: 'js', code: 'not base64!' },
      { runtime: 'js', code: b64('return 1'), stf_id: '00000000-0000-4000-8000-000000000000' },
      { runtime: 'docker', code: b64('{"image": "Not An Image"}') },
    ]) {
      const r = await run(h, owner.token, ws.id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
  });

  test('needs what saving code needs: a member who is no workflow editor is refused, whatever the runtime', async ({ h, owner, ws }) => {
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const js = await run(h, m.token, ws.id, { runtime: 'js', code: b64('return 1') });
    expect(js.status).toBe(403);
    const dockerCode = b64(JSON.stringify({ image: 'localhost/x:1', command: ['x'] }));
    expect((await run(h, m.token, ws.id, { runtime: 'docker', code: dockerCode })).status).toBe(403);
    // A saved STF stays runnable by any member.
    const s = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 's', version: '1', runtime: 'js', code: b64('return 2') } });
    expect((await run(h, m.token, ws.id, { stf_id: s.body.id })).body).toMatchObject({ success: true, output: 2 });
    // The editor's docker config: this server has no container engine configured, so 503 after the checks.
    expect((await run(h, owner.token, ws.id, { runtime: 'docker', code: dockerCode })).status).toBe(503);
  });
});
