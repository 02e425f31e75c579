import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJavascriptRuntime, isModuleCode, type JavascriptRuntime } from '../src/javascript/index.js';
import { type SqlCallResult, StfError } from '../src/types.js';
import { delay, failure, request } from './fixtures/javascript/helpers.js';

let rt: JavascriptRuntime;
beforeAll(() => {
  rt = createJavascriptRuntime({
    workers: 2,
    libraries: { greet: readFileSync(new URL('./fixtures/javascript/greet.mjs', import.meta.url), 'utf8') },
  });
});
afterAll(() => rt.close());

describe('javascript runtime: script form', () => {
  it('runs the code as the body of an async function with $input, $sources, $caller and $env', async () => {
    const r = await rt.run(
      request('return { double: $input.n * 2, sources: $sources, caller: $caller, key: $env.API_KEY };', {
        input: { n: 21 },
        sources: { people: [{ name: 'Ada' }] },
        caller: 'user-1',
        secrets: { API_KEY: 'k-123' },
      }),
    );
    expect(r.output).toEqual({ double: 42, sources: { people: [{ name: 'Ada' }] }, caller: 'user-1', key: 'k-123' });
    expect(r.logs).toEqual([]);
    expect(r.duration_ms).toBeGreaterThan(0);
  });

  it('has a null $caller for anonymous runs, and top-level await and return work', async () => {
    const code = 'const x = await Promise.resolve(2);\nif ($caller === null) return x + 1;\nreturn 0;';
    expect((await rt.run(request(code))).output).toBe(3);
  });

  it('turns an undefined result (no return) into null', async () => {
    expect((await rt.run(request('const a = 1;'))).output).toBeNull();
  });

  it('accepts the code as UTF-8 bytes', async () => {
    expect((await rt.run(request(new TextEncoder().encode('return "é"') as unknown as string))).output).toBe('é');
  });

  it('runs each STF in a fresh context', async () => {
    await rt.run(request('globalThis.leak = 1; return 1'));
    expect((await rt.run(request('return typeof leak'))).output).toBe('undefined');
  });
});

describe('javascript runtime: module form', () => {
  it('calls the default export with (input, ctx)', async () => {
    const code = 'export default (input, ctx) => ({ sum: input.a + input.b, caller: ctx.caller, env: ctx.env, sources: ctx.sources });';
    const r = await rt.run(request(code, { input: { a: 1, b: 2 }, caller: 'u', secrets: { K: 'v' }, sources: { s: 1 } }));
    expect(r.output).toEqual({ sum: 3, caller: 'u', env: { K: 'v' }, sources: { s: 1 } });
  });

  it('awaits an async default export and supports top-level await', async () => {
    const code = 'const base = await Promise.resolve(10);\nexport default async function (input) { return base + (await input.n); }';
    expect((await rt.run(request(code, { input: { n: 5 } }))).output).toBe(15);
  });

  it('fails clearly when the default export is not a function', async () => {
    const e = await failure(rt.run(request('export default 42;')));
    expect(e).toBeInstanceOf(StfError);
    expect(e.kind).toBe('runtime');
    expect(e.message).toMatch(/export default/);
  });

  it('is detected by an export in the parsed program', () => {
    expect(isModuleCode('export default (input) => input')).toBe(true);
    expect(isModuleCode('const f = 1;\nexport default f;')).toBe(true);
    expect(isModuleCode('const f = 1;\nexport { f as default };')).toBe(true);
    expect(isModuleCode("import { greet } from 'greet';\nexport default () => greet('x');")).toBe(true);
    expect(isModuleCode('return $input')).toBe(false);
    expect(isModuleCode('importantValue = 1;\nreturn importantValue;')).toBe(false);
    // Words in a comment or a string are not declarations.
    expect(isModuleCode('// export default is only for modules\nreturn 1;')).toBe(false);
    expect(isModuleCode('const s = "export default 1";\nreturn s;')).toBe(false);
    expect(isModuleCode('const m = await import("greet"); return 1')).toBe(false);
    // An import without an export is the origin's script form.
    expect(isModuleCode("import { greet } from 'greet';\nreturn greet('x');")).toBe(false);
  });
});

