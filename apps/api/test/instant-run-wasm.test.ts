import { readFileSync } from 'node:fs';
import wabtInit from 'wabt';
import { describe, expect, test } from './support.js';

/** The plugin is built from WAT here (never downloaded): it runs `select id, name from items` through `sql`. */
const wabt = await wabtInit();
const sqlPlugin = (() => {
  const m = wabt.parseWat('sql.wat', readFileSync(new URL('./fixtures/sql.wat', import.meta.url), 'utf8'));
  try {
    return Buffer.from(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
})();
const noMax = Buffer.from(
  (() => {
    const m = wabt.parseWat('x.wat', '(module (memory (export "memory") 1) (func (export "run") (result i32) i32.const 0))');
    try {
      return m.toBinary({}).buffer;
    } finally {
      m.destroy();
    }
  })(),
);

describe('POST /stfs/instant-run (wasm)', () => {
  test('a plugin calls sql() as the calling user, through the policies', async ({ h, owner, ws }) => {
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE items (name text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['items']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO items (name) VALUES ('widget')");
    const c = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'w', version: '1', runtime: 'wasm', code: sqlPlugin.toString('base64') },
    });
    expect(c.status).toBe(201);
    const r = await h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: c.body.id } });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.output.rows.map((x: any) => x.name)).toEqual(['widget']);

    // A member without policies gets the refusal as the host function's answer, not the rows.
    const m = await h.user('member');
    await h.addMember(owner.token, ws.id, m.email, 'member');
    const denied = await h.call('POST', '/api/v1/stfs/instant-run', { token: m.token, workspace: ws.id, body: { stf_id: c.body.id } });
    expect(JSON.stringify(denied.body)).not.toContain('widget');
  });

  test('a module without a memory maximum is refused when saved', async ({ h, owner, ws }) => {
    const r = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'w', version: '1', runtime: 'wasm', code: noMax.toString('base64') },
    });
    expect(r.status).toBe(400);
    expect(r.body.details).toMatch(/maximum/i);
  });
});
