import { describe, expect, test, until } from './support.js';
import type { Harness } from './support.js';

const emb = (ws: string, path: string) => `/api/v1/workspaces/${ws}/embeddings${path}`;


async function upload(h: Harness, token: string, ws: string, filename: string, text: string | Buffer, contentType = 'text/plain') {
  const r = await h.call('POST', `/api/v1/workspaces/${ws}/files`, {
    token,
    workspace: ws,
    body: { filename, content_type: contentType, content: Buffer.from(text).toString('base64') },
  });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

async function tickets(h: Harness, token: string, ws: string, userIds: string[]) {
  await h.sqlOk(token, ws, 'CREATE TABLE tickets (title text, body text, priority int)');
  await h.allowAll(token, ws, userIds, ['tickets']);
  await h.sqlOk(
    token,
    ws,
    `INSERT INTO tickets (title, body, priority) VALUES
      ('printer', 'The office printer is out of paper and jams on every page', 1),
      ('vpn', 'VPN connection drops every few minutes when working from home', 2),
      ('invoice', 'Customer invoice for March shows the wrong tax rate', 3)`,
  );
}

describe('column embeddings', () => {
  test('generate adds the column once, embeds new and changed rows, and search ranks by similarity', async ({ h, owner, ws }) => {
    await tickets(h, owner.token, ws.id, [owner.id]);
    const body = { table_name: 'tickets', column_name: 'body' };
    const g1 = await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body });
    expect(g1.status).toBe(200);
    expect(g1.body).toMatchObject({ generated_count: 3, column_added: true });
    const g2 = await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body });
    expect(g2.body).toMatchObject({ generated_count: 0, column_added: false });

    // The column is there for SQL too.
    const rows = await h.sqlOk(owner.token, ws.id, "SELECT body_embedding FROM tickets WHERE title = 'vpn'");
    expect(Array.isArray(rows.rows[0].body_embedding)).toBe(true);

    await h.sqlOk(owner.token, ws.id, "UPDATE tickets SET body = 'The VPN client cannot connect at all since the update' WHERE title = 'vpn'");
    await h.sqlOk(owner.token, ws.id, "UPDATE tickets SET priority = 5 WHERE title = 'invoice'");
    const st = await h.call('GET', emb(ws.id, '/status?table_name=tickets'), { token: owner.token });
    expect(st.status).toBe(200);
    expect(st.body.columns).toEqual([
      { column_name: 'body', embedding_column: 'body_embedding', total_rows: 3, embedded_rows: 2, pending_rows: 1 },
    ]);
    const g3 = await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body });
    expect(g3.body).toMatchObject({ generated_count: 1, column_added: false });

    const s = await h.call('POST', emb(ws.id, '/similarity-search'), {
      token: owner.token,
      body: { ...body, query: 'printer out of paper', limit: 2 },
    });
    expect(s.status).toBe(200);
    expect(s.body.results).toHaveLength(2);
    expect(s.body.results[0].row.title).toBe('printer');
    expect(s.body.results[0].score).toBeGreaterThan(s.body.results[1].score);
    expect(s.body.results[0].row).not.toHaveProperty('body_embedding');
  });

  test('bad input: unknown table, unknown or non-text column, search before generate', async ({ h, owner, ws }) => {
    await tickets(h, owner.token, ws.id, [owner.id]);
    const call = (path: string, body: object) => h.call('POST', emb(ws.id, path), { token: owner.token, body });
    const unknown = await call('/generate', { table_name: 'nope', column_name: 'body' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/nope does not exist/);
    const nonText = await call('/generate', { table_name: 'tickets', column_name: 'priority' });
    expect(nonText.status).toBe(400);
    expect(nonText.body.error).toMatch(/not text/);
    expect((await call('/generate', { table_name: 'tickets', column_name: 'missing' })).status).toBe(400);
    expect((await call('/generate', { table_name: 'Bad-Name', column_name: 'body' })).body.code).toBe('INVALID_TABLE');
    const early = await call('/similarity-search', { table_name: 'tickets', column_name: 'title', query: 'x' });
    expect(early.status).toBe(409);
    expect(early.body.error).toMatch(/no embeddings yet/);
    expect((await call('/similarity-search', { table_name: 'tickets', column_name: 'body', query: '' })).status).toBe(400);
    expect((await h.call('GET', emb(ws.id, '/status'), { token: owner.token })).status).toBe(400);
  });

  test('generate needs DDL; search honours the caller’s select policies and soft deletes', async ({ h, owner, ws }) => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    await tickets(h, owner.token, ws.id, [owner.id]);
    const body = { table_name: 'tickets', column_name: 'body' };
    const denied = await h.call('POST', emb(ws.id, '/generate'), { token: member.token, body });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('DDL_FORBIDDEN');
    expect((await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body })).status).toBe(200);

    const search = (token: string) =>
      h.call('POST', emb(ws.id, '/similarity-search'), { token, body: { ...body, query: 'printer paper jam', limit: 10 } });
    // No policy for the member: default deny → nothing, not an error that reveals rows.
    const none = await search(member.token);
    expect(none.status).toBe(200);
    expect(none.body.results).toEqual([]);
    // Only priority >= 2.
    const g = await h.group(owner.token, ws.id, { name: 'readers', user_ids: [member.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'tickets', operation: 'select', condition: { priority: { $gte: 2 } } });
    const some = await search(member.token);
    expect(some.body.results.map((r: { row: { title: string } }) => r.row.title).sort()).toEqual(['invoice', 'vpn']);
    // Soft-deleted rows are gone for everyone.
    await h.sqlOk(owner.token, ws.id, "DELETE FROM tickets WHERE title = 'invoice'");
    const after = await search(member.token);
    expect(after.body.results.map((r: { row: { title: string } }) => r.row.title)).toEqual(['vpn']);
    const own = await search(owner.token);
    expect(own.body.results.map((r: { row: { title: string } }) => r.row.title)).not.toContain('invoice');
  });

  test('another workspace can neither reach nor find these rows', async ({ h, owner, ws }) => {
    await tickets(h, owner.token, ws.id, [owner.id]);
    await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body: { table_name: 'tickets', column_name: 'body' } });
    const other = await h.user('other');
    const ws2 = await h.workspace(other.token, 'Other');
    // Not a member of ws: every embeddings route refuses.
    for (const [method, path, body] of [
      ['POST', '/generate', { table_name: 'tickets', column_name: 'body' }],
      ['GET', '/status?table_name=tickets', undefined],
      ['POST', '/similarity-search', { table_name: 'tickets', column_name: 'body', query: 'printer' }],
      ['GET', '/files/status', undefined],
      ['POST', '/files/search', { query: 'printer' }],
      ['GET', '/tables/status', undefined],
      ['POST', '/tables/search', { query: 'printer' }],
    ] as const) {
      const r = await h.call(method, emb(ws.id, path), { token: other.token, ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(r.body)).not.toContain('printer is out of paper');
    }
    // In their own workspace the table name means their (missing) table.
    const r = await h.call('POST', emb(ws2.id, '/similarity-search'), {
      token: other.token,
      body: { table_name: 'tickets', column_name: 'body', query: 'printer' },
    });
    expect(r.status).toBe(400);
    // A mismatching X-Workspace-ID is refused.
    const mismatch = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token, workspace: ws2.id });
    expect(mismatch.status).toBe(400);
  });
});

