// Prints the built console's chunks as docs/console.md lists them: each file of dist/assets without its hash, its
// size and its gzip size, the entry first. Run after `pnpm build`: `node apps/console/scripts/chunks.mjs`.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const dist = join(import.meta.dirname, '..', 'dist', 'assets');
const entry = /src="\/console\/assets\/([^"]+)"/.exec(readFileSync(join(dist, '..', 'index.html'), 'utf8'))?.[1];
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const rows = readdirSync(dist)
  .map((file) => {
    const bytes = readFileSync(join(dist, file));
    return { file, name: file.replace(/-[A-Za-z0-9_-]{8}(\.\w+)$/, '$1'), size: bytes.length, gzip: gzipSync(bytes).length };
  })
  .sort((a, b) => (a.file === entry ? -1 : b.file === entry ? 1 : a.name.localeCompare(b.name)));
console.log('| Chunk | Size | gzip |');
console.log('|---|---|---|');
for (const r of rows) console.log(`| \`${r.name}\`${r.file === entry ? ' (entry)' : ''} | ${kb(r.size)} | ${kb(r.gzip)} |`);
