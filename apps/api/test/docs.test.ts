import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../src/config.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The rows of README's configuration table: the variables a row names, and its "Accepted" cell split per variable. */
function configurationRows(): { names: string[]; accepted: string[] }[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.split('\n## Configuration\n')[1]?.split('\n## ')[0] ?? '';
  // The first table of the section: the settings (the combinations refused at start-up follow in a table of their own).
  const table = section.slice(section.indexOf('\n| Variable |')).split('\n\n')[0] ?? '';
  const rows = table.split('\n').filter((l) => l.startsWith('| `'));
  return rows.map((row) => {
    const cells = row.split(' | ');
    const names = [...(cells[0] ?? '').matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1] as string);
    const cell = cells[2] ?? '';
    const parts = cell.split(' / ');
    return { names, accepted: names.map((_, i) => (parts.length === names.length ? (parts[i] as string) : cell)) };
  });
}

/** Each package's floor: one above the highest of the `@wds/*` packages in its dependencies (docs/architecture.md). */
function floorsFromPackageJson(): Map<string, { floor: number; on: string[] }> {
  const deps = new Map<string, string[]>();
  for (const dir of readdirSync(join(repoRoot, 'packages'))) {
    const file = join(repoRoot, 'packages', dir, 'package.json');
    if (!existsSync(file)) continue;
    const p = JSON.parse(readFileSync(file, 'utf8')) as { name: string; dependencies?: object; peerDependencies?: object };
    const on = Object.keys({ ...p.dependencies, ...p.peerDependencies }).filter((n) => n.startsWith('@wds/'));
    deps.set(p.name.slice('@wds/'.length), on.map((n) => n.slice('@wds/'.length)).sort());
  }
  const floors = new Map<string, { floor: number; on: string[] }>();
  const floorOf = (name: string): number => {
    const known = floors.get(name);
    if (known) return known.floor;
    const on = deps.get(name) ?? [];
    const floor = on.length ? 1 + Math.max(...on.map(floorOf)) : 0;
    floors.set(name, { floor, on });
    return floor;
  };
  for (const name of deps.keys()) floorOf(name);
  return floors;
}

type Action = { type: string; requirement?: unknown };

describe('docs', () => {
  it('every docs/*.md#anchor in the code and every Markdown link resolves (scripts/check-doc-links.mjs)', () => {
    const out = execFileSync(process.execPath, [join(repoRoot, 'scripts/check-doc-links.mjs'), repoRoot], { encoding: 'utf8' });
    expect(out).toBe('');
  });

  it("README's configuration table names every setting and states each integer's range as start-up checks it", () => {
    const rows = configurationRows();
    const documented = new Map(rows.flatMap((r) => r.names.map((n, i) => [n, r.accepted[i] as string] as const)));
    for (const [name, schema] of Object.entries(ConfigSchema.entries)) {
      expect(documented.has(name), `${name} is missing from README's configuration table`).toBe(true);
      const pipe = ((schema as { wrapped?: { pipe?: Action[] } }).wrapped?.pipe ?? []) as Action[];
      const min = pipe.find((a) => a.type === 'min_value')?.requirement;
      const max = pipe.find((a) => a.type === 'max_value')?.requirement;
      if (pipe.some((a) => a.type === 'integer')) expect(documented.get(name), name).toContain(`integer ${min} – ${max}`);
      const minLength = pipe.find((a) => a.type === 'min_length')?.requirement;
      if (minLength !== undefined) expect(documented.get(name), name).toContain(`at least ${minLength} characters`);
    }
  });

  it("docs/architecture.md's floors are the packages' dependencies", () => {
    const doc = readFileSync(join(repoRoot, 'docs/architecture.md'), 'utf8');
    const documented = new Map<string, { floor: number; on: string[] }>();
    for (const m of doc.matchAll(/^\| (\d+)(?: \(ground\))? \| (.*) \|$/gm)) {
      for (const entry of (m[2] as string).split(/; |, (?=`)/)) {
        const e = /^`([a-z-]+)`(?: \(([^)]*)\))?$/.exec(entry.trim());
        if (e) documented.set(e[1] as string, { floor: Number(m[1]), on: e[2] ? e[2].split(', ').sort() : [] });
      }
    }
    expect(documented).toEqual(floorsFromPackageJson());
  });
});
