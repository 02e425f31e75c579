import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, until } from './support.js';

/**
 * The OpenAI-compatible embedder against a fake provider on 127.0.0.1, the `none` embedder, and a restart while a
 * file is being embedded (the next process resumes the job after its deadline).
 */
type Mode = 'ok' | 'fail' | 'hang' | 'wrong-dims';
let mode: Mode = 'ok';
let requests = 0;
const hanging: ServerResponse[] = [];
const DIMS = 8;
const KEY = 'sk-test-secret-key-123';

function vectorOf(text: string): number[] {
  const v = Array.from({ length: DIMS }, (_, i) => [...text].reduce((a, c) => a + ((c.charCodeAt(0) * (i + 1)) % 7), 1));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

let fake: Server;
let baseUrl = '';
beforeAll(async () => {
  fake = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      requests++;
      if (req.url !== '/v1/embeddings' || req.headers.authorization !== `Bearer ${KEY}`) {
        res.writeHead(404).end();
        return;
      }
      if (mode === 'hang') return void hanging.push(res);
      if (mode === 'fail') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
      const { input } = JSON.parse(body) as { input: string[] };
      const dims = mode === 'wrong-dims' ? DIMS + 1 : DIMS;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ data: input.map((t, index) => ({ index, embedding: vectorOf(t).concat(dims > DIMS ? [0] : []) })), model: 'fake' }),
      );
    });
  });
  await new Promise<void>((ok) => fake.listen(0, '127.0.0.1', ok));
  baseUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  for (const r of hanging) r.destroy();
  fake.closeAllConnections();
  await new Promise((ok) => fake.close(ok));
});

const env = () => ({
  EMBEDDER: 'openai',
  EMBEDDING_BASE_URL: baseUrl,
  EMBEDDING_API_KEY: KEY,
  EMBEDDING_MODEL: 'fake',
  EMBEDDING_DIMENSIONS: String(DIMS),
  EMBEDDING_TIMEOUT_MS: '60000',
  EMBEDDING_JOB_TIMEOUT_MS: '2000',
  JOB_POLL_INTERVAL_MS: '500',
});


describe('remote embedder', () => {
  it('embeds through the provider; a 500 or wrong dimensions is 502 EMBEDDING_API_ERROR without the key', async () => {
    const h = await Harness.create(env());
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
      await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
      await h.sqlOk(owner.token, ws.id, "INSERT INTO notes (body) VALUES ('alpha'), ('beta')");
      const gen = () =>
        h.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/generate`, { token: owner.token, body: { table_name: 'notes', column_name: 'body' } });
      mode = 'fail';
      const failed = await gen();
      expect(failed.status).toBe(502);
      expect(failed.body.code).toBe('EMBEDDING_API_ERROR');
      expect(JSON.stringify(failed.body)).not.toContain(KEY);
      mode = 'wrong-dims';
      const wrong = await gen();
      expect(wrong.status).toBe(502);
      expect(wrong.body.code).toBe('EMBEDDING_API_ERROR');
      mode = 'ok';
      const ok = await gen();
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ generated_count: 2, column_added: true });
      const s = await h.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/similarity-search`, {
        token: owner.token,
        body: { table_name: 'notes', column_name: 'body', query: 'alpha' },
      });
      expect(s.body.results[0].row.body).toBe('alpha');
      expect(s.body.results[0].score).toBeCloseTo(1, 5);
    } finally {
      mode = 'ok';
      await h.close();
    }
  });

  it('EMBEDDER=none answers 503 EMBEDDING_NOT_CONFIGURED', async () => {
    const h = await Harness.create({ EMBEDDER: 'none' });
    try {
      const owner = await h.user('owner');
      const ws = await h.workspace(owner.token);
      for (const [path, body] of [
        ['/generate', { table_name: 't', column_name: 'c' }],
        ['/files/embed', { file_ids: ['00000000-0000-4000-8000-000000000000'] }],
        ['/files/search', { query: 'x' }],
        ['/tables/embed', { table_names: ['t'] }],
        ['/tables/search', { query: 'x' }],
      ] as const) {
        const r = await h.call('POST', `/api/v1/workspaces/${ws.id}/embeddings${path}`, { token: owner.token, body });
        expect(r.status, path).toBe(503);
        expect(r.body.code).toBe('EMBEDDING_NOT_CONFIGURED');
      }
    } finally {
      await h.close();
    }
  });

  it('a restart while a file is processing: the next process takes the job over after its deadline', async () => {
    const blobs = mkdtempSync(join(tmpdir(), 'wds-restart-'));
    const h1 = await Harness.create({ ...env(), STORAGE_DIR: blobs });
    const owner = await h1.user('owner');
    const ws = await h1.workspace(owner.token);
    const up = await h1.call('POST', `/api/v1/workspaces/${ws.id}/files`, {
      token: owner.token,
      workspace: ws.id,
      body: { filename: 'a.txt', content: Buffer.from('restart me').toString('base64') },
    });
    mode = 'hang';
    const before = requests;
    expect((await h1.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/files/embed`, { token: owner.token, body: { file_ids: [up.body.id] } })).status).toBe(202);
    await until(async () => (requests > before ? true : undefined));
    const status = async (h: Harness) =>
      (await h.call('GET', `/api/v1/workspaces/${ws.id}/embeddings/files/status`, { token: owner.token })).body.files[0].status as string;
    expect(await status(h1)).toBe('processing');
    // Searching while nothing is completed says so.
    const early = await h1.call('POST', `/api/v1/workspaces/${ws.id}/embeddings/files/search`, { token: owner.token, body: { query: 'x' } });
    expect(early.status).toBe(409);
    expect(early.body.error).toMatch(/not|No file embeddings are completed yet/);
    // The process goes away mid-job.
    await h1.services.jobs.stop();
    await h1.close();
    mode = 'ok';
    const h2 = await Harness.create({ ...env(), STORAGE_DIR: blobs }, h1.url);
    try {
      await h2.services.jobs.start();
      const done = await until(async () => ((await status(h2)) === 'completed' ? true : undefined));
      expect(done).toBe(true);
    } finally {
      await h2.close();
      rmSync(blobs, { recursive: true, force: true });
    }
  });
});
