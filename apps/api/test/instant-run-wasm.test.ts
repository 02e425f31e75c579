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
const build = (source: string) => {
  const m = wabt.parseWat('x.wat', source, { reference_types: true, bulk_memory: true });
  try {
    return Buffer.from(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
};
const noMax = build('(module (memory (export "memory") 1) (func (export "run") (result i32) i32.const 0))');
const RUN = '(func (export "run") (result i32) (i32.const 0))';

/** A module of `count` i64 globals (written as bytes: as WAT text it would take wabt longer than the engine). */
function manyGlobals(count: number): Buffer {
  const uleb = (n: number) => {
    const out: number[] = [];
    do {
      let b = n & 0x7f;
      n = Math.floor(n / 128);
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const globals = [...uleb(count)];
  for (let i = 0; i < count; i++) globals.push(0x7e, 0x00, 0x42, 0x00, 0x0b);
  const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
  const head = [0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...section(1, [1, 0x60, 0, 1, 0x7f]), ...section(3, [1, 0])];
  const tail = [...section(7, [1, 3, 0x72, 0x75, 0x6e, 0, 0]), ...section(10, [1, 4, 0, 0x41, 0, 0x0b])];
  return Buffer.concat([Buffer.from(head), Buffer.from([6, ...uleb(globals.length)]), Buffer.from(globals), Buffer.from(tail)]);
}

/**
 * Issue 28: what a module may declare that costs host memory outside its linear memory. Before the fix each of
 * these was saved and run: five such tables took the API process from 165 MB to 1.5 GB per run.
 */
const HOST_MEMORY_BOMBS: [string, Buffer, RegExp][] = [
  ['five tables of 10,000,000 entries', build(`(module ${'(table 10000000 funcref) '.repeat(5)} ${RUN})`), /table 0 declares no maximum size/],
  [
    'a table grown by table.grow',
    build('(module (table 1 funcref) (func (export "run") (result i32) (drop (table.grow 0 (ref.null func) (i32.const 9999999))) (i32.const 0)))'),
    /table declares no maximum size/,
  ],
  ['a table maximum of 10,000,000', build(`(module (table 1 10000000 funcref) ${RUN})`), /tables may grow to 10000000 entries; at most 10000/],
  ['17 tables', build(`(module ${'(table 1 1 funcref) '.repeat(17)} ${RUN})`), /17 tables; at most 16/],
  ['a million globals', manyGlobals(1_000_000), /1000000 globals; at most 10000/],
];

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

  test.for(HOST_MEMORY_BOMBS)('%s: refused when saved and when run as code, 400 VALIDATION_ERROR', async ([, code, reason], { h, owner, ws }) => {
    const base64 = code.toString('base64');
    const saved = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'bomb', version: '1', runtime: 'wasm', code: base64 },
    });
    expect(saved.status).toBe(400);
    expect(saved.body.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(saved.body)).toMatch(reason);
    const ran = await h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { runtime: 'wasm', code: base64 } });
    expect(ran.status).toBe(400);
    expect(ran.body.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(ran.body)).toMatch(reason);
    expect((await h.call('GET', '/api/v1/stfs', { token: owner.token, workspace: ws.id })).body).toHaveLength(0);
  });

  test('a table within the bounds, grown to its maximum in runs of two workspaces at once, runs and ends at its limit', async ({ h, owner, ws }) => {
    const grow = build(`(module (table 1 10000 funcref) (func (export "run") (result i32)
      (loop $l (br_if $l (i32.ne (table.grow 0 (ref.null func) (i32.const 100)) (i32.const -1))))
      (i32.const 0)))`);
    const other = await h.workspace(owner.token, 'second');
    const runs = await Promise.all(
      [ws.id, other.id].map((id) => h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: id, body: { runtime: 'wasm', code: grow.toString('base64') } })),
    );
    for (const r of runs) {
      expect(r.status).toBe(200);
      // It grew to its maximum and returned without output: the plugin's own failure, not the host's.
      expect(r.body).toMatchObject({ success: false, error: { kind: 'invalid_output' } });
    }
  });
});
