import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Harness } from './support.js';

// Docker STFs against podman's Docker-compatible service (scripts/container-engine.sh, started by globalSetup).
const images = inject('dockerImages');
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A node program for the container: `body` runs with `doc` (stdin) and `sql(query)` (the per-run socket). */
function nodeProgram(body: string): string {
  return `
    const http = require('node:http');
    let raw = '';
    process.stdin.on('data', (d) => (raw += d)).on('end', async () => {
      const doc = JSON.parse(raw);
      const sql = (query) => new Promise((resolve, reject) => {
        const req = http.request({ socketPath: doc.api_socket, path: '/sql', method: 'POST',
          headers: { authorization: 'Bearer ' + doc.api_token } }, (res) => {
          let text = ''; res.on('data', (d) => (text += d)); res.on('end', () => resolve(JSON.parse(text)));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ query }));
      });
      const output = await (async () => { ${body} })();
      console.log(JSON.stringify({ output }));
    });`;
}

const dockerCode = (body: string, extra: Record<string, unknown> = {}) =>
  b64(JSON.stringify({ image: images.node, command: ['/usr/bin/node', '-e', nodeProgram(body)], ...extra }));

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };

async function stf(token: string, workspaceId: string, code: string): Promise<string> {
  const r = await h.call('POST', '/api/v1/stfs', { token, workspace: workspaceId, body: { name: 'd', version: '1', runtime: 'docker', code } });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.id as string;
}
const run = (token: string, workspaceId: string, body: unknown) => h.call('POST', '/api/v1/stfs/instant-run', { token, workspace: workspaceId, body });

