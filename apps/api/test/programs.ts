// What the client tests share: a scratch directory of TypeScript programs inside apps/api (so that its packages
// resolve, `openapi-fetch` and `@wds/client`), checked as a user's project would be, and openapi-typescript.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const apiDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = join(apiDir, '..', '..');

/** Runs node with a script and arguments, from apps/api. */
export const node = (args: string[]) => spawnSync(process.execPath, args, { cwd: apiDir, encoding: 'utf8', timeout: 120_000 });

/** A fresh scratch directory under apps/api/.cache (ignored by git) with a --strict tsconfig listing `files`. */
export function programDir(name: string, files: string[]): string {
  const dir = join(apiDir, '.cache', `${name}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        lib: ['es2023', 'dom'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        typeRoots: [join(apiDir, 'node_modules', '@types')],
        skipLibCheck: false,
      },
      files,
    }),
  );
  return dir;
}

/** `tsc -p` of a program directory (the repository's TypeScript): its exit status and diagnostics. */
export function typecheck(dir: string): { status: number | null; output: string } {
  const r = node([join(apiDir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json'), '--pretty', 'false']);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/**
 * openapi-typescript, unchanged, run by packages/openapi-tools with the TypeScript 5 it needs (it builds its output
 * with TypeScript 5's compiler API, which the TypeScript 7 of this repository does not have): `document` → `output`.
 */
export function generateTypes(document: string, output: string): void {
  const gen = node([join(repoRoot, 'packages', 'openapi-tools', 'generate.mjs'), document, output]);
  if (gen.status !== 0) throw new Error(`openapi-typescript failed (${gen.status}):\n${gen.stderr}${gen.stdout}`);
}