describe('file embeddings', () => {
  test('embed → status moves to completed; images are skipped; search finds the passage', async ({ h, owner, ws }) => {
    const contract = await upload(h, owner.token, ws.id, 'contract.md', '# Lease\n\nThe tenant pays rent on the first day of each month.\n\nPets are not allowed in the apartment.');
    const recipe = await upload(h, owner.token, ws.id, 'recipe.txt', 'Whisk the eggs with sugar, then fold in the flour and bake for twenty minutes.');
    const image = await upload(h, owner.token, ws.id, 'photo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]), 'image/png');

    const onlyImage = await h.call('POST', emb(ws.id, '/files/embed'), { token: owner.token, body: { file_ids: [image] } });
    expect(onlyImage.status).toBe(503);
    expect(onlyImage.body.code).toBe('MODEL_NOT_MULTIMODAL');

    const r = await h.call('POST', emb(ws.id, '/files/embed'), { token: owner.token, body: { file_ids: [contract, recipe] } });
    expect(r.status).toBe(202);
    expect(r.body.files.map((f: { status: string }) => f.status).every((s: string) => s === 'pending' || s === 'processing' || s === 'completed')).toBe(true);

    const done = await until(async () => {
      const s = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token });
      return s.body.counts.completed === 2 ? s.body : undefined;
    });
    expect(done.counts).toEqual({ pending: 0, processing: 0, completed: 2, failed: 0, skipped: 1 });
    const skipped = done.files.find((f: { file_id: string }) => f.file_id === image);
    expect(skipped).toMatchObject({ status: 'skipped', error: expect.stringMatching(/multimodal/) });

    const s = await h.call('POST', emb(ws.id, '/files/search'), { token: owner.token, body: { query: 'are pets allowed in the apartment', limit: 5 } });
    expect(s.status).toBe(200);
    expect(s.body.results[0]).toMatchObject({ file_id: contract, filename: 'contract.md' });
    expect(s.body.results[0].content).toMatch(/Pets/);
    expect(typeof s.body.results[0].score).toBe('number');

    // A deleted file is not found any more.
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/files/${contract}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    const gone = await h.call('POST', emb(ws.id, '/files/search'), { token: owner.token, body: { query: 'are pets allowed in the apartment' } });
    expect(gone.body.results.map((x: { file_id: string }) => x.file_id)).not.toContain(contract);

    // Regenerate embeds again.
    const again = await h.call('POST', emb(ws.id, '/files/regenerate'), { token: owner.token, body: { file_ids: [recipe] } });
    expect(again.status).toBe(202);
    await until(async () => {
      const st = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token });
      return st.body.files.find((f: { file_id: string; status: string }) => f.file_id === recipe && f.status === 'completed');
    });
  });

  test('a file whose bytes are missing from the store fails with a message that names no server path', async ({ h, owner, ws }) => {
    const id = await upload(h, owner.token, ws.id, 'lost.txt', 'these bytes will be gone');
    const { blob_key } = await h.services.db.selectFrom('platform.files').select('blob_key').where('id', '=', id).executeTakeFirstOrThrow();
    await h.services.blobs.delete(blob_key);
    expect((await h.call('POST', emb(ws.id, '/files/embed'), { token: owner.token, body: { file_ids: [id] } })).status).toBe(202);
    const failed = await until(async () => {
      const st = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token });
      return st.body.files.find((f: { file_id: string; status: string }) => f.file_id === id && f.status === 'failed');
    }, 60_000);
    expect(failed.error).toMatch(/content is missing from the store/);
    const seen = JSON.stringify(failed);
    expect(seen).not.toContain(h.blobDir);
    expect(seen).not.toMatch(/ENOENT|\/blobs\/|no such file/);
    // Its text and download say the same, without a path.
    for (const path of [`/api/v1/workspaces/${ws.id}/files/${id}/text`, `/api/v1/workspaces/${ws.id}/files/${id}/download`]) {
      const r = await h.call('GET', path, { token: owner.token, workspace: ws.id });
      expect(r.status, path).toBe(404);
      expect(JSON.stringify(r.body)).not.toMatch(/ENOENT|\/blobs\/|no such file/);
    }
  });

  test('limits, permissions and other workspaces’ files', async ({ h, owner, ws }) => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    const id = await upload(h, owner.token, ws.id, 'a.txt', 'hello');
    const call = (token: string, file_ids: unknown) => h.call('POST', emb(ws.id, '/files/embed'), { token, body: { file_ids } });
    expect((await call(owner.token, [])).status).toBe(400);
    const many = Array.from({ length: 51 }, () => id);
    expect((await call(owner.token, many)).status).toBe(400);
    expect((await call(owner.token, ['not-a-uuid'])).status).toBe(400);
    expect((await call(member.token, [id])).status).toBe(403);
    expect((await h.call('POST', emb(ws.id, '/files/regenerate'), { token: member.token, body: { file_ids: [id] } })).status).toBe(403);
    // Members may read status and search.
    expect((await h.call('GET', emb(ws.id, '/files/status'), { token: member.token })).status).toBe(200);

    const other = await h.user('other');
    const ws2 = await h.workspace(other.token, 'Other');
    const foreign = await h.call('POST', emb(ws2.id, '/files/embed'), { token: other.token, body: { file_ids: [id] } });
    expect(foreign.status).toBe(404);
  });

  test('search before any file is completed says so', async ({ h, owner, ws }) => {
    const s = await h.call('POST', emb(ws.id, '/files/search'), { token: owner.token, body: { query: 'anything' } });
    // Nothing embedded at all: an empty result, not an error.
    expect(s.status).toBe(200);
    expect(s.body.results).toEqual([]);
  });

  test('auto_embed_files embeds an upload on its own', async ({ h, owner, ws }) => {
    const p = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { auto_embed_files: true } });
    expect(p.status).toBe(200);
    const id = await upload(h, owner.token, ws.id, 'notes.txt', 'Quarterly planning notes: hire two engineers.');
    await until(async () => {
      const st = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token });
      return st.body.files.find((f: { file_id: string; status: string }) => f.file_id === id && f.status === 'completed');
    });
  });
});

