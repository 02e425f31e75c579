import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, type JavascriptRuntime } from '../src/javascript/index.js';
import { DEFAULT_LIMITS, StfError, type StfLimits } from '../src/types.js';
import { validateStfCode } from '../src/validate.js';
import { failure, request } from './fixtures/javascript/helpers.js';

const utf8 = (s: string) => new TextEncoder().encode(s);
const validate = (code: string, limits: Partial<StfLimits> = {}) =>
  validateStfCode('javascript', utf8(code), { ...DEFAULT_LIMITS, ...limits });

/** The StfError a save refuses `code` with. */
async function refusal(code: string, limits: Partial<StfLimits> = {}): Promise<StfError> {
  const e = await failure(validate(code, limits));
  expect(e).toBeInstanceOf(StfError);
  return e as StfError;
}

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({ workers: 1 });
});
afterAll(() => rt.close());

describe('validateStfCode: javascript compiles on save', () => {
  it('accepts a valid script (top-level await and return, the run globals)', async () => {
    await expect(
      validate('const rows = sql("select 1");\nconst n = await Promise.resolve($input.n);\nconsole.log($caller, $env, $sources);\nreturn { n, rows };'),
    ).resolves.toBeUndefined();
  });

  it('accepts a valid module', async () => {
    await expect(
      validate('const base = await Promise.resolve(1);\nexport default async (input, ctx) => ({ n: input.n + base, caller: ctx.caller });'),
    ).resolves.toBeUndefined();
  });

  it('only parses imports: a bundled library (or any other name) is not loaded at save time', async () => {
    const code = "import { format, addDays } from 'date-fns';\nimport * as cj from 'crypto-js';\nexport default (input) => format(addDays(new Date(input.d), 1), 'yyyy-MM-dd') + cj.x;";
    await expect(validate(code)).resolves.toBeUndefined();
    await expect(validate("import { nothing } from 'not-a-library';\nexport default () => nothing;")).resolves.toBeUndefined();
  });

  it('refuses a syntax error in the script form with its line and column in the user\'s code', async () => {
    const e = await refusal('const a = 1;\nconst b = 2;\nconst c = a +* b;\nreturn c;');
    expect(e.kind).toBe('syntax');
    expect(e.message).toMatch(/^SyntaxError: /);
    expect(e.details).toBe('line 3, column 14\nconst c = a +* b;\n             ^');
  });

  it('gives the user\'s column on line 1 of a script, not the wrapper\'s', async () => {
    const e = await refusal('let x = ;');
    expect([e.kind, e.details?.split('\n')[0]]).toEqual(['syntax', 'line 1, column 9']);
  });

  it('refuses a syntax error in the module form with its line and column', async () => {
    const e = await refusal("import { format } from 'date-fns';\nexport default (input) => {\n  return format(input) +;\n};");
    expect(e.kind).toBe('syntax');
    expect(e.details).toBe('line 3, column 25\n  return format(input) +;\n                        ^');
  });

  it('points just after the last code when a script ends with a block left open', async () => {
    const e = await refusal('function f() {\n  return 1;\n\n');
    expect(e.kind).toBe('syntax');
    expect(e.message).toMatch(/unexpected end of the code/);
    expect(e.details?.split('\n')[0]).toBe('line 2, column 12');
  });

  it('refuses an early error QuickJS reports without a position', async () => {
    const e = await refusal('export default 1;\nexport { y };');
    expect(e.kind).toBe('syntax');
    expect(e.message).toMatch(/^SyntaxError: .*'y'/);
  });

  it('reports exactly what a run of the same code reports', async () => {
    const codes = [
      'const a = 1;\nconst b = 2;\nconst c = a +* b;\nreturn c;',
      'let x = ;',
      '\tif (x) {\n\t\treturn "é" +;\n\t}',
      'function f() {\n  return 1;\n\n',
      'const s = `open template\nreturn s;',
      'const a = 1;\nexport default (input) => input +;\n',
      "import { format } from 'date-fns';\nexport default (input) => {\n  return format(input) +;\n};",
    ];
    for (const code of codes) {
      const saved = await refusal(code);
      const ran = await failure(rt.run(request(code)));
      expect(ran, code).toBeInstanceOf(StfError);
      expect([saved.kind, saved.message, saved.details], code).toEqual([ran.kind, ran.message, ran.details]);
    }
  });

  it('refuses code nested too deeply to compile, as a run would fail on it', async () => {
    const code = `return ${'('.repeat(5000)}1${')'.repeat(5000)};`;
    const e = await refusal(code);
    // Node's stack overflows before QuickJS's own check notices (which would be "SyntaxError: stack overflow").
    expect([e.kind, e.message]).toEqual(['stack', 'Stack overflow while compiling: the code is nested too deeply']);
    expect((await failure(rt.run(request(code)))).kind).toBe('stack');
    await expect(validate('return 1')).resolves.toBeUndefined(); // the checker replaced its broken QuickJS module
  });

  it('refuses code that needs more memory to compile than a run may use', async () => {
    const code = `return [${Array.from({ length: 20_000 }, (_, i) => `{ a: ${i}, b: "s${i}" }`).join(',\n')}].length;`;
    await expect(validate(code)).resolves.toBeUndefined();
    const limits = { memoryBytes: 512 * 1024 };
    await expect(validate('return [1, 2, 3].length;', limits)).resolves.toBeUndefined();
    expect((await refusal(code, limits)).kind).toBe('memory');
    expect((await failure(rt.run(request(code, { limits })))).kind).toBe('memory');
  });

  it('validates a huge but valid script quickly, and stops one that takes longer than the time limit', async () => {
    const fn = (i: number) => `function f${i}(a, b) {\n  const x = a * ${i} + b;\n  return { x, s: "v${i}", list: [x, x + 1, x + 2] };\n}`;
    const script = (n: number) => `${Array.from({ length: n }, (_, i) => fn(i)).join('\n')}\nreturn f1(1, 2);`;
    const code = script(10_000);
    expect(code.length).toBeGreaterThan(1_000_000);
    // Within a 3 s compile limit, which the checker enforces itself: about 250 ms (QuickJS compiles some 5 MB/s).
    await expect(validate(code, { timeoutMs: 3_000 })).resolves.toBeUndefined();

    // 4 MB take far longer than the 1 ms limit (plus the checker's 100 ms of grace): the worker is stopped.
    const e = await refusal(script(40_000), { timeoutMs: 1 });
    expect([e.kind, e.message]).toEqual(['timeout', 'Compiling the code took longer than the time limit (1 ms)']);
    await expect(validate('return 1')).resolves.toBeUndefined(); // a fresh checker took over
  });

  it('checks concurrent saves independently', async () => {
    const results = await Promise.allSettled([validate('return 1'), validate('return +;'), validate('export default () => 1')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('refuses code that is not UTF-8', async () => {
    const e = await failure(validateStfCode('javascript', new Uint8Array([0x72, 0x65, 0xff, 0xfe])));
    expect(e).toBeInstanceOf(StfError);
    expect([e.kind, e.message]).toEqual(['syntax', 'JavaScript code must be UTF-8 text']);
  });
});