beforeAll(async () => {
  h = await Harness.create({ DOCKER_HOST: inject('dockerHost'), STF_DOCKER_TIMEOUT_MS: '20000' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Docker');
});
afterAll(async () => {
  await h?.close();
});

describe('POST /stfs/instant-run (docker)', () => {
  it('runs the container with the stdin document and returns its output', async () => {
    const id = await stf(owner.token, ws.id, dockerCode(`console.error('hi', doc.input.n); return { n: doc.input.n * 2, caller: doc.caller, ws: doc.workspace_id, stf: doc.stf_id, src: doc.sources };`));
    const r = await run(owner.token, ws.id, { stf_id: id, input: { n: 21 }, sources: { a: 1 } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, output: { n: 42, caller: owner.id, ws: ws.id, stf: id, src: { a: 1 } } });
    expect(r.body.logs).toEqual([{ level: 'log', message: 'hi 21' }]);
    expect(JSON.stringify(r.body)).not.toContain('api_token');
  });

  it("sql() through the socket runs as the calling user under the policies, one transaction per run", async () => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (owner_id uuid, body text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    const g = await h.group(owner.token, ws.id, { name: 'members', user_ids: [member.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'notes', operation: 'select', condition: { owner_id: '$user_id' } });
    await h.sqlOk(owner.token, ws.id, `INSERT INTO notes (owner_id, body) VALUES ('${owner.id}', 'owner note'), ('${member.id}', 'member note')`);

    const id = await stf(
      owner.token,
      ws.id,
      dockerCode(`
        const seen = await sql('SELECT body FROM notes ORDER BY body');
        const insert = await sql("INSERT INTO notes (owner_id, body) VALUES ('" + doc.caller + "', 'from the container')");
        const ddl = await sql('DROP TABLE notes');
        if (doc.input.fail) process.exit(1);
        return { seen, insert, ddl };`),
    );
    const asOwner = await run(owner.token, ws.id, { stf_id: id, input: {} });
    expect(asOwner.body.success).toBe(true);
    expect(asOwner.body.output.seen.rows.map((x: any) => x.body)).toEqual(['member note', 'owner note']);
    expect(asOwner.body.output.insert).toEqual({ affected_rows: 1 });
    expect(asOwner.body.output.ddl.error).toBeTruthy();

    // The member sees only their own note, and may not insert.
    const asMember = await run(member.token, ws.id, { stf_id: id, input: {} });
    expect(asMember.body.output.seen.rows).toEqual([{ body: 'member note' }]);
    expect(asMember.body.output.insert.error).toBeTruthy();

    // A failed run rolls its statements back.
    const failed = await run(owner.token, ws.id, { stf_id: id, input: { fail: true } });
    expect(failed.body).toMatchObject({ success: false, error: { kind: 'runtime', message: 'The container exited with code 1' } });
    const count = await h.sqlOk(owner.token, ws.id, "SELECT count(*)::int AS n FROM notes WHERE body = 'from the container'");
    expect(count.rows).toEqual([{ n: 1 }]);
  });

  it("cannot reach another workspace's tables", async () => {
    const other = await h.user('other');
    const otherWs = await h.workspace(other.token, 'Other');
    await h.sqlOk(other.token, otherWs.id, 'CREATE TABLE vault (secret text)');
    await h.allowAll(other.token, otherWs.id, [other.id], ['vault']);
    await h.sqlOk(other.token, otherWs.id, "INSERT INTO vault (secret) VALUES ('other-workspace-canary')");
    const physical = `ws_${otherWs.id.replace(/-/g, '_')}_vault`;
    const id = await stf(
      owner.token,
      ws.id,
      dockerCode(`return [await sql('SELECT * FROM vault'), await sql('SELECT * FROM ${physical}'), await sql('SELECT * FROM user_data.${physical}')];`),
    );
    const r = await run(owner.token, ws.id, { stf_id: id });
    expect(r.body.success).toBe(true);
    expect(JSON.stringify(r.body)).not.toContain('other-workspace-canary');
    for (const answer of r.body.output) expect(answer.error).toBeTruthy();
  });

  it('passes secrets named in secret_keys and masks them everywhere', async () => {
    const id = await stf(owner.token, ws.id, dockerCode(`console.error('key=' + process.env.API_KEY); if (doc.input.fail) { console.error('failing with ' + process.env.API_KEY); process.exit(2); } return process.env.API_KEY.length;`, { secret_keys: ['API_KEY'] }));
    const missing = await run(owner.token, ws.id, { stf_id: id, input: {} });
    expect(missing.body).toMatchObject({ success: false, error: { kind: 'runtime', message: expect.stringContaining('API_KEY') } });
    await h.call('POST', `/api/v1/stfs/${id}/secrets`, { token: owner.token, workspace: ws.id, body: { env_key: 'API_KEY', value: 'docker-canary-4242' } });
    const ok = await run(owner.token, ws.id, { stf_id: id, input: {} });
    expect(ok.body).toMatchObject({ success: true, output: 18, logs: [{ level: 'log', message: 'key=***' }] });
    const failed = await run(owner.token, ws.id, { stf_id: id, input: { fail: true } });
    expect(failed.body.success).toBe(false);
    expect(failed.body.error.details).toContain('failing with ***');
    expect(JSON.stringify(failed.body)).not.toContain('docker-canary');
    const audit = await h.call('GET', '/api/v1/audit-logs', { token: owner.token, workspace: ws.id });
    expect(JSON.stringify(audit.body)).not.toContain('docker-canary');
  });

  it('reports limits and a missing image as failures of the STF', async () => {
    const image = await stf(owner.token, ws.id, b64(JSON.stringify({ image: 'localhost/not-loaded:1', command: ['x'] })));
    expect((await run(owner.token, ws.id, { stf_id: image })).body).toMatchObject({
      success: false,
      error: { kind: 'invalid_module', message: 'The image localhost/not-loaded:1 is not present on the container engine' },
    });
    const oom = await stf(owner.token, ws.id, dockerCode('const a = []; for (;;) a.push(Buffer.alloc(32 * 1024 * 1024, 1));'));
    const small = await Harness.create({ DOCKER_HOST: inject('dockerHost'), STF_DOCKER_MEMORY_MB: '64', STF_DOCKER_TIMEOUT_MS: '1500' }, h.url);
    try {
      expect((await small.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: oom } })).body).toMatchObject({
        success: false,
        error: { kind: 'memory' },
      });
      const slow = await stf(owner.token, ws.id, b64(JSON.stringify({ image: images.busybox, command: ['sleep', '30'] })));
      expect((await small.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: slow } })).body).toMatchObject({
        success: false,
        error: { kind: 'timeout', message: 'The STF ran longer than 1500 ms' },
      });
    } finally {
      await small.close();
    }
  });

  it('answers 503 when the engine is not reachable, and the rest of the service works', async () => {
    const broken = await Harness.create({ DOCKER_HOST: 'unix:///nonexistent/podman.sock' }, h.url);
    try {
      const id = await stf(owner.token, ws.id, dockerCode('return 1;'));
      const r = await broken.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: id } });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: 'The docker runtime cannot run STFs now' });
      const js = await broken.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'j', version: '1', runtime: 'javascript', code: b64('return 2') } });
      expect((await broken.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: js.body.id } })).body.output).toBe(2);
    } finally {
      await broken.close();
    }
  });

  it('a workflow with a docker step runs it as the STF and is visible as running while it goes on', async () => {
    const id = await stf(owner.token, ws.id, b64(JSON.stringify({ image: images.busybox, command: ['sh', '-c', 'read -r doc; sleep 1; echo \'{"output":{"slow":true}}\''] })));
    const version = (await h.call('GET', `/api/v1/stfs/${id}/versions`, { token: owner.token, workspace: ws.id })).body[0].id;
    const wf = await h.call('POST', '/api/v1/workflows', { token: owner.token, workspace: ws.id, body: { name: 'slow', stf_steps: [{ stf_version_id: version }] } });
    expect(wf.status).toBe(201);
    const pending = h.call('POST', `/api/v1/workflows/${wf.body.id}/execute`, { token: owner.token, workspace: ws.id, body: {} });
    let seen: string | undefined;
    for (let i = 0; i < 50 && !seen; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const runs = await h.call('GET', `/api/v1/workflows/${wf.body.id}/runs`, { token: owner.token, workspace: ws.id });
      seen = runs.body.find((r: any) => r.status === 'running')?.id;
    }
    expect(seen).toBeTruthy();
    const done = await pending;
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ slow: true });
    const run = await h.call('GET', `/api/v1/workflows/${wf.body.id}/runs/${seen}`, { token: owner.token, workspace: ws.id });
    expect(run.body).toMatchObject({ status: 'succeeded', output: { slow: true } });
  });
});