describe('table-row embeddings', () => {
  test('embed → status counts → search across tables honours policies; auto_embed_tables follows changes', async ({ h, owner, ws }) => {
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email);
    await tickets(h, owner.token, ws.id, [owner.id]);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE recipes (name text, steps text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['recipes']);
    await h.sqlOk(owner.token, ws.id, "INSERT INTO recipes (name, steps) VALUES ('cake', 'whisk eggs and sugar, bake for twenty minutes')");

    const denied = await h.call('POST', emb(ws.id, '/tables/embed'), { token: member.token, body: { table_names: ['tickets'] } });
    expect(denied.status).toBe(403);
    const bad = await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['nope'] } });
    expect(bad.status).toBe(400);

    const r = await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['tickets', 'recipes'] } });
    expect(r.status).toBe(202);
    const done = await until(async () => {
      const s = await h.call('GET', emb(ws.id, '/tables/status'), { token: owner.token });
      return s.body.tables.every((t: { status: string }) => t.status === 'completed') && s.body.tables.length === 2 ? s.body : undefined;
    });
    expect(done.tables).toEqual([
      { table_name: 'recipes', total_rows: 1, embedded_rows: 1, pending_rows: 0, failed_rows: 0, status: 'completed' },
      { table_name: 'tickets', total_rows: 3, embedded_rows: 3, pending_rows: 0, failed_rows: 0, status: 'completed' },
    ]);

    const search = (token: string, query: string) => h.call('POST', emb(ws.id, '/tables/search'), { token, body: { query, limit: 3 } });
    const s = await search(owner.token, 'bake a cake with eggs');
    expect(s.status).toBe(200);
    expect(s.body.results[0]).toMatchObject({ table_name: 'recipes', row: { name: 'cake' } });
    // The member may read only tickets of priority 1.
    const g = await h.group(owner.token, ws.id, { name: 'readers', user_ids: [member.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'tickets', operation: 'select', condition: { priority: 1 } });
    const m = await search(member.token, 'bake a cake with eggs');
    expect(m.body.results.map((x: { row: { title?: string } }) => x.row.title)).toEqual(['printer']);

    // auto_embed_tables: a changed row is embedded again by itself.
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { auto_embed_tables: true } });
    await h.sqlOk(owner.token, ws.id, "UPDATE recipes SET steps = 'slice tomatoes and mozzarella, drizzle olive oil' WHERE name = 'cake'");
    await until(async () => {
      const q = await search(owner.token, 'tomatoes mozzarella olive oil');
      return q.body.results[0]?.row?.steps?.includes('tomatoes') ? true : undefined;
    });
    // Deleted rows leave the index.
    await h.sqlOk(owner.token, ws.id, "DELETE FROM tickets WHERE title = 'vpn'");
    await until(async () => {
      const st = await h.call('GET', emb(ws.id, '/tables/status'), { token: owner.token });
      const t = st.body.tables.find((x: { table_name: string }) => x.table_name === 'tickets');
      return t.total_rows === 2 && t.embedded_rows === 2 ? true : undefined;
    });

    const regen = await h.call('POST', emb(ws.id, '/tables/regenerate'), { token: owner.token, body: {} });
    expect(regen.status).toBe(202);
    expect(regen.body.tables.map((t: { table_name: string }) => t.table_name)).toEqual(['recipes', 'tickets']);
  });
});

