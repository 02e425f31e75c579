import type { Template } from '@wds/sql-rewriter';
import { describe, expect, it } from 'vitest';
import type { SqlContext } from '../src/context.js';
import { RewriteCache } from '../src/rewrite-cache.js';

const ctx = (): SqlContext => ({ catalog: new Map(), policies: [], groups: [], ddlUserIds: [] });
const template = (bytes: number): Template => ({ segments: ['x'], slots: [], text: 'x'.repeat(bytes), name: 'n', parameterTypes: [] });
const summary = () => ({ kind: 'select' as const, writes: false, returning: false, tables: ['t'], access: [{ table: 't', operation: 'select' as const }] });
const user = (id: string) => ({ kind: 'user' as const, userId: id });

describe('RewriteCache', () => {
  it('serves a template only for the context object it was made under, and per subject', () => {
    const cache = new RewriteCache();
    const c1 = ctx();
    const t = template(10);
    cache.remember('w', 'k', summary(), c1, user('a'), t);
    const entry = cache.shape('w', 'k');
    expect(entry && cache.template(entry, c1, user('a'))).toBe(t);
    expect(entry && cache.template(entry, c1, user('b'))).toBeUndefined();
    // An equal but new context (the cache reloaded it after a change) never gets the old template.
    expect(entry && cache.template(entry, ctx(), user('a'))).toBeUndefined();
    expect(cache.shape('w2', 'k')).toBeUndefined();
  });

  it('a new context drops the templates of the old one; a refused shape keeps none', () => {
    const cache = new RewriteCache();
    cache.remember('w', 'k', summary(), ctx(), user('a'), template(1000));
    cache.remember('w', 'k', summary(), ctx(), user('b'), template(10));
    expect(cache.stats.templateBytes).toBeLessThan(1000);
    cache.remember('w', 'k', summary(), ctx(), user('c'), undefined);
    expect(cache.stats).toMatchObject({ templateBytes: 0, refused: 1 });
  });

  it('bounds shapes per workspace (its own go first), in all, and template bytes', () => {
    const cache = new RewriteCache({ maxShapes: 10, maxShapesPerWorkspace: 3, maxTemplateBytes: 4 * 1000 * 4 });
    const other = ctx();
    cache.remember('quiet', 'q', summary(), other, user('a'), template(10));
    for (let i = 0; i < 50; i++) cache.remember('noisy', `k${i}`, summary(), ctx(), user('a'), template(10));
    // The noisy workspace churned its own three slots; the quiet one's shape is still there.
    expect(cache.stats.shapes).toBe(4);
    expect(cache.shape('quiet', 'q')).toBeDefined();
    expect(cache.shape('noisy', 'k49')).toBeDefined();
    expect(cache.shape('noisy', 'k0')).toBeUndefined();
    // Bytes: big templates push out the least recently used.
    for (let i = 0; i < 3; i++) cache.remember(`w${i}`, 'big', summary(), ctx(), user('a'), template(1500));
    expect(cache.stats.templateBytes).toBeLessThanOrEqual(4 * 1000 * 4);
  });

  it('keeps shapes by a hash of their key, whatever its length', () => {
    const cache = new RewriteCache();
    cache.remember('w', 'x'.repeat(1_000_000), summary(), ctx(), user('a'), undefined);
    expect(cache.shape('w', 'x'.repeat(1_000_000))?.refused).toBe(true);
    expect(cache.shape('w', 'x'.repeat(999_999))).toBeUndefined();
  });
});
