import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { routes } from '../src/app.js';
import { buildOpenApi } from '../src/http/openapi.js';

/**
 * Redocly CLI (a linter nobody here wrote), unchanged, on the document GET /api/v1/openapi.json serves: the
 * recommended rules (packages/openapi-tools/redocly.yaml) and the findings accepted by place
 * (packages/openapi-tools/.redocly.lint-ignore.yaml), with 0 errors and 0 warnings.
 */
const tools = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'packages', 'openapi-tools');
const redocly = join(tools, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const dirs: string[] = [];

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
}

function lint(doc: unknown): LintReport {
  const dir = mkdtempSync(join(tmpdir(), 'wds-redocly-'));
  dirs.push(dir);
  for (const f of ['redocly.yaml', '.redocly.lint-ignore.yaml']) copyFileSync(join(tools, f), join(dir, f));
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc, null, 2));
  const run = spawnSync(process.execPath, [redocly, 'lint', 'openapi.json', '--format=json'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
    // No telemetry and no update check: the tests reach nothing off the host.
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  });
  const start = run.stdout.indexOf('{');
  if (start === -1) throw new Error(`redocly printed no report (${run.status}):\n${run.stderr}`);
  return JSON.parse(run.stdout.slice(start)) as LintReport;
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('Redocly lint of the OpenAPI document', () => {
  test('no errors and no warnings', () => {
    const report = lint(buildOpenApi(routes));
    const found = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);
    expect(found).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    // The two accepted findings (health and readiness answer no 4XX) are still there, and nothing else is ignored.
    expect(report.totals.ignored).toBe(2);
  });

  test('a broken document fails it (the linter runs for real)', () => {
    const doc = buildOpenApi(routes) as { paths: Record<string, Record<string, { operationId: string }>> };
    const [first, second] = Object.values(doc.paths).flatMap((ops) => Object.values(ops));
    if (!first || !second) throw new Error('the document has fewer than two operations');
    second.operationId = first.operationId;
    const report = lint(doc);
    expect(report.totals.errors).toBeGreaterThan(0);
    expect(report.problems.map((p) => p.ruleId)).toContain('operation-operationId-unique');
  });
});