describe('javascript runtime: console', () => {
  it('captures every level, formatting strings, numbers and objects like Node', async () => {
    const code = [
      'console.log("text", 42, { a: [1, "x"] }, null, undefined, true);',
      'console.info("info");',
      'console.warn("warn");',
      'console.error(new TypeError("bad"));',
      'console.debug([1, 2]);',
      'return 1;',
    ].join('\n');
    const r = await rt.run(request(code));
    expect(r.logs.map((l) => l.level)).toEqual(['log', 'info', 'warn', 'error', 'debug']);
    expect(r.logs[0]!.message).toBe('text 42 {"a":[1,"x"]} null undefined true');
    expect(r.logs[3]!.message).toMatch(/^TypeError: bad\n\s+at /);
    expect(r.logs[4]!.message).toBe('[1,2]');
  });
});

describe('javascript runtime: sql()', () => {
  const db = async (query: string): Promise<SqlCallResult> => {
    await delay(5); // a real callback is asynchronous
    if (query.startsWith('select')) return [{ id: 1, query }];
    if (query.startsWith('fail')) throw new Error('relation "nope" does not exist');
    return 3;
  };

  it('is synchronous for the guest: rows for a SELECT, the affected count otherwise', async () => {
    const code = 'const rows = sql("select 1");\nconst n = sql("update t set a = 1");\nreturn { rows, n, first: rows[0].id };';
    expect((await rt.run(request(code, { sql: db }))).output).toEqual({
      rows: [{ id: 1, query: 'select 1' }],
      n: 3,
      first: 1,
    });
  });

  it('also works with await, in order, and from the module form', async () => {
    const script = 'const out = [];\nfor (let i = 0; i < 5; i++) out.push((await sql("select " + i))[0].query);\nreturn out;';
    expect((await rt.run(request(script, { sql: db }))).output).toEqual(['select 0', 'select 1', 'select 2', 'select 3', 'select 4']);
    const mod = 'export default (input, ctx) => ctx.sql("delete from t")';
    expect((await rt.run(request(mod, { sql: db }))).output).toBe(3);
  });

  it('throws the rejection inside the guest, where the code can catch it', async () => {
    const code = 'try { sql("fail now"); return "no error"; } catch (e) { return "caught: " + e.message; }';
    expect((await rt.run(request(code, { sql: db }))).output).toBe('caught: relation "nope" does not exist');
  });

  it('fails the run with the message when the guest does not catch it', async () => {
    const e = await failure(rt.run(request('console.log("before");\nsql("fail now");', { sql: db })));
    expect(e.kind).toBe('runtime');
    expect(e.message).toContain('relation "nope" does not exist');
    expect(e.logs).toEqual([{ level: 'log', message: 'before' }]);
  });

  it('throws "sql is not available here" without a callback', async () => {
    const code = 'try { sql("select 1"); } catch (e) { return e.message; }';
    expect((await rt.run(request(code))).output).toBe('sql is not available here');
  });

  it('passes answers of about 2 MB', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `name-${i}`, pad: 'p'.repeat(80) }));
    expect(JSON.stringify(rows).length).toBeGreaterThan(2_000_000);
    const code = 'const rows = sql("select *");\nreturn { n: rows.length, last: rows[rows.length - 1].name, pad: rows[7].pad.length };';
    const r = await rt.run(request(code, { sql: async () => rows }));
    expect(r.output).toEqual({ n: 20_000, last: 'name-19999', pad: 80 });
  });

  it('turns bigint values of the callback into numbers or strings', async () => {
    const r = await rt.run(request('return sql("select")', { sql: async () => [{ small: 5n, big: 2n ** 70n }] }));
    expect(r.output).toEqual([{ small: 5, big: (2n ** 70n).toString() }]);
  });
});

