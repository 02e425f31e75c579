import { describe, expect, it } from 'vitest';
import { type TextChunk, chunkText } from '../src/index.js';
import { seededRandom } from './fixtures.js';

/** The invariants every chunking must keep. */
function checkChunks(text: string, chunks: TextChunk[], maxChars: number, overlap: number): void {
  const covered = new Uint8Array(text.length);
  for (const [i, c] of chunks.entries()) {
    expect(c.content).toBe(text.slice(c.start, c.end));
    expect(c.content.length).toBeGreaterThan(0);
    expect(c.content.length).toBeLessThanOrEqual(maxChars);
    expect(c.content).toBe(c.content.trim());
    covered.fill(1, c.start, c.end);
    const prev = chunks[i - 1];
    if (prev) {
      expect(c.start).toBeGreaterThan(prev.start);
      if (overlap === 0) expect(c.start).toBeGreaterThanOrEqual(prev.end);
      else expect(prev.end - c.start).toBeLessThanOrEqual(overlap);
      // No gap: what lies between two chunks is whitespace.
      if (c.start > prev.end) expect(text.slice(prev.end, c.start).trim()).toBe('');
    }
    // No chunk splits a surrogate pair.
    expect(/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(c.content)).toBe(false);
  }
  const uncovered: number[] = [];
  for (let i = 0; i < text.length; i++) if (!covered[i] && !/\s/.test(text[i]!)) uncovered.push(i);
  expect(uncovered, 'characters in no chunk').toEqual([]);
}

const sentence = (random: () => number) => {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'embedding', 'vector', 'search', 'table', 'row', 'ünïcode', '😀'];
  const n = 4 + Math.floor(random() * 14);
  const s = Array.from({ length: n }, () => words[Math.floor(random() * words.length)]).join(' ');
  return `${s[0]!.toUpperCase()}${s.slice(1)}${random() < 0.8 ? '.' : '?'}`;
};

describe('chunkText', () => {
  it('returns short text as one chunk and whitespace as none', () => {
    expect(chunkText('  Hello world.  ')).toEqual([{ content: 'Hello world.', start: 2, end: 14 }]);
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\t ')).toEqual([]);
  });

  it('prefers paragraph breaks, then sentence ends, then spaces', () => {
    const para = `${'a'.repeat(60)} end.\n\n${'b'.repeat(30)} more.`;
    expect(chunkText(para, { maxChars: 80, overlap: 0 }).map((c) => c.content)).toEqual([`${'a'.repeat(60)} end.`, `${'b'.repeat(30)} more.`]);

    const sentences = 'First sentence is here. Second one follows it! Third sentence ends the text for now.';
    expect(chunkText(sentences, { maxChars: 50, overlap: 0 }).map((c) => c.content)).toEqual([
      'First sentence is here. Second one follows it!',
      'Third sentence ends the text for now.',
    ]);

    const words = 'one two three four five six seven eight nine ten eleven twelve';
    const byWords = chunkText(words, { maxChars: 20, overlap: 0 }).map((c) => c.content);
    expect(byWords).toEqual(['one two three four', 'five six seven eight', 'nine ten eleven', 'twelve']);
  });

  it('overlaps at a sentence or word start within the overlap', () => {
    const text = 'Alpha beta gamma delta. Epsilon zeta eta theta. Iota kappa lambda mu. Nu xi omicron pi.';
    const chunks = chunkText(text, { maxChars: 50, overlap: 24 });
    checkChunks(text, chunks, 50, 24);
    expect(chunks.map((c) => c.content)).toEqual([
      'Alpha beta gamma delta. Epsilon zeta eta theta.',
      'Epsilon zeta eta theta. Iota kappa lambda mu.',
      'Iota kappa lambda mu. Nu xi omicron pi.',
    ]);
  });

  it('cuts words longer than maxChars, overlapping by characters, without splitting surrogate pairs', () => {
    const long = 'x'.repeat(250);
    const chunks = chunkText(`start ${long} end`, { maxChars: 100, overlap: 10 });
    checkChunks(`start ${long} end`, chunks, 100, 10);
    expect(chunks.map((c) => c.content.length)).toEqual([100, 100, 80]); // 'start xx…', then x 90–190, then x 180–256 and ' end'

    const emoji = '😀'.repeat(100); // 200 UTF-16 units
    const e = chunkText(emoji, { maxChars: 51, overlap: 0 });
    checkChunks(emoji, e, 51, 0);
    expect(e.every((c) => c.content.length === 50 || c === e.at(-1))).toBe(true);
  });

  it('keeps every invariant on random documents', () => {
    const random = seededRandom(7);
    for (let doc = 0; doc < 40; doc++) {
      const paragraphs = Array.from({ length: 1 + Math.floor(random() * 12) }, () =>
        Array.from({ length: 1 + Math.floor(random() * 8) }, () => sentence(random)).join(random() < 0.2 ? '\n' : ' '),
      );
      if (random() < 0.3) paragraphs.push('z'.repeat(Math.floor(random() * 3000)));
      const text = `${random() < 0.5 ? '  ' : ''}${paragraphs.join(random() < 0.5 ? '\n\n' : '\n \n\n')}`;
      const maxChars = 40 + Math.floor(random() * 1200);
      const overlap = Math.floor(random() * (maxChars / 2));
      checkChunks(text, chunkText(text, { maxChars, overlap }), maxChars, overlap);
      checkChunks(text, chunkText(text, { maxChars, overlap: 0 }), maxChars, 0);
    }
  });

  it('uses 1000/150 by default and rejects impossible options', () => {
    const text = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} says something.`).join(' ');
    const chunks = chunkText(text);
    checkChunks(text, chunks, 1000, 150);
    expect(chunks.length).toBe(3);
    expect(() => chunkText('x', { maxChars: 0 })).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
    expect(() => chunkText('x', { maxChars: 100, overlap: 50 })).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
    expect(() => chunkText('x', { maxChars: 100, overlap: -1 })).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
  });
});
