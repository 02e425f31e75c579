import { describe, expect, it } from 'vitest';
import { Harness } from './support.js';

/** The default embedder — the Universal Sentence Encoder shipped inside the npm package — end to end, offline. */
describe('local embedder', () => {
  it('ranks rows by meaning, not by shared words', async () => {
    const h = await Harness.create({ EMBEDDER: 'local' });
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      await h.sqlOk(owner.token, ws.id, 'CREATE TABLE sentences (body text)');
      await h.allowAll(owner.token, ws.id, [owner.id], ['sentences']);
      await h.sqlOk(
        owner.token,
        ws.id,
        "INSERT INTO sentences (body) VALUES ('The cat sat on the mat.'), ('Stock markets fell sharply today.'), ('The weather will be rainy tomorrow.')",
      );
      const g = await h.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/generate`, {
        token: owner.token,
        body: { table_name: 'sentences', column_name: 'body' },
      });
      expect(g.status).toBe(200);
      expect(g.body).toMatchObject({ generated_count: 3, column_added: true });
      const rows = await h.sqlOk(owner.token, ws.id, 'SELECT body_embedding FROM sentences LIMIT 1');
      expect(rows.rows[0].body_embedding).toHaveLength(512);
      const s = await h.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/similarity-search`, {
        token: owner.token,
        body: { table_name: 'sentences', column_name: 'body', query: 'A kitten is resting on a rug', limit: 3 },
      });
      expect(s.status).toBe(200);
      expect(s.body.results.map((r: { row: { body: string } }) => r.row.body)[0]).toBe('The cat sat on the mat.');
    } finally {
      await h.close();
    }
  });
});
