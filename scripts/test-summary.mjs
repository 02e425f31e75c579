// Sums the vitest JSON reports of all packages into one closing line: "N passed, N failed, N skipped", after the
// wall time of each package's run and the ten slowest test files (what to look at when the suite gets slower).
import { existsSync, readFileSync, readdirSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
const packages = [];
const files = [];
for (const root of ['packages', 'apps']) {
  for (const report of readdirSync(root).flatMap((dir) => ['', '-beside'].map((part) => ({ dir, part })))) {
    const { dir, part } = report;
    const file = `${root}/${dir}/.test-results${part}.json`;
    if (!existsSync(file)) continue;
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
    skipped += r.numPendingTests + r.numTodoTests;
    let end = r.startTime;
    for (const t of r.testResults ?? []) {
      end = Math.max(end, t.endTime ?? 0);
      if (t.startTime && t.endTime) files.push({ name: t.name.slice(t.name.indexOf(`${root}/${dir}/`)), ms: t.endTime - t.startTime });
    }
    packages.push({ name: `${root}/${dir}${part ? ` (${part.slice(1)})` : ''}`, ms: end - r.startTime });
  }
}
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
if (packages.length > 0) {
  const total = packages.reduce((sum, p) => sum + p.ms, 0);
  console.log(`test time by package (sum ${seconds(total).trim()}):`);
  for (const p of packages.sort((a, b) => b.ms - a.ms).slice(0, 8)) console.log(`${seconds(p.ms)}  ${p.name}`);
  console.log('slowest test files:');
  for (const f of files.sort((a, b) => b.ms - a.ms).slice(0, 10)) console.log(`${seconds(f.ms)}  ${f.name}`);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
