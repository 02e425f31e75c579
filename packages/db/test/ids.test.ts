import { validate, version } from 'uuid';
import { describe, expect, test, vi } from 'vitest';
import { isUuid, newId } from '../src/ids.js';

/** The 48-bit millisecond timestamp at the front of a UUIDv7. */
const msOf = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('newId', () => {
  test('a UUIDv7 (version 7, RFC 9562 variant) carrying the current millisecond', () => {
    const before = Date.now();
    const id = newId();
    const after = Date.now();
    expect(isUuid(id)).toBe(true);
    expect(validate(id)).toBe(true);
    expect(version(id)).toBe(7);
    expect(id[19]).toMatch(/[89ab]/);
    expect(msOf(id)).toBeGreaterThanOrEqual(before);
    expect(msOf(id)).toBeLessThanOrEqual(after);
  });

  test('strictly increasing and unique, across many random pool refills', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('the random tail differs between ids', () => {
    const tails = new Set(Array.from({ length: 1000 }, () => newId().slice(24)));
    expect(tails.size).toBe(1000);
  });

  // Last: it leaves the generator's clock in the future.
  test('increasing within one millisecond and when the clock steps back', () => {
    const now = vi.spyOn(Date, 'now');
    try {
      now.mockReturnValue(4_102_444_800_000);
      const same = Array.from({ length: 600 }, () => newId());
      now.mockReturnValue(4_102_444_799_000);
      const back = newId();
      for (let i = 1; i < same.length; i++) expect(same[i]! > same[i - 1]!).toBe(true);
      expect(back > same.at(-1)!).toBe(true);
      expect(msOf(same[0]!)).toBe(4_102_444_800_000);
      now.mockReturnValue(4_102_444_800_001 + 1000);
      expect(msOf(newId())).toBe(4_102_444_801_001);
    } finally {
      now.mockRestore();
    }
  });
});
