import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

/** The console's budgets (docs/console.md): checked on what `pnpm build` wrote (turbo builds before it tests). */
const dist = join(import.meta.dirname, '..', 'dist');
const ENTRY_BUDGET_GZIP = 60 * 1024;

describe('the built console', () => {
  const page = readFileSync(join(dist, 'index.html'), 'utf8');

  it('loads its entry script within 60 KB gzip', () => {
    const entry = /<script type="module" crossorigin src="\/console\/assets\/([^"]+\.js)"><\/script>/.exec(page)?.[1];
    expect(entry, page).toBeDefined();
    const size = gzipSync(readFileSync(join(dist, 'assets', entry as string))).length;
    expect(size).toBeLessThanOrEqual(ENTRY_BUDGET_GZIP);
  });

  it('has no inline script or style and fetches nothing from another origin', () => {
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page).not.toMatch(/<style/);
    for (const name of readdirSync(join(dist, 'assets'))) {
      const text = readFileSync(join(dist, 'assets', name), 'utf8');
      expect(text, name).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost|www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[^\s"'`)]*\.(js|css|woff2?)/i);
    }
  });

  it('lists every chunk in docs/console.md (`node apps/console/scripts/chunks.mjs` prints the table)', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'console.md'), 'utf8');
    const names = readdirSync(join(dist, 'assets')).map((file) => file.replace(/-[A-Za-z0-9_-]{8}(\.\w+)$/, '$1'));
    expect(names.filter((name) => !doc.includes(`| \`${name}\``))).toEqual([]);
  });
});
