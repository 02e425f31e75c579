import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, test } from 'vitest';
import { capJson } from '../src/mcp/results.js';


const size = (r: CallToolResult) => {
  const first = r.content[0];
  return Buffer.byteLength(first?.type === 'text' ? first.text : '');
};

describe('capJson', () => {
  test('under the cap: the value as text and as structuredContent (a list as { result })', () => {
    expect(capJson({ a: 1 }, 100, 'page')).toMatchObject({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } });
    expect(capJson([1, 2], 100, 'page').structuredContent).toEqual({ result: [1, 2] });
  });

  test('a list is cut after the items that fit, with shown, total and how to page', () => {
    const items = Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item ${i}` }));
    const r = capJson(items, 2048, 'Use offset.');
    expect(size(r)).toBeLessThanOrEqual(2048);
    const s = r.structuredContent as { items: unknown[]; truncated: { shown: number; total: number; note: string } };
    expect(s.items).toEqual(items.slice(0, s.truncated.shown));
    expect(s.truncated).toMatchObject({ total: 500 });
    expect(s.truncated.note).toContain('Use offset.');
  });

  test('a long text beside a short list: cutting the list is not enough, so only the note remains', () => {
    const r = capJson({ output: 'x'.repeat(10_000), logs: [] }, 2048, 'Ask for less.');
    expect(size(r)).toBeLessThanOrEqual(2048);
    expect(r.structuredContent).toEqual({ truncated: { note: expect.stringContaining('larger than the 2048 bytes') } });
  });
});
