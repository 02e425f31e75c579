import { describe, expect, test } from 'vitest';
import { codePoints } from '../src/text.js';

describe('codePoints', () => {
  test('pages count code points, never splitting a surrogate pair', () => {
    const text = 'a😀b😀c';
    expect(codePoints(text, 0, 2)).toEqual({ text: 'a😀', total: 5, end: 2 });
    expect(codePoints(text, 1, 1)).toEqual({ text: '😀', total: 5, end: 2 });
    expect(codePoints(text, 3, 10)).toEqual({ text: '😀c', total: 5, end: 5 });
    expect(codePoints(text, 9, 3)).toEqual({ text: '', total: 5, end: 5 });
    expect(codePoints('', 0, 5)).toEqual({ text: '', total: 0, end: 0 });
  });
});
