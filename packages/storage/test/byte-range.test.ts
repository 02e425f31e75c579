import { describe, expect, it } from 'vitest';
import { parseByteRange } from '../src/index.js';

describe('parseByteRange', () => {
  it.each([
    ['bytes=0-9', 100, { start: 0, end: 9 }],
    ['bytes=10-', 100, { start: 10, end: 99 }],
    ['bytes=90-200', 100, { start: 90, end: 99 }],
    ['bytes=-10', 100, { start: 90, end: 99 }],
    ['bytes=-500', 100, { start: 0, end: 99 }],
    ['bytes=99-99', 100, { start: 99, end: 99 }],
    ['  bytes=0-0  ', 1, { start: 0, end: 0 }],
  ])('%s of %i bytes is a range', (header, size, range) => {
    expect(parseByteRange(header, size)).toEqual(range);
  });

  it.each([
    ['bytes=100-', 100],
    ['bytes=100-200', 100],
    ['bytes=5-4', 100],
    ['bytes=-0', 100],
    ['bytes=0-', 0],
    ['bytes=-5', 0],
  ])('%s of %i bytes is unsatisfiable', (header, size) => {
    expect(parseByteRange(header, size)).toBe('unsatisfiable');
  });

  it.each([undefined, '', 'bytes=-', 'bytes=0-1,5-6', 'items=0-1', 'bytes=a-b', 'bytes 0-1', 'bytes=0x1-2'])(
    '%j is not a range served: the whole file',
    (header) => {
      expect(parseByteRange(header, 100)).toBeUndefined();
    },
  );
});