describe('javascript runtime: errors', () => {
  it('reports a syntax error with its line and column', async () => {
    const e = await failure(rt.run(request('const a = 1;\nconst b = ;\nreturn a;')));
    expect(e).toBeInstanceOf(StfError);
    expect(e.kind).toBe('syntax');
    expect(e.message).toMatch(/^SyntaxError: /);
    expect(e.details).toMatch(/^line 2, column 11\b/);
  });

  it('gives the user\'s column on line 1 of a script (not the wrapper\'s)', async () => {
    const e = await failure(rt.run(request('let x = ;')));
    expect(e.kind).toBe('syntax');
    expect(e.details).toMatch(/^line 1, column 9\b/);
  });

  it('reports a syntax error in the module form as a syntax error', async () => {
    const e = await failure(rt.run(request('const a = 1;\nexport default (input) => input +;\n')));
    expect(e.kind).toBe('syntax');
    expect(e.details).toMatch(/^line 2, column \d+/);
  });

  it('reports a SyntaxError thrown at run time (JSON.parse) as a runtime error', async () => {
    const e = await failure(rt.run(request('export default () => JSON.parse("{")')));
    expect(e.kind).toBe('runtime');
    expect(e.message).toMatch(/^SyntaxError: /);
  });

  it('reports a thrown error with its message, its stack and the logs before it', async () => {
    const code = 'console.log("step 1");\nfunction check(x) {\n  throw new RangeError("x is " + x);\n}\ncheck(5);';
    const e = await failure(rt.run(request(code)));
    expect(e.kind).toBe('runtime');
    expect(e.message).toBe('RangeError: x is 5');
    expect(e.details).toMatch(/at check \(stf\.js:3:\d+\)/);
    expect(e.details).not.toContain('stf-prelude');
    expect(e.logs).toEqual([{ level: 'log', message: 'step 1' }]);
  });

  it('reports thrown non-errors', async () => {
    const e = await failure(rt.run(request('throw "plain string"')));
    expect([e.kind, e.message]).toEqual(['runtime', 'plain string']);
    const o = await failure(rt.run(request('throw { code: 7 }')));
    expect([o.kind, o.message]).toEqual(['runtime', '{"code":7}']);
  });

  it('refuses output that is not JSON-serialisable', async () => {
    const e = await failure(rt.run(request('return { n: 1n }')));
    expect(e.kind).toBe('invalid_output');
    const c = await failure(rt.run(request('const a = {}; a.self = a; return a;')));
    expect(c.kind).toBe('invalid_output');
  });

  it('reports an awaited promise that can never settle', async () => {
    const e = await failure(rt.run(request('await new Promise(() => {}); return 1;')));
    expect(e.kind).toBe('runtime');
    expect(e.message).toMatch(/never settles/);
  });
});

describe('javascript runtime: secrets', () => {
  const secrets = { SHORT: 'abc', LONG: 'abcdef-123', EMPTY: '' };

  it('masks secret values in log lines, longest first, ignoring empty values', async () => {
    const code = 'console.log("long=" + $env.LONG + " short=" + $env.SHORT, $env);\nreturn "ok";';
    const r = await rt.run(request(code, { secrets }));
    expect(r.logs).toEqual([{ level: 'log', message: 'long=*** short=*** {"SHORT":"***","LONG":"***","EMPTY":""}' }]);
  });

  it('masks secret values in error messages, stacks and attached logs', async () => {
    const code = 'console.warn("using", $env.LONG);\nthrow new Error("auth failed for " + $env.LONG);';
    const e = await failure(rt.run(request(code, { secrets })));
    expect(e.kind).toBe('runtime');
    expect(e.message).toBe('Error: auth failed for ***');
    expect(e.details).not.toContain('abcdef-123');
    expect(e.logs).toEqual([{ level: 'warn', message: 'using ***' }]);
  });

  it('masks secret values in syntax error details', async () => {
    const e = await failure(rt.run(request('const key = "abcdef-123" +;', { secrets })));
    expect(e.kind).toBe('syntax');
    expect(e.details).toContain('const key = "***" +;');
  });
});

describe('javascript runtime: imports', () => {
  it('refuses any import that is not a bundled library', async () => {
    const e = await failure(rt.run(request("import fs from 'node:fs';\nexport default () => 1;")));
    expect(e.kind).toBe('runtime');
    expect(e.message).toContain('module not allowed: node:fs');
    const d = await failure(rt.run(request("const m = await import('fs');\nreturn 1;")));
    expect(d.message).toContain('module not allowed: fs');
  });

  it('serves the libraries of the name → source map', async () => {
    const code = "import meta, { greet } from 'greet';\nexport default (input) => ({ text: greet(input.name), version: meta.version });";
    expect((await rt.run(request(code, { input: { name: 'Ada' } }))).output).toEqual({ text: 'hello Ada', version: '1.0.0' });
    const script = "const { greet } = await import('greet');\nreturn greet('Bob');";
    expect((await rt.run(request(script))).output).toBe('hello Bob');
  });
});
