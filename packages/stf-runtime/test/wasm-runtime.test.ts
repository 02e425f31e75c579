import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, StfError, type StfLimits, type StfRunRequest } from '../src/types.js';
import { createWasmRuntime } from '../src/wasm/index.js';
import { EXTISM_KERNEL_FUNCTIONS } from '../src/wasm/validate.js';
import { fixture, wat, watString } from './fixtures/wasm/build.js';

const runtime = createWasmRuntime();
afterAll(() => runtime.close());

const SECRET = 's3cr3t-value';

function request(code: Uint8Array, over: Partial<StfRunRequest> = {}, limits: Partial<StfLimits> = {}): StfRunRequest {
  return {
    code,
    input: { n: 1 },
    sources: {},
    caller: null,
    secrets: {},
    limits: { ...DEFAULT_LIMITS, timeoutMs: 3000, ...limits },
    ...over,
  };
}

async function failure(promise: Promise<unknown>): Promise<StfError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof StfError) return e;
    throw e;
  }
  throw new Error('expected the run to fail');
}

describe('wasm runtime: runs', () => {
  it('passes the input document to run and returns its JSON output', async () => {
    const result = await runtime.run(
      request(fixture('echo'), {
        input: { text: 'héllo', list: [1, 2, 3] },
        sources: { customers: [{ id: 1, name: 'Ada' }] },
        caller: 'user-42',
        secrets: { API_KEY: SECRET },
      }),
    );
    expect(result.output).toEqual({
      echo: {
        workspace_id: null,
        stf_id: null,
        caller: 'user-42',
        input: { text: 'héllo', list: [1, 2, 3] },
        sources: { customers: [{ id: 1, name: 'Ada' }] },
        env: { API_KEY: SECRET },
      },
    });
    expect(result.duration_ms).toBeGreaterThan(0);
    expect(result.logs).toHaveLength(1);
  });

  it('captures Extism log lines with the secret values masked', async () => {
    const result = await runtime.run(
      request(fixture('echo'), { input: `token=${SECRET}`, secrets: { API_KEY: SECRET, EMPTY: '' } }),
    );
    expect(result.logs).toEqual([
      {
        level: 'info',
        message: '{"workspace_id":null,"stf_id":null,"caller":null,"input":"token=***","sources":{},"env":{"API_KEY":"***","EMPTY":""}}',
      },
    ]);
    expect(JSON.stringify(result.logs)).not.toContain(SECRET);
  });

  it('caps the logs at maxLogBytes', async () => {
    const result = await runtime.run(request(fixture('echo'), {}, { maxLogBytes: 20 }));
    expect(result.logs).toEqual([
      { level: 'info', message: '{"workspace_id":null' },
      { level: 'warn', message: '[logs truncated: more than 20 bytes were logged]' },
    ]);
  });

  it('enables WASI only for a module that imports it', async () => {
    const result = await runtime.run(request(fixture('wasi')));
    expect(result.output).toEqual({ wasi: true });
  });

  it('caches compiled modules by content hash', async () => {
    const rt = createWasmRuntime();
    try {
      const code = fixture('echo');
      await rt.run(request(code));
      await rt.run(request(code.slice()));
      expect(rt.stats()).toMatchObject({ runs: 2, cacheMisses: 1, cacheHits: 1, cachedModules: 1, activeRuns: 0 });
    } finally {
      await rt.close();
    }
    await expect(rt.run(request(fixture('echo')))).rejects.toThrow(/closed/);
  });

  it('close() cuts pending host calls short and waits for the runs in progress', async () => {
    const rt = createWasmRuntime();
    let called: () => void = () => undefined;
    const inSql = new Promise<void>((resolve) => (called = resolve));
    const running = rt.run(
      request(fixture('sql'), {
        sql: () => {
          called();
          return new Promise(() => undefined);
        },
      }),
    );
    const outcome = running.then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    await inSql;
    expect(rt.stats().activeRuns).toBe(1);
    await rt.close();
    expect(await outcome).toBe('the wasm runtime was closed during the run'); // ended by the close, not the 3 s time limit
    expect(rt.stats().activeRuns).toBe(0);
  });

  it('runs several plugins at once', async () => {
    const results = await Promise.all([1, 2, 3, 4].map((n) => runtime.run(request(fixture('echo'), { input: n }))));
    expect(results.map((r) => (r.output as { echo: { input: number } }).echo.input)).toEqual([1, 2, 3, 4]);
  });

  it('provides every Extism kernel function it accepts at validation', async () => {
    const imports = EXTISM_KERNEL_FUNCTIONS.map((f, i) => `(import "extism:host/env" "${f}" (func $k${i}))`).join('\n');
    const code = wat(`(module ${imports}
      (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
      (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
      (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
      (memory (export "memory") 1 1)
      (func (export "run") (result i32) (local $o i64)
        (local.set $o (call $alloc (i64.const 1)))
        (call $store_u8 (local.get $o) (i32.const 55))
        (call $output_set (local.get $o) (i64.const 1))
        (i32.const 0)))`);
    expect((await runtime.run(request(code))).output).toBe(7);
  });
});