describe('counts of rows the caller cannot read', () => {
  type Col = { total_rows: number; embedded_rows: number; pending_rows: number };
  type Tbl = { table_name: string; total_rows: number; embedded_rows: number; pending_rows: number; failed_rows: number; status: string };

  // A member with no select policy on tickets, one who may read priority 1 only, and one of the DDL group (no select
  // policy either): the first two are counted only the rows their SELECT returns, the DDL member the whole table.
  async function readers(h: Harness, owner: { token: string; id: string }, ws: string) {
    const none = await h.user('none');
    const some = await h.user('some');
    const ddl = await h.user('ddl');
    for (const u of [none, some, ddl]) await h.addMember(owner.token, ws, u.email);
    await tickets(h, owner.token, ws, [owner.id]);
    const g = await h.group(owner.token, ws, { name: 'p1', user_ids: [some.id] });
    await h.policy(owner.token, ws, { policy_group_id: g, table_name: 'tickets', operation: 'select', condition: { priority: 1 } });
    const d = await h.group(owner.token, ws, { name: 'ddl', user_ids: [ddl.id] });
    expect((await h.call('PATCH', `/api/v1/workspaces/${ws}`, { token: owner.token, body: { ddl_policy_group_id: d } })).status).toBe(200);
    return { none, some, ddl };
  }

  test('column status counts only the rows the caller may read, whatever hidden rows come and go', async ({ h, owner, ws }) => {
    const { none, some, ddl } = await readers(h, owner, ws.id);
    const body = { table_name: 'tickets', column_name: 'body' };
    expect((await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body })).status).toBe(200);
    const status = async (token: string): Promise<Col> => {
      const r = await h.call('GET', emb(ws.id, '/status?table_name=tickets'), { token });
      expect(r.status).toBe(200);
      return r.body.columns[0];
    };
    const counts = (total: number, embedded: number) => ({ total_rows: total, embedded_rows: embedded, pending_rows: total - embedded });
    expect(await status(owner.token)).toMatchObject(counts(3, 3));
    expect(await status(ddl.token)).toMatchObject(counts(3, 3));
    expect(await status(none.token)).toMatchObject(counts(0, 0));
    expect(await status(some.token)).toMatchObject(counts(1, 1));

    // Hidden rows come (not embedded yet), change and go: the members' counts never move.
    await h.sqlOk(owner.token, ws.id, "INSERT INTO tickets (title, body, priority) VALUES ('h1', 'hidden one', 2), ('h2', 'hidden two', 3)");
    expect(await status(owner.token)).toMatchObject(counts(5, 3));
    expect(await status(none.token)).toMatchObject(counts(0, 0));
    expect(await status(some.token)).toMatchObject(counts(1, 1));
    await h.sqlOk(owner.token, ws.id, "UPDATE tickets SET body = 'changed' WHERE title = 'vpn'");
    expect(await status(ddl.token)).toMatchObject(counts(5, 2));
    expect(await status(some.token)).toMatchObject(counts(1, 1));
    await h.sqlOk(owner.token, ws.id, "DELETE FROM tickets WHERE title IN ('h1', 'h2', 'invoice')");
    expect(await status(owner.token)).toMatchObject(counts(2, 1));
    expect(await status(none.token)).toMatchObject(counts(0, 0));
    expect(await status(some.token)).toMatchObject(counts(1, 1));
    // Their own rows do count: a change to a row they can read is pending for them.
    await h.sqlOk(owner.token, ws.id, "UPDATE tickets SET body = 'the printer is fine now' WHERE title = 'printer'");
    expect(await status(some.token)).toMatchObject(counts(1, 0));
    // A search by someone no policy lets read the table finds nothing.
    const s = await h.call('POST', emb(ws.id, '/similarity-search'), { token: none.token, body: { ...body, query: 'printer' } });
    expect(s.body.results).toEqual([]);
  });

  test('table status and search status count only the rows the caller may read; hidden rows leave no trace', async ({ h, owner, ws }) => {
    const { none, some, ddl } = await readers(h, owner, ws.id);
    const tables = async (token: string): Promise<Tbl[]> => {
      const r = await h.call('GET', emb(ws.id, '/tables/status'), { token });
      expect(r.status).toBe(200);
      return r.body.tables;
    };
    const search = async (token: string) => h.call('POST', emb(ws.id, '/tables/search'), { token, body: { query: 'printer paper', limit: 5 } });
    const settled = (total: number) => until(async () => {
      const t = (await tables(owner.token)).find((x) => x.table_name === 'tickets');
      return t && t.status === 'completed' && t.total_rows === total && t.embedded_rows === total ? t : undefined;
    });
    expect((await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['tickets'] } })).status).toBe(202);
    await settled(3);
    const mine = (total: number, embedded: number) => [
      { table_name: 'tickets', total_rows: total, embedded_rows: embedded, pending_rows: total - embedded, failed_rows: 0, status: 'completed' },
    ];
    expect(await tables(ddl.token)).toEqual(mine(3, 3));
    expect(await tables(none.token)).toEqual([]);
    expect(await tables(some.token)).toEqual(mine(1, 1));
    const before = { none: await search(none.token), some: await search(some.token) };
    expect(before.none.status).toBe(200);
    expect(before.none.body).toEqual({ results: [], status: { pending: 0, processing: 0, completed: 0, failed: 0, skipped: 0 } });
    expect(before.some.body.status).toEqual({ pending: 0, processing: 0, completed: 1, failed: 0, skipped: 0 });
    expect(before.some.body.results.map((r: { row: { title: string } }) => r.row.title)).toEqual(['printer']);

    // A hidden row not embedded yet is pending for the owner only.
    await h.sqlOk(owner.token, ws.id, "INSERT INTO tickets (title, body, priority) VALUES ('h1', 'hidden printer paper', 2)");
    expect((await tables(owner.token))[0]?.total_rows).toBe(4);
    expect(await tables(none.token)).toEqual([]);
    expect(await tables(some.token)).toEqual(mine(1, 1));
    // With auto-embed, hidden rows come and go through the job: the members' answers are the same throughout.
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { auto_embed_tables: true } });
    await h.sqlOk(owner.token, ws.id, "INSERT INTO tickets (title, body, priority) VALUES ('h2', 'hidden printer toner', 3)");
    await settled(5);
    expect(await tables(none.token)).toEqual([]);
    expect(await tables(some.token)).toEqual(mine(1, 1));
    expect((await search(none.token)).body).toEqual(before.none.body);
    expect((await search(some.token)).body.status).toEqual(before.some.body.status);
    await h.sqlOk(owner.token, ws.id, "DELETE FROM tickets WHERE title IN ('h1', 'h2')");
    await settled(3);
    expect(await tables(none.token)).toEqual([]);
    expect(await tables(some.token)).toEqual(mine(1, 1));
  });

  test('counted over pages of the caller’s rows (more than SQL_MAX_ROWS, integer ids in their own order)', async ({ h, owner, ws }) => {
    const some = await h.user('some');
    await h.addMember(owner.token, ws.id, some.email);
    const max = h.services.config.SQL_MAX_ROWS;
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE bulk (id int PRIMARY KEY, body text, priority int)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['bulk']);
    // Visible: ids 1 … 2·max+1 of priority 1 (1000 sorts before 999 as text: the pages follow the integers); hidden: the rest.
    const visible = 2 * max + 1;
    await h.sqlOk(owner.token, ws.id, `INSERT INTO bulk SELECT g, 'row ' || g, CASE WHEN g <= ${visible} THEN 1 ELSE 2 END FROM generate_series(1, ${visible + 300}) g`);
    const g = await h.group(owner.token, ws.id, { name: 'p1', user_ids: [some.id] });
    await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'bulk', operation: 'select', condition: { priority: 1 } });
    expect((await h.call('POST', emb(ws.id, '/generate'), { token: owner.token, body: { table_name: 'bulk', column_name: 'body' } })).status).toBe(200);
    await h.sqlOk(owner.token, ws.id, `UPDATE bulk SET body = 'changed ' || id WHERE id > ${max} - 10`);
    const status = async (token: string) => (await h.call('GET', emb(ws.id, '/status?table_name=bulk'), { token })).body.columns[0];
    expect(await status(owner.token)).toMatchObject({ total_rows: visible + 300, embedded_rows: max - 10 });
    expect(await status(some.token)).toMatchObject({ total_rows: visible, embedded_rows: max - 10, pending_rows: visible - max + 10 });

    expect((await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['bulk'] } })).status).toBe(202);
    await until(async () => {
      const t = (await h.call('GET', emb(ws.id, '/tables/status'), { token: owner.token })).body.tables[0];
      return t?.status === 'completed' && t.embedded_rows === visible + 300 ? t : undefined;
    }, 120_000);
    const mine = (await h.call('GET', emb(ws.id, '/tables/status'), { token: some.token })).body.tables;
    expect(mine).toEqual([{ table_name: 'bulk', total_rows: visible, embedded_rows: visible, pending_rows: 0, failed_rows: 0, status: 'completed' }]);
  }, 180_000);
});
