// Sums the vitest JSON reports of all packages into one closing line: "N passed, N failed, N skipped".
import { existsSync, readFileSync, readdirSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const root of ['packages', 'apps']) {
  for (const dir of readdirSync(root)) {
    const file = `${root}/${dir}/.test-results.json`;
    if (!existsSync(file)) continue;
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
    skipped += r.numPendingTests + r.numTodoTests;
  }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
