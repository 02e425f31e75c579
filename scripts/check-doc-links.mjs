#!/usr/bin/env node
/**
 * Checks that every pointer into the project's Markdown resolves: `docs/<file>.md#<anchor>` in source, test and
 * script files, and relative links (`[text](file.md#anchor)`) in Markdown files. The file must exist and the anchor
 * must be one of its headings under GitHub's slug rules. Source files may not cite documents that are not in the
 * repository (a "DECISIONS" or "spec" section number): such a rule is written in docs/ and pointed at.
 *
 * Usage: `node scripts/check-doc-links.mjs [root]`; prints one line per problem and exits 1 when there is any.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = new Set(['node_modules', 'dist', '.git', '.turbo', '.data', 'coverage', 'playwright-report', 'test-results']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs|sh)$/;

/** GitHub's heading anchor: lower case, punctuation dropped (letters, digits, `-`, `_` and spaces kept), spaces → `-`. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown text's headings (outside code fences), with GitHub's `-1`, `-2` for repeated ones. */
export function anchorsOf(markdown) {
  const anchors = new Set();
  const seen = new Map();
  let fence;
  for (const line of markdown.split('\n')) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (f) {
      if (!fence) fence = f[1];
      else if (f[1].startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

function* files(dir) {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) yield* files(path);
    else if (CODE.test(name) || name.endsWith('.md')) yield path;
  }
}

/** Every problem under `root`, as `file:line: message`. */
export function checkDocLinks(root) {
  const problems = [];
  const anchorCache = new Map();
  const anchors = (file) => {
    if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(readFileSync(file, 'utf8')));
    return anchorCache.get(file);
  };
  const check = (from, line, target, file, anchor) => {
    if (!existsSync(file)) problems.push(`${from}:${line}: ${target}: no such file`);
    else if (anchor !== undefined && !anchors(file).has(anchor)) problems.push(`${from}:${line}: ${target}: no heading with this anchor`);
  };
  for (const path of files(root)) {
    const rel = relative(root, path);
    const lines = readFileSync(path, 'utf8').split('\n');
    const markdown = path.endsWith('.md');
    lines.forEach((text, i) => {
      const line = i + 1;
      if (markdown) {
        for (const m of text.matchAll(/\]\(([^()\s]+?\.md)(?:#([^()\s]*))?\)/g)) {
          if (/^[a-z]+:/i.test(m[1])) continue;
          check(rel, line, m[0].slice(2, -1), resolve(dirname(path), m[1]), m[2]);
        }
        return;
      }
      for (const m of text.matchAll(/(?<![\w/.-])docs\/([\w-]+\.md)(?:#([\w-]+))?/g)) {
        check(rel, line, m[0], join(root, 'docs', m[1]), m[2]);
      }
      if (/\b(DECISIONS|[Ss]pec)\s+§/.test(text) || /\bDECISIONS\s*$/.test(text)) {
        problems.push(`${rel}:${line}: cites a document that is not in the repository; point at the docs/*.md anchor that states the rule`);
      }
    });
  }
  return problems;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const problems = checkDocLinks(root);
  for (const p of problems) console.log(p);
  process.exit(problems.length ? 1 : 0);
}
