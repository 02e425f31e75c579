import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceError } from '@wds/errors';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Embedder, createEmbedder } from '../src/index.js';

const KEY = 'sk-test-4f9d1c2b8a7e6d5c';
type Handler = (body: any, req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let handler: Handler;
let requests: { body: any; authorization: string | undefined; url: string | undefined }[];

/** An OpenAI-compatible /v1/embeddings that embeds text i as a vector pointing along axis (length % dims). */
const fakeEmbeddings: Handler = (body, _req, res) => {
  const data = (body.input as string[]).map((text, index) => {
    const embedding = new Array(body.dimensions).fill(0);
    embedding[text.length % body.dimensions] = 3; // not unit length: the client normalises
    return { object: 'embedding', index, embedding };
  });
  // Out of order, as the API allows; the client sorts by index.
  res.setHeader('content-type', 'application/json').end(JSON.stringify({ object: 'list', data: data.reverse(), model: body.model }));
};

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const body = JSON.parse(raw || 'null');
      requests.push({ body, authorization: req.headers.authorization, url: req.url });
      handler(body, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  requests = [];
  handler = fakeEmbeddings;
});

const embedder = (over: Partial<{ apiKey: string; timeoutMs: number; dimensions: number }> = {}): Embedder =>
  createEmbedder({ kind: 'openai', baseUrl, apiKey: KEY, model: 'text-embedding-3-small', dimensions: 8, ...over });

/** The ServiceError of a failed embed, checked to never contain the key. */
async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const err = await promise.then(
    () => expect.unreachable('embed should fail'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  const e = err as ServiceError;
  expect(e.code).toBe('EMBEDDING_API_ERROR');
  expect(e.status).toBe(502);
  expect(`${e.message} ${e.details} ${e.stack} ${JSON.stringify(e.toBody())}`).not.toContain(KEY);
  return e;
}

describe('OpenAI-compatible embedder', () => {
  it('posts input, model and dimensions to <baseUrl>/embeddings with the bearer key, and normalises', async () => {
    const out = await embedder().embed(['a', 'bb', 'ccc']);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toEqual({
      url: '/v1/embeddings',
      authorization: `Bearer ${KEY}`,
      body: { input: ['a', 'bb', 'ccc'], model: 'text-embedding-3-small', dimensions: 8 },
    });
    expect(out.map((v) => v.indexOf(1))).toEqual([1, 2, 3]); // in input order, unit length
  });

  it('sends no authorization without a key, accepts a trailing slash, and skips blank texts', async () => {
    const e = createEmbedder({ kind: 'openai', baseUrl: `${baseUrl}/`, model: 'm', dimensions: 4 });
    const out = await e.embed(['', 'xy', '  ']);
    expect(requests[0]!.authorization).toBeUndefined();
    expect(requests[0]!.url).toBe('/v1/embeddings');
    expect(requests[0]!.body.input).toEqual(['xy']);
    expect(out).toEqual([[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]);
    expect(await e.embed(['', ''])).toHaveLength(2);
    expect(requests).toHaveLength(1); // nothing to send
  });

  it('splits large inputs into batches and keeps the order', async () => {
    const texts = Array.from({ length: 300 }, (_, i) => 'x'.repeat(i + 1));
    const out = await embedder().embed(texts);
    expect(requests.map((r) => r.body.input.length)).toEqual([128, 128, 44]);
    expect(out.map((v) => v.indexOf(1))).toEqual(texts.map((t) => t.length % 8));
  });

  it('a 500 becomes EMBEDDING_API_ERROR with the status, and an echoed key is redacted', async () => {
    handler = (_body, req, res) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: { message: `upstream broke for ${req.headers.authorization}` } }));
    };
    const e = await failure(embedder().embed(['hello']));
    expect(e.message).toBe('Embedding API answered 500');
    expect(e.details).toContain('upstream broke for Bearer [redacted]');
    expect(e.details).toContain(`POST ${baseUrl}/embeddings`);
  });

  it('a 401 from a wrong key does not reveal the key', async () => {
    handler = (_body, req, res) => {
      res.statusCode = 401;
      res.end(`Incorrect API key provided: ${req.headers.authorization?.slice(7)}`);
    };
    const e = await failure(embedder().embed(['hello']));
    expect(e.message).toBe('Embedding API answered 401');
  });

  it('times out after timeoutMs', async () => {
    handler = () => {}; // never answers
    const e = await failure(embedder({ timeoutMs: 200 }).embed(['hello']));
    expect(e.message).toBe('Embedding API did not answer within 200 ms'); // its own deadline, not a default
  });

  it('rejects vectors of the wrong dimensions', async () => {
    handler = (body, _req, res) =>
      res.end(JSON.stringify({ data: body.input.map((_: string, index: number) => ({ index, embedding: [1, 0, 0] })) }));
    const wrong = await failure(embedder().embed(['hello']));
    expect(wrong.message).toBe('Embedding API returned vectors of 3 dimensions, expected 8');
  });

  it('rejects the wrong number of embeddings', async () => {
    handler = (_body, _req, res) => res.end(JSON.stringify({ data: [{ index: 0, embedding: new Array(8).fill(1) }] }));
    const e = await failure(embedder().embed(['one', 'two']));
    expect(e.message).toBe('Embedding API returned 1 embeddings for 2 inputs');
  });

  it('rejects malformed bodies', async () => {
    const bodies = [
      'not json',
      JSON.stringify({ nothing: true }),
      JSON.stringify({ data: [{ index: 0, embedding: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] }] }),
      JSON.stringify({ data: [{ index: 5, embedding: new Array(8).fill(1) }] }),
      'null',
    ];
    for (const text of bodies) {
      handler = (_body, _req, res) => res.end(text);
      const e = await failure(embedder().embed(['one']));
      expect(e.message, text).toBe('Embedding API returned a malformed response');
    }
  });

  it('reports a refused connection without the key', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const e = await failure(
      createEmbedder({ kind: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm', dimensions: 8 }).embed(['x']),
    );
    expect(e.message).toBe('Embedding API request failed');
    expect(e.details).toMatch(/ECONNREFUSED/);
    // A key put into the base URL by mistake does not leak through fetch's own error message either.
    await failure(
      createEmbedder({ kind: 'openai', baseUrl: `http://user:${KEY}@127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm', dimensions: 8 }).embed(['x']),
    );
  });
});