describe('wasm runtime: sql host function', () => {
  it('answers rows for a query', async () => {
    const queries: string[] = [];
    const result = await runtime.run(
      request(fixture('sql'), {
        sql: async (query) => {
          queries.push(query);
          await new Promise((r) => setImmediate(r)); // answered in a later turn of the event loop
          return [
            { id: 1, name: 'Ada' },
            { id: 2, name: 'Grace' },
          ];
        },
      }),
    );
    expect(queries).toEqual(['select id, name from items']);
    expect(result.output).toEqual({ rows: [{ id: 1, name: 'Ada' }, { id: 2, name: 'Grace' }] });
  });

  it('answers the affected count for a statement', async () => {
    const result = await runtime.run(request(fixture('sql'), { sql: async () => 3 }));
    expect(result.output).toEqual({ affected_rows: 3 });
  });

  it('answers an error when the callback rejects or is absent', async () => {
    const rejected = await runtime.run(
      request(fixture('sql'), { sql: async () => Promise.reject(new Error('relation "items" does not exist')) }),
    );
    expect(rejected.output).toEqual({ error: 'relation "items" does not exist' });
    const absent = await runtime.run(request(fixture('sql')));
    expect(absent.output).toEqual({ error: 'sql is not available here' });
  });

  it('fails the run at the time limit while a query is still pending, leaving no poller behind', async () => {
    // The SDK keeps a 0 ms interval running while a host function is pending, and (rc13) polls forever for a
    // worker that was terminated if the host function returns after the timeout. Track the intervals it starts.
    const realSetInterval = globalThis.setInterval;
    const realClearInterval = globalThis.clearInterval;
    const open = new Set<unknown>();
    globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
      const t = realSetInterval(...args);
      open.add(t);
      return t;
    }) as typeof setInterval;
    globalThis.clearInterval = ((t: Parameters<typeof clearInterval>[0]) => {
      open.delete(t);
      realClearInterval(t);
    }) as typeof clearInterval;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let release: (rows: Record<string, unknown>[]) => void = () => undefined;
    try {
      const err = await failure(
        runtime.run(
          request(fixture('sql'), { sql: () => new Promise((resolve) => (release = resolve)) }, { timeoutMs: 300 }),
        ),
      );
      expect([err.kind, err.message]).toEqual(['timeout', 'The STF ran longer than 300 ms']);
      release([]); // the query finishes after the run ended
      // A whole run after it, start to end: the late answer has been handled by then.
      expect((await runtime.run(request(fixture('echo'), { input: 1 }))).output).toMatchObject({ echo: { input: 1 } });
      expect(open.size).toBe(0);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      globalThis.setInterval = realSetInterval;
      globalThis.clearInterval = realClearInterval;
      for (const t of open) realClearInterval(t as ReturnType<typeof setInterval>);
    }
  });
});

