import { ServiceError } from '@wds/errors';
import { describe, expect, it } from 'vitest';
import { createEmbedder, dot, requireEmbedder } from '../src/index.js';

describe('createEmbedder / requireEmbedder', () => {
  it('none gives null, and requireEmbedder turns that into EMBEDDING_NOT_CONFIGURED (503)', () => {
    const none = createEmbedder({ kind: 'none' });
    expect(none).toBeNull();
    try {
      requireEmbedder(none);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ServiceError);
      expect(err).toMatchObject({ code: 'EMBEDDING_NOT_CONFIGURED', status: 503 });
    }
    const hashing = createEmbedder({ kind: 'hashing' });
    expect(requireEmbedder(hashing)).toBe(hashing);
  });

  it('describes each kind; the local model is not loaded until it embeds', () => {
    expect(createEmbedder({ kind: 'local' })).toMatchObject({
      kind: 'local',
      model: 'universal-sentence-encoder-lite',
      dimensions: 512,
      multimodal: false,
    });
    expect(createEmbedder({ kind: 'hashing' })).toMatchObject({ kind: 'hashing', dimensions: 384, multimodal: false });
    expect(createEmbedder({ kind: 'hashing', dimensions: 64 }).dimensions).toBe(64);
    expect(
      createEmbedder({ kind: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', dimensions: 8 }),
    ).toMatchObject({ kind: 'openai', model: 'm', dimensions: 8, multimodal: false });
  });

  it('rejects bad configuration as EMBEDDING_NOT_CONFIGURED', () => {
    const bad = [
      { kind: 'hashing', dimensions: 1 },
      { kind: 'hashing', dimensions: 2.5 },
      { kind: 'openai', baseUrl: 'not a url', model: 'm', dimensions: 8 },
      { kind: 'openai', baseUrl: 'ftp://x/v1', model: 'm', dimensions: 8 },
      { kind: 'openai', baseUrl: 'http://x/v1', model: '', dimensions: 8 },
      { kind: 'openai', baseUrl: 'http://x/v1', model: 'm', dimensions: 0 },
      { kind: 'magic' },
    ];
    for (const config of bad) {
      expect(() => createEmbedder(config as any), JSON.stringify(config)).toThrow(
        expect.objectContaining({ code: 'EMBEDDING_NOT_CONFIGURED' }),
      );
    }
  });
});

describe('hashing embedder', () => {
  const embedder = createEmbedder({ kind: 'hashing' });

  it('is deterministic, unit length, and across instances', async () => {
    const texts = ['The cat sat on the mat', 'Stock markets fell sharply today', 'Ünïcödé und Umlaute 😀'];
    const [a, b, c] = [await embedder.embed(texts), await embedder.embed(texts), await createEmbedder({ kind: 'hashing' }).embed(texts)];
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    for (const v of a) {
      expect(v).toHaveLength(384);
      expect(Math.hypot(...v)).toBeCloseTo(1, 10);
    }
    expect(a[0]).not.toEqual(a[1]);
  });

  it('scores lexical overlap: shared words are similar, unrelated text is not', async () => {
    const [cat, cat2, stocks, same] = await embedder.embed([
      'The cat sat on the mat',
      'The cat was sitting on the mat',
      'Stock markets fell sharply today',
      'the CAT sat on the mat!',
    ]);
    expect(dot(cat!, same!)).toBeCloseTo(1, 6); // case and punctuation do not matter
    expect(dot(cat!, cat2!)).toBeGreaterThan(0.4);
    expect(Math.abs(dot(cat!, stocks!))).toBeLessThan(0.2);
    expect(dot(cat!, cat2!)).toBeGreaterThan(dot(cat!, stocks!) + 0.3);
  });

  it('gives blank texts the zero vector and keeps the order', async () => {
    const out = await embedder.embed(['', 'hello world', '   \n']);
    expect(out).toHaveLength(3);
    expect(out[0]!.every((x) => x === 0)).toBe(true);
    expect(out[2]!.every((x) => x === 0)).toBe(true);
    expect(out[1]).toEqual((await embedder.embed(['hello world']))[0]);
    expect(await embedder.embed([])).toEqual([]);
  });
});
