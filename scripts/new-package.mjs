// Scaffolds a workspace package: node scripts/new-package.mjs <dir> <name> '<deps json>' '<devDeps json>'
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
const [dir, name, deps = '{}', devDeps = '{}'] = process.argv.slice(2);
mkdirSync(`${dir}/src`, { recursive: true });
mkdirSync(`${dir}/test`, { recursive: true });
const pkg = {
  name, version: '0.0.0', private: true, type: 'module',
  exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
  scripts: {
    build: 'tsc -p tsconfig.build.json',
    typecheck: 'tsc -p tsconfig.json --noEmit',
    lint: 'biome lint src test',
    test: 'vitest run --reporter=default --reporter=json --outputFile.json=.test-results.json',
  },
  dependencies: JSON.parse(deps),
  devDependencies: { '@types/node': '^20.19.0', typescript: '7.0.2', vitest: '4.1.12', ...JSON.parse(devDeps) },
};
writeFileSync(`${dir}/package.json`, JSON.stringify(pkg, null, 2) + '\n');
writeFileSync(`${dir}/tsconfig.json`, JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true }, include: ['src', 'test'] }, null, 2) + '\n');
writeFileSync(`${dir}/tsconfig.build.json`, JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { outDir: 'dist', rootDir: 'src' }, include: ['src'] }, null, 2) + '\n');
if (!existsSync(`${dir}/src/index.ts`)) writeFileSync(`${dir}/src/index.ts`, 'export {};\n');
