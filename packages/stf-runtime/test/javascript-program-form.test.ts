import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { classifyProgram } from '../src/javascript/program.js';
import { DEFAULT_LIMITS, StfError } from '../src/types.js';
import { validateStfCode } from '../src/validate.js';
import { failure, request } from './fixtures/javascript/helpers.js';

/**
 * Script or module, decided from the parsed program (issue 17): the origin platform's script form — top-level code
 * ending in `return`, with `import … from '<library>'` lines — runs unchanged, and so does our module form.
 */
let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({
    workers: 1,
    libraries: { greet: readFileSync(new URL('./fixtures/javascript/greet.mjs', import.meta.url), 'utf8') },
  });
});
afterAll(() => rt.close());

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('classifyProgram', () => {
  it('is a module only when the program exports something', () => {
    expect(classifyProgram('export default (i) => i').kind).toBe('module');
    expect(classifyProgram('const a = 1; export { a as default };').kind).toBe('module');
    expect(classifyProgram('export const a = 1;').kind).toBe('module');
    expect(classifyProgram("export * from 'greet';").kind).toBe('module');
    expect(classifyProgram("import { greet } from 'greet';\nexport default () => greet('x');").kind).toBe('module');
  });

  it('is a script whatever comments, strings and templates say', () => {
    for (const code of [
      '/* export default function () {} */\nreturn 1;',
      '// import x from "y"\nreturn 1;',
      'const s = `\nimport x from "y";\nexport default 1;\n`;\nreturn s;',
      "const re = /export default/; return re.source;",
      'const importance = 1, exported = 2; return importance + exported;',
    ]) {
      expect(classifyProgram(code), code).toEqual({ kind: 'script', head: '', body: code });
    }
  });

  it('hoists the imports of a script into a head and blanks their declarations, so no line or column moves', () => {
    const code = [
      '// header',
      'import {',
      '  greet,',
      '  greet as hello,',
      "} from '@d6e-ai/greet';",
      "import lib, * as ns from 'greet'; const after = 1;",
      "import 'greet';",
      'return greet(1);',
    ].join('\n');
    const form = classifyProgram(code);
    expect(form.kind).toBe('script');
    if (form.kind !== 'script') return;
    expect(form.head).toContain('await import("@d6e-ai/greet")');
    expect(form.head).toContain('const { greet, greet: hello }');
    expect(form.head).toContain('const ns = ');
    expect(form.head).toContain('await import("greet");');
    expect(form.head).not.toContain('\n');
    const lines = form.body.split('\n');
    const original = code.split('\n');
    expect(lines).toHaveLength(original.length);
    expect(lines.map((l) => l.length)).toEqual(original.map((l) => l.length));
    expect(lines[0]).toBe('// header');
    expect(lines[1]?.trim()).toBe('');
    expect(lines[5]).toBe(`${' '.repeat("import lib, * as ns from 'greet';".length)} const after = 1;`);
    expect(lines[7]).toBe('return greet(1);');
  });

  it('makes a hashbang line a comment in the script form and keeps it in a module', () => {
    expect(classifyProgram('#!/usr/bin/env node\nreturn 1;')).toEqual({ kind: 'script', head: '', body: '///usr/bin/env node\nreturn 1;' });
    expect(classifyProgram("#!/usr/bin/env node\nimport { greet } from 'greet';\nreturn greet(1);").kind).toBe('script');
    expect(classifyProgram('#!/usr/bin/env node\nexport default () => 1;').kind).toBe('module');
  });

  it('keeps sloppy-mode scripts, which do not parse as modules, scripts', () => {
    const code = 'with ({ a: 1 }) { return a + 010; }';
    expect(classifyProgram(code)).toEqual({ kind: 'script', head: '', body: code });
  });

  it('picks the form whose parse got further when the code parses as neither', () => {
    // An import line and then a syntax error: compiled as a module, so QuickJS reports the real error.
    expect(classifyProgram("import { a } from 'greet';\nconst = 1;").kind).toBe('module');
    // An error before any import: the script form reports it.
    expect(classifyProgram("const = 1;\nimport { a } from 'greet';").kind).toBe('script');
  });

  it('survives absurd nesting without throwing', () => {
    const code = `import x from 'greet';\nreturn ${'['.repeat(200_000)}${']'.repeat(200_000)};`;
    expect(() => classifyProgram(code)).not.toThrow();
  });
});

