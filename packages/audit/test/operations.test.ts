import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../src/index.js';

describe('OPERATIONS', () => {
  it('names every operation in snake_case with a resource type', () => {
    for (const [name, op] of Object.entries(OPERATIONS)) {
      expect(name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(op.resource).toMatch(/^[a-z_]+$/);
    }
  });
});
