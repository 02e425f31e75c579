import { describe, expect, test } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function stf(h: any, token: string, ws: string, code: string, runtime = 'javascript') {
  const r = await h.call('POST', '/api/v1/stfs', { token, workspace: ws, body: { name: 's', version: '1', runtime, code: b64(code) } });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return { id: r.body.id as string, versionId: r.body.version.id as string };
}
const run = (h: any, token: string, ws: string, body: unknown) => h.call('POST', '/api/v1/stfs/instant-run', { token, workspace: ws, body });

describe('POST /stfs/instant-run (javascript)', () => {
  test('runs a version by id, or the newest version of an STF', async ({ h, owner, ws }) => {
    const s = await stf(h, owner.token, ws.id, 'console.log("got", $input.n); return { double: $input.n * 2, caller: $caller, src: $sources.a }');
    const r = await run(h, owner.token, ws.id, { stf_version_id: s.versionId, input: { n: 21 }, sources: { a: 'x' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, output: { double: 42, caller: owner.id, src: 'x' } });
    expect(r.body.logs).toEqual([{ level: 'log', message: 'got 21' }]);
    expect(typeof r.body.duration_ms).toBe('number');
    await h.call('POST', `/api/v1/stfs/${s.id}/versions`, { token: owner.token, workspace: ws.id, body: { version: '2', runtime: 'javascript', code: b64('export default (input) => input.n + 1') } });
    const newest = await run(h, owner.token, ws.id, { stf_id: s.id, input: { n: 1 } });
    expect(newest.body).toMatchObject({ success: true, output: 2 });
  });

  test("failures of the user's code are 200 with success false", async ({ h, owner, ws }) => {
    const thrown = await stf(h, owner.token, ws.id, 'console.log("before"); throw new Error("boom")');
    const r = await run(h, owner.token, ws.id, { stf_version_id: thrown.versionId, input: {} });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: false, error: { kind: 'runtime', message: expect.stringContaining('boom') } });
    expect(r.body.logs).toEqual([{ level: 'log', message: 'before' }]);
    const loop = await stf(h, owner.token, ws.id, 'while (true) {}');
    const t = await run(h, owner.token, ws.id, { stf_version_id: loop.versionId });
    expect(t.body).toMatchObject({ success: false, error: { kind: 'timeout' } });
    // A syntax error is refused when the version is saved (stfs.test.ts), so no run ever meets one.
  });

  test('sql() runs as the calling user, in one transaction per run', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE items (owner_id uuid, title text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['items']);
    const s = await stf(
      h,
      owner.token,
      ws.id,
      `sql("INSERT INTO items (owner_id, title) VALUES ('" + $caller + "', '" + $input.title + "')");
       const rows = sql('SELECT title FROM items ORDER BY title');
       if ($input.fail) throw new Error('after insert');
       return rows.map((r) => r.title);`,
    );
    expect((await run(h, owner.token, ws.id, { stf_version_id: s.versionId, input: { title: 'a' } })).body).toMatchObject({ success: true, output: ['a'] });
    expect((await run(h, owner.token, ws.id, { stf_version_id: s.versionId, input: { title: 'b', fail: true } })).body.success).toBe(false);
    // The failed run's insert was rolled back.
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT title FROM items')).rows).toEqual([{ title: 'a' }]);

    // A member without policies: sql() fails inside the STF (catchable), nothing leaks.
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const probe = await stf(h, owner.token, ws.id, 'try { return sql("SELECT * FROM items") } catch (e) { return "refused: " + e.message }');
    const r = await run(h, m.token, ws.id, { stf_version_id: probe.versionId });
    expect(r.body).toMatchObject({ success: true, output: expect.stringContaining('refused') });
    const ddl = await stf(h, owner.token, ws.id, 'return sql("DROP TABLE items")');
    expect((await run(h, owner.token, ws.id, { stf_version_id: ddl.versionId })).body.success).toBe(false);
  });

  test('secrets are in $env and masked in logs and errors', async ({ h, owner, ws }) => {
    const s = await stf(h, owner.token, ws.id, 'console.log("token is", $env.API_TOKEN); if ($input.fail) throw new Error("bad " + $env.API_TOKEN); return $env.API_TOKEN.length');
    await h.call('POST', `/api/v1/stfs/${s.id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'API_TOKEN', value: 'canary-secret-987' } });
    const ok = await run(h, owner.token, ws.id, { stf_id: s.id, input: {} });
    expect(ok.body).toMatchObject({ success: true, output: 17, logs: [{ level: 'log', message: 'token is ***' }] });
    const failed = await run(h, owner.token, ws.id, { stf_id: s.id, input: { fail: true } });
    expect(JSON.stringify(failed.body)).not.toContain('canary-secret');
  });

  test('request checks: one reference, known runtime, another workspace, audit', async ({ h, owner, ws }) => {
    const s = await stf(h, owner.token, ws.id, 'return 1');
    for (const body of [{}, { stf_id: s.id, stf_version_id: s.versionId }, { stf_id: 'nope' }]) {
      expect((await run(h, owner.token, ws.id, body)).status, JSON.stringify(body)).toBe(400);
    }
    const docker = await stf(h, owner.token, ws.id, JSON.stringify({ image: 'localhost/x', command: ['x'] }), 'docker');
    expect((await run(h, owner.token, ws.id, { stf_id: docker.id })).status).toBe(503);
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    expect((await run(h, mallory.token, hers.id, { stf_version_id: s.versionId })).status).toBe(404);
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    expect((await run(h, m.token, ws.id, { stf_version_id: s.versionId })).body.success).toBe(true);
    const audit = await h.call('GET', '/api/v1/audit-logs?action=instant_run_stf', { token: owner.token, workspace: ws.id });
    expect(audit.body).toHaveLength(1);
    expect(audit.body[0]).toMatchObject({ resource_id: s.id, user_id: m.id });
  });
});