describe('javascript runtime: the script form with imports (origin style)', () => {
  it('runs a script that imports a library and ends in a top-level return', async () => {
    const code = [
      "import { greet } from 'greet';",
      'const name = $input.name || "World";',
      'return { message: greet(name) };',
    ].join('\n');
    expect((await rt.run(request(code, { input: { name: 'Ada' } }))).output).toEqual({ message: 'hello Ada' });
  });

  it('binds default, namespace, renamed and multi-line imports', async () => {
    const code = [
      'import lib, {',
      '  greet as hi,',
      "} from 'greet';",
      "import * as ns from 'greet';",
      'return [lib.version, hi("a"), ns.greet("b"), typeof ns.default];',
    ].join('\n');
    expect((await rt.run(request(code))).output).toEqual(['1.0.0', 'hello a', 'hello b', 'object']);
  });

  it('reports runtime errors at the line the user wrote', async () => {
    const code = ['import {', '  greet,', "} from 'greet';", '', 'throw new Error("boom " + greet("x"));'].join('\n');
    const e = await failure(rt.run(request(code)));
    expect(e).toBeInstanceOf(StfError);
    expect(e.message).toBe('Error: boom hello x');
    expect(e.details).toMatch(/stf\.js:5:/);
  });

  it('hoists imports: code above an import may use what it imports, as in a module', async () => {
    const code = ["const d = make();", "import { greet } from 'greet';", 'function make() { return greet("early"); }', 'return d;'].join('\n');
    expect((await rt.run(request(code))).output).toBe('hello early');
  });

  it('reports columns on an import line as the user wrote them', async () => {
    const code = "import { greet } from 'greet'; null.boom;\nreturn 1;";
    const e = await failure(rt.run(request(code)));
    expect(e.details).toMatch(/stf\.js:1:(3[0-9]|4[0-3])\b/);
  });

  it('runs code that starts with a hashbang, in either form', async () => {
    expect((await rt.run(request("#!/usr/bin/env node\nimport { greet } from 'greet';\nreturn greet('h');"))).output).toBe('hello h');
    expect((await rt.run(request('#!/usr/bin/env node\nexport default () => 5;'))).output).toBe(5);
  });

  it('refuses an import of anything but a bundled library', async () => {
    const e = await failure(rt.run(request("import fs from 'node:fs';\nreturn fs;")));
    expect(e).toBeInstanceOf(StfError);
    expect(e.kind).toBe('runtime');
    expect(e.message).toMatch(/module not allowed: node:fs/);
  });

  it('runs a script whose comment mentions export default', async () => {
    const code = '// not a module: export default would make it one\nreturn $input.n * 2;';
    expect((await rt.run(request(code, { input: { n: 21 } }))).output).toBe(42);
  });

  it('still runs the module form with imports', async () => {
    const code = "import { greet } from 'greet';\nexport default (input) => greet(input.n);";
    expect((await rt.run(request(code, { input: { n: 'm' } }))).output).toBe('hello m');
  });
});

describe('save-time check of the script form with imports', () => {
  it('accepts imports followed by a top-level return', async () => {
    await expect(
      validateStfCode('javascript', utf8("import { PDFDocument } from '@d6e-ai/pdf-lib';\nconst d = 1;\nreturn { d };"), DEFAULT_LIMITS),
    ).resolves.toBeUndefined();
  });

  it('reports a syntax error after the imports at its own line', async () => {
    const e = await failure(validateStfCode('javascript', utf8("import { a } from 'greet';\n\nconst x = ;\nreturn x;"), DEFAULT_LIMITS));
    expect(e).toBeInstanceOf(StfError);
    expect(e.kind).toBe('syntax');
    expect(e.details).toMatch(/^line 3, column/);
  });
});
