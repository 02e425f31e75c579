import { readFileSync } from 'node:fs';
import { DEFAULT_LIMITS, type StfRuntime } from '@wds/stf-runtime';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Harness } from './support.js';

/**
 * sql() of every runtime as an STF subject (how workflow steps run, docs/sql-and-policies.md#policies): the STF's
 * policy groups apply, `$user_id` is the executing user (or NULL when anonymous), and a user's own policies do not.
 */
const images = inject('dockerImages');
const QUERY = 'select id, name from items';
const wabt = await wabtInit();
const wasmCode = (() => {
  const m = wabt.parseWat('sql.wat', readFileSync(new URL('./fixtures/sql.wat', import.meta.url), 'utf8'));
  try {
    return Buffer.from(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
})();
const dockerProgram = `
  const http = require('node:http');
  let raw = '';
  process.stdin.on('data', (d) => (raw += d)).on('end', () => {
    const doc = JSON.parse(raw);
    const req = http.request({ socketPath: doc.api_socket, path: '/sql', method: 'POST', headers: { authorization: 'Bearer ' + doc.api_token } }, (res) => {
      let text = ''; res.on('data', (d) => (text += d)); res.on('end', () => console.log(JSON.stringify({ output: JSON.parse(text) })));
    });
    req.end(JSON.stringify({ query: ${JSON.stringify(QUERY)} }));
  });`;

const CODE = {
  javascript: Buffer.from(`try { return { rows: sql(${JSON.stringify(QUERY)}) }; } catch (e) { return { error: e.message }; }`),
  wasm: wasmCode,
  docker: Buffer.from(JSON.stringify({ image: images.node, command: ['/usr/bin/node', '-e', dockerProgram] })),
} as const;
type Runtime = keyof typeof CODE;

let h: Harness;
let ws: { id: string };
let alice: Awaited<ReturnType<Harness['user']>>;
const stfIds = {} as Record<Runtime, string>;
let outsider: string;

beforeAll(async () => {
  h = await Harness.create({ DOCKER_HOST: inject('dockerHost'), STF_DOCKER_TIMEOUT_MS: '20000' });
  const owner = await h.user('owner');
  alice = await h.user('alice');
  ws = await h.workspace(owner.token, 'Subjects');
  await h.addMember(owner.token, ws.id, alice.email, 'member');
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE items (owner_id uuid, name text)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['items']);
  await h.sqlOk(owner.token, ws.id, `INSERT INTO items (owner_id, name) VALUES ('${alice.id}', 'alice item'), ('${owner.id}', 'owner item'), (NULL, 'nobody item')`);
  for (const runtime of Object.keys(CODE) as Runtime[]) {
    const r = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: { name: runtime, version: '1', runtime, code: CODE[runtime].toString('base64') },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    stfIds[runtime] = r.body.id;
  }
  const other = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'outsider', version: '1', runtime: 'javascript', code: CODE.javascript.toString('base64') } });
  outsider = other.body.id;
  // The STFs (not alice) may read the rows of the executing user; alice's own policy must not carry over to them.
  const g = await h.group(owner.token, ws.id, { name: 'stfs', stf_ids: Object.values(stfIds) });
  await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'items', operation: 'select', condition: { owner_id: '$user_id' } });
  const ag = await h.group(owner.token, ws.id, { name: 'alice', user_ids: [alice.id] });
  await h.policy(owner.token, ws.id, { policy_group_id: ag, table_name: 'items', operation: 'select' });
});
afterAll(async () => {
  await h?.close();
});

async function runAs(runtime: Runtime, stfId: string, userId: string | null): Promise<{ rows?: { name: string }[]; error?: string }> {
  const session = await h.services.sql.openSession(
    { workspaceId: ws.id, ddlGroupId: null, isAdmin: false, subject: { kind: 'stf', stfId, userId } },
    { statementTimeoutMs: 2000, maxRows: 100 },
  );
  try {
    const rt = h.services.runtimes[runtime] as StfRuntime;
    const result = await rt.run({
      code: runtime === 'javascript' ? CODE[runtime].toString('utf8') : CODE[runtime],
      input: null,
      sources: {},
      caller: userId,
      workspaceId: ws.id,
      stfId,
      secrets: {},
      limits: { ...DEFAULT_LIMITS, timeoutMs: 20_000, memoryBytes: 128 * 1024 * 1024 },
      sql: (q) => session.query(q),
    });
    return result.output as { rows?: { name: string }[]; error?: string };
  } finally {
    await session.end(false);
  }
}

describe.each(Object.keys(CODE) as Runtime[])('sql() as an STF subject (%s)', (runtime) => {
  it("sees the executing user's rows through the STF's policy, not the user's", async () => {
    const out = await runAs(runtime, stfIds[runtime], alice.id);
    expect(out.rows?.map((r) => r.name)).toEqual(['alice item']);
  });

  it('sees nothing of anyone when the execution is anonymous ($user_id is NULL)', async () => {
    const out = await runAs(runtime, stfIds[runtime], null);
    expect(out.rows ?? []).toEqual([]);
    expect(JSON.stringify(out)).not.toContain('item');
  });
});

it('an STF outside the policy group is refused, whoever executes it', async () => {
  const out = await runAs('javascript', outsider, alice.id);
  expect(out.error).toBeTruthy();
  expect(JSON.stringify(out)).not.toContain('item');
});