describe('wasm runtime: failures', () => {
  it('stops an endless loop at the time limit', async () => {
    const err = await failure(runtime.run(request(fixture('loop'), {}, { timeoutMs: 250 })));
    // Stopped by its own limit (the message names it), not by a default.
    expect([err.kind, err.message, err.details]).toEqual(['timeout', 'The STF ran longer than 250 ms', 'limit: timeoutMs']);
  });

  it('reports a trap as a runtime error', async () => {
    const err = await failure(runtime.run(request(fixture('trap'))));
    expect(err.kind).toBe('runtime');
    expect(err.message).toBe('The plugin failed: unreachable');
    expect(err.details).toMatch(/wasm/);
  });

  it('reports an error set by the plugin, secrets masked', async () => {
    const err = await failure(runtime.run(request(fixture('error'), { input: 'boom', secrets: { K: SECRET } })));
    expect(err.kind).toBe('runtime');
    expect(err.message).toBe(
      '{"workspace_id":null,"stf_id":null,"caller":null,"input":"boom","sources":{},"env":{"K":"***"}}',
    );
  });

  it('reports a stack overflow', async () => {
    const err = await failure(runtime.run(request(fixture('recursion'))));
    expect(err.kind).toBe('stack');
  });

  it('reports a trap while the module starts, and the host survives it', async () => {
    const err = await failure(runtime.run(request(fixture('start-trap'))));
    expect([err.kind, err.message]).toEqual(['runtime', 'The module failed to start: unreachable']);
    expect((await runtime.run(request(fixture('echo')))).output).toBeTruthy();
  });

  it('reports Extism kernel memory beyond the memory limit', async () => {
    const err = await failure(
      runtime.run(request(fixture('kernel-oom', { BYTES: String(2 * 1024 * 1024) }), {}, { memoryBytes: 1024 * 1024 })),
    );
    expect(err.kind).toBe('memory');
    expect(err.message).toBe('The STF used more memory than its limit (1048576 bytes)');
    expect(err.logs.some((l) => /memory limit exceeded/.test(l.message))).toBe(true);
  });

  it('refuses output that is not JSON', async () => {
    const err = await failure(runtime.run(request(fixture('bad-json'))));
    expect(err.kind).toBe('invalid_output');
    expect(err.message).toMatch(/^The output is not JSON: /);
  });

  it('refuses output above maxOutputBytes', async () => {
    const err = await failure(runtime.run(request(fixture('echo'), { input: 'x'.repeat(500) }, { maxOutputBytes: 300 })));
    expect(err.kind).toBe('output_too_large');
    expect(err.message).toMatch(/^The output is \d+ bytes; the limit is 300$/);
    expect(err.logs).toHaveLength(1); // logs captured before the failure come with it
  });

  it('refuses an invalid module before running it', async () => {
    for (const name of ['no-max', 'too-big', 'no-run']) {
      expect((await failure(runtime.run(request(fixture(name))))).kind, name).toBe('invalid_module');
    }
    expect((await failure(runtime.run(request(new Uint8Array([1, 2, 3]))))).kind).toBe('invalid_module');
    expect((await failure(runtime.run(request('(module)' as never)))).kind).toBe('invalid_module');
  });
});

describe('wasm runtime: HTTP', () => {
  let server: Server;
  let hits = 0;
  let code: Uint8Array;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.setHeader('content-type', 'application/json');
      res.end('{"reached":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const req = JSON.stringify({ url: `http://127.0.0.1:${port}/x`, method: 'GET' });
    code = fixture('http', { REQUEST: watString(req), REQUEST_LEN: String(Buffer.byteLength(req)) });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('denies HTTP by default', async () => {
    const err = await failure(runtime.run(request(code)));
    expect(err.kind).toBe('runtime');
    expect(err.message).toMatch(/HTTP request to "http:\/\/127\.0\.0\.1:\d+\/x" is not allowed/);
    expect(hits).toBe(0);
  });

  it('allows the hosts listed in allowedHosts', async () => {
    const rt = createWasmRuntime({ allowedHosts: ['127.0.0.1'] });
    try {
      expect((await rt.run(request(code))).output).toEqual({ reached: true });
      expect(hits).toBe(1);
    } finally {
      await rt.close();
    }
  });
});
