import { readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createDockerRuntime,
  DEFAULT_LIMITS,
  type DockerRuntime,
  EngineError,
  parseDockerHost,
  StfError,
  StfRuntimeUnavailable,
  type SqlCallResult,
  type StfLimits,
  type StfRunRequest,
} from '../src/index.js';
import { parseOutput } from '../src/docker/runtime.js';
import { EngineClient, StreamDemuxer } from '../src/docker/engine.js';

// Against podman's Docker-compatible service (scripts/container-engine.sh, started by the vitest globalSetup).
const dockerHost = inject('dockerHost');
const images = inject('dockerImages');

const limits: StfLimits = { ...DEFAULT_LIMITS, timeoutMs: 15_000, memoryBytes: 128 * 1024 * 1024 };

function config(image: string, command: string[], extra: Record<string, unknown> = {}): Uint8Array {
  return Buffer.from(JSON.stringify({ image, command, ...extra }));
}

/** A node STF: `body` runs with `doc` (the stdin document) and `api(query)` (the SQL callback) in scope. */
function nodeStf(body: string, extra: Record<string, unknown> = {}): Uint8Array {
  const program = `
    const http = require('node:http');
    function call(doc, path, payload, token) {
      return new Promise((resolve, reject) => {
        const req = http.request({ socketPath: doc.api_socket, path, method: 'POST',
          headers: { authorization: 'Bearer ' + (token ?? doc.api_token), 'content-type': 'application/json' } }, (res) => {
          let text = ''; res.on('data', (d) => (text += d)); res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.end(JSON.stringify(payload));
      });
    }
    let raw = '';
    process.stdin.on('data', (d) => (raw += d)).on('end', async () => {
      const doc = JSON.parse(raw);
      const api = (query) => call(doc, '/sql', { query });
      const result = await (async () => { ${body} })();
      process.stdout.write(JSON.stringify({ output: result }) + '\\n');
    });`;
  return config(images.node, ['/usr/bin/node', '-e', program], extra);
}

function sh(script: string, extra: Record<string, unknown> = {}): Uint8Array {
  return config(images.busybox, ['/bin/sh', '-c', script], extra);
}

function request(code: Uint8Array, over: Partial<StfRunRequest> = {}): StfRunRequest {
  return { code, input: null, sources: {}, caller: null, secrets: {}, limits, ...over };
}

async function failure(p: Promise<unknown>): Promise<StfError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StfError);
  return err as StfError;
}

/** Containers of this file's runs (each run: the STF's and its relay) still on the engine. */
async function containersLeft(): Promise<number> {
  const client = new EngineClient(parseDockerHost(dockerHost));
  const filters = encodeURIComponent(JSON.stringify({ label: ['wds.stf=true'] }));
  const res = (await client.call('GET', `/containers/json?all=1&filters=${filters}`)) as { Labels?: Record<string, string> }[];
  // Other test files run containers of their own at the same time, under workspaces this file does not use.
  return res.filter((c) => ['', 'ws-1'].includes(c.Labels?.['wds.workspace_id'] ?? '')).length;
}

let rt: DockerRuntime;
const workDir = join(tmpdir(), `wds-docker-test-${process.pid}`);
beforeAll(() => {
  rt = createDockerRuntime({ dockerHost, workDir });
});
afterAll(async () => {
  await rt?.close();
  await rm(workDir, { recursive: true, force: true });
});

describe('docker runtime: the contract', () => {
  it('passes the stdin document and returns the printed output, with stderr as logs', async () => {
    const result = await rt.run(
      request(nodeStf(`console.error('working on', doc.input.n); return { doc: { ...doc, api_token: typeof doc.api_token } };`), {
        input: { n: 41 },
        sources: { prices: [1, 2] },
        caller: 'user-1',
        workspaceId: 'ws-1',
        stfId: 'stf-1',
      }),
    );
    expect(result.output).toEqual({
      doc: {
        workspace_id: 'ws-1',
        stf_id: 'stf-1',
        caller: 'user-1',
        input: { n: 41 },
        sources: { prices: [1, 2] },
        api_url: 'http://127.0.0.1:8080',
        api_socket: '/stf/api.sock',
        api_token: 'string',
      },
    });
    expect(result.logs).toEqual([{ level: 'log', message: 'working on 41' }]);
    expect(result.duration_ms).toBeGreaterThan(0);
    expect(await containersLeft()).toBe(0);
  });

  it('works with any image and command (busybox sh)', async () => {
    const result = await rt.run(request(sh(`read -r doc; echo "log line" >&2; echo '{"output":{"shell":true}}'`)));
    expect(result.output).toEqual({ shell: true });
    expect(result.logs).toEqual([{ level: 'log', message: 'log line' }]);
  });

  it('takes the last output line when the program prints other lines first', async () => {
    const result = await rt.run(request(sh(`cat >/dev/null; echo starting; echo '{"output":1}'; echo`)));
    expect(result.output).toBe(1);
  });

  it('passes env and the secrets named in secret_keys, masking secret values in logs and errors', async () => {
    const code = sh(`cat >/dev/null; echo "key is $API_KEY, mode $MODE" >&2; test -z "$OTHER" || echo "OTHER leaked" >&2; echo "{\\"output\\":\\"$MODE\\"}"`, {
      env: { MODE: 'fast' },
      secret_keys: ['API_KEY'],
    });
    const result = await rt.run(request(code, { secrets: { API_KEY: 'sk-live-123456', OTHER: 'not-passed-value' } }));
    expect(result.output).toBe('fast');
    expect(result.logs).toEqual([{ level: 'log', message: 'key is ***, mode fast' }]);

    // Reads its input first: a program that exits before the engine finished writing stdin makes podman add its own
    // "broken pipe" line to stderr, which would make this assertion depend on timing.
    const failing = sh(`cat >/dev/null; echo "failed with $API_KEY" >&2; exit 3`, { secret_keys: ['API_KEY'] });
    const err = await failure(rt.run(request(failing, { secrets: { API_KEY: 'sk-live-123456' } })));
    expect(err.kind).toBe('runtime');
    expect(err.message).toBe('The container exited with code 3');
    expect(err.details).toBe('failed with ***');
    expect(JSON.stringify(err)).not.toContain('sk-live-123456');
  });

  it('fails clearly when a secret named in secret_keys is not set', async () => {
    const err = await failure(rt.run(request(sh('true', { secret_keys: ['MISSING'] }))));
    expect(err.kind).toBe('runtime');
    expect(err.message).toContain('MISSING');
  });

  it('fails a non-zero exit with the tail of stderr', async () => {
    const err = await failure(rt.run(request(sh(`cat >/dev/null; i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 7`))));
    expect(err.kind).toBe('runtime');
    expect(err.message).toBe('The container exited with code 7');
    expect(err.details?.endsWith('line 1999')).toBe(true);
    expect(err.details?.length).toBeLessThanOrEqual(4096);
  });

  it('refuses output that is not a JSON document with "output"', async () => {
    const err = await failure(rt.run(request(sh(`cat >/dev/null; echo 'hello'`))));
    expect(err.kind).toBe('invalid_output');
    expect(err.details).toBe('hello');
    const empty = await failure(rt.run(request(sh('true'))));
    expect(empty.message).toContain('printed nothing');
  });

  it('names a missing image and a missing command', async () => {
    const image = await failure(rt.run(request(config('localhost/not-loaded:1', ['x']))));
    expect(image.kind).toBe('invalid_module');
    expect(image.message).toBe('The image localhost/not-loaded:1 is not present on the container engine');
    const command = await failure(rt.run(request(config(images.busybox, ['/bin/no-such-program']))));
    expect(command.kind).toBe('runtime');
    expect(await containersLeft()).toBe(0);
  });

  it('refuses a bad config before creating anything', async () => {
    const err = await failure(rt.run(request(Buffer.from(JSON.stringify({ image: images.busybox, command: 'sh -c true' })))));
    expect(err.kind).toBe('invalid_module');
    expect(err.message).toContain('command must be a non-empty array');
  });
});

describe('docker runtime: the sandbox', () => {
  it('runs unprivileged with no capabilities, a read-only root and a small writable /tmp', async () => {
    const result = await rt.run(
      request(
        sh(`cat >/dev/null
          uid=$(id -u)
          caps=$(grep CapEff /proc/self/status | tr -d '\\t' | cut -d: -f2)
          if touch /root-write 2>/dev/null; then root=writable; else root=readonly; fi
          if echo x > /tmp/ok 2>/dev/null; then tmp=writable; else tmp=readonly; fi
          if echo x > /stf/x 2>/dev/null; then stf=writable; else stf=readonly; fi
          echo "{\\"output\\":{\\"uid\\":$uid,\\"caps\\":\\"$caps\\",\\"root\\":\\"$root\\",\\"tmp\\":\\"$tmp\\",\\"stf\\":\\"$stf\\"}}"`),
      ),
    );
    expect(result.output).toEqual({ uid: 65534, caps: '0000000000000000', root: 'readonly', tmp: 'writable', stf: 'readonly' });
  });

  it('has no network: only loopback, and a host listener on 127.0.0.2 receives nothing', async () => {
    let connections = 0;
    const listener = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.2', resolve));
    const port = (listener.address() as net.AddressInfo).port;
    try {
      const result = await rt.run(
        request(
          nodeStf(`
            const net = require('node:net');
            const fs = require('node:fs');
            const attempt = await new Promise((resolve) => {
              const s = net.connect(${port}, '127.0.0.2');
              s.on('connect', () => { s.destroy(); resolve('connected'); });
              s.on('error', (e) => resolve(e.code));
            });
            return { interfaces: fs.readdirSync('/sys/class/net').sort(), attempt };`),
        ),
      );
      expect(result.output).toEqual({ interfaces: ['lo'], attempt: 'ECONNREFUSED' });
      expect(connections).toBe(0);
    } finally {
      listener.close();
    }
  });

  it('kills a container at the time limit and removes it', async () => {
    const err = await failure(rt.run(request(sh('sleep 60'), { limits: { ...limits, timeoutMs: 1_500 } })));
    // Killed at its own limit (the message names it), long before the 60 s sleep ends.
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('The STF ran longer than 1500 ms');
    expect(await containersLeft()).toBe(0);
  });

  it('kills a container over the memory limit', async () => {
    const err = await failure(
      rt.run(
        request(nodeStf(`const chunks = []; for (let i = 0; i < 40; i++) chunks.push(Buffer.alloc(16 * 1024 * 1024, 1)); return chunks.length;`), {
          limits: { ...limits, memoryBytes: 64 * 1024 * 1024 },
        }),
      ),
    );
    expect(err.kind).toBe('memory');
    expect(err.message).toContain('memory limit of 64 MiB');
  });

  it('caps the number of processes', async () => {
    const pidsLimit = 16;
    const capped = createDockerRuntime({ dockerHost, workDir, pidsLimit });
    try {
      const result = await capped.run(
        // The loop's subshell dies at the first fork that fails; it records each started process in /tmp/n.
        request(sh(`cat >/dev/null; (i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); echo $i > /tmp/n; done) 2>/dev/null; read n < /tmp/n; echo "{\\"output\\":$n}"`)),
      );
      expect(result.output as number).toBeLessThanOrEqual(pidsLimit);
      expect(result.output as number).toBeGreaterThan(1);
    } finally {
      await capped.close();
    }
  });

  it('kills a container that prints more than maxOutputBytes', async () => {
    const err = await failure(rt.run(request(sh('cat >/dev/null; yes 0123456789'), { limits: { ...limits, maxOutputBytes: 100_000 } })));
    expect(err.kind).toBe('output_too_large');
    expect(err.message).toContain('100000 bytes');
  });

  it('caps the logs it keeps', async () => {
    const result = await rt.run(
      request(sh(`cat >/dev/null; i=0; while [ $i -lt 500 ]; do echo "log line number $i" >&2; i=$((i+1)); done; echo '{"output":true}'`), {
        limits: { ...limits, maxLogBytes: 1_000 },
      }),
    );
    expect(result.output).toBe(true);
    expect(result.logs.at(-1)?.message).toContain('[logs truncated');
    expect(result.logs.length).toBeLessThan(100);
  });

  it('runs at most `concurrency` containers at once; a run that waits past its deadline times out', async () => {
    const one = createDockerRuntime({ dockerHost, workDir, concurrency: 1 });
    try {
      const first = one.run(request(sh(`cat >/dev/null; sleep 2; echo '{"output":"first"}'`)));
      await expect.poll(() => one.stats().activeRuns).toBe(1); // it holds the only slot
      const second = one.run(request(sh(`cat >/dev/null; echo '{"output":"second"}'`)));
      const starved = one.run(request(sh('true'), { limits: { ...limits, timeoutMs: 500 } }));
      expect(one.stats().waiting).toBe(2);
      const err = await failure(starved);
      expect(err.kind).toBe('timeout');
      expect(err.message).toContain('container slots');
      expect(one.stats().activeRuns).toBeLessThanOrEqual(1);
      expect((await first).output).toBe('first');
      expect((await second).output).toBe('second');
      expect(one.stats().runs).toBe(2);
    } finally {
      await one.close();
    }
  });
});

describe('docker runtime: the SQL callback', () => {
  it('serves POST /sql with the run token through the run callback, in order, and nothing else', async () => {
    const queries: string[] = [];
    const sql = async (q: string): Promise<SqlCallResult> => {
      queries.push(q);
      if (q.startsWith('DROP')) throw new Error('DDL is not allowed in an STF');
      return q.startsWith('SELECT') ? [{ id: 1, q }] : 3;
    };
    const result = await rt.run(
      request(
        nodeStf(`
          const select = await api('SELECT 1');
          const update = await api('UPDATE t SET x = 1');
          const denied = await api('DROP TABLE t');
          const wrongToken = await call(doc, '/sql', { query: 'SELECT 2' }, 'not-the-token');
          const otherPath = await call(doc, '/admin', { query: 'SELECT 3' });
          const badBody = await call(doc, '/sql', { q: 1 });
          return { select, update, denied, wrongToken, otherPath, badBody };`),
        { sql },
      ),
    );
    expect(result.output).toEqual({
      select: { status: 200, body: { rows: [{ id: 1, q: 'SELECT 1' }] } },
      update: { status: 200, body: { affected_rows: 3 } },
      denied: { status: 400, body: { error: 'DDL is not allowed in an STF' } },
      wrongToken: { status: 401, body: { error: 'missing or wrong api_token' } },
      otherPath: {
        status: 403,
        body: { error: "only POST /sql and POST /api/v1/workspaces/<this run's workspace_id>/sql are served here", code: 'FORBIDDEN' },
      },
      badBody: { status: 400, body: { error: 'query must be a non-empty string' } },
    });
    expect(queries).toEqual(['SELECT 1', 'UPDATE t SET x = 1', 'DROP TABLE t']);
  });

  it('gives every run its own socket and token: a run sees only its own /stf', async () => {
    const seen: string[] = [];
    const code = nodeStf(`
      const fs = require('node:fs');
      const r = await api('SELECT me');
      return { files: fs.readdirSync('/stf'), token: doc.api_token.length, rows: r.body.rows };`);
    const answer = (run: string) => async () => {
      seen.push(run);
      return [{ run }];
    };
    const [a, b] = await Promise.all([rt.run(request(code, { sql: answer('a') })), rt.run(request(code, { sql: answer('b') }))]);
    expect(a.output).toEqual({ files: ['api.sock'], token: 43, rows: [{ run: 'a' }] });
    expect(b.output).toEqual({ files: ['api.sock'], token: 43, rows: [{ run: 'b' }] });
    expect(seen.sort()).toEqual(['a', 'b']);
    // Nothing of a finished run stays on the host.
    const dirs = await readdir(workDir);
    expect((await Promise.all(dirs.map((d) => readdir(join(workDir, d))))).flat()).toEqual([]);
  });

  it('answers an error when the run has no sql callback', async () => {
    const result = await rt.run(request(nodeStf(`return (await api('SELECT 1'));`)));
    expect(result.output).toEqual({ status: 400, body: { error: 'sql() is not available in this run' } });
  });
});

describe('docker runtime: the engine', () => {
  it('reports an unreachable engine as unavailable, not as a failure of the code', async () => {
    const nowhere = createDockerRuntime({ dockerHost: `unix://${join(workDir, 'no-engine.sock')}`, workDir });
    const err = await nowhere.run(request(sh('true'))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toBeInstanceOf(StfRuntimeUnavailable);
    await expect(nowhere.ping()).rejects.toThrow(/unreachable/);
    await nowhere.close();
    expect((await rt.ping()).apiVersion).toMatch(/^\d/);
  });

  it('parses DOCKER_HOST', () => {
    expect(parseDockerHost('unix:///run/podman/podman.sock')).toEqual({ socketPath: '/run/podman/podman.sock' });
    expect(parseDockerHost('tcp://127.0.0.1:2375')).toEqual({ host: '127.0.0.1', port: 2375 });
    expect(() => parseDockerHost('npipe:////./pipe/docker')).toThrow(/expected unix/);
    expect(() => parseDockerHost('unix://relative.sock')).toThrow(/absolute/);
  });

  it('demultiplexes the engine stream however it is split', () => {
    const frame = (type: number, text: string) => {
      const body = Buffer.from(text);
      const head = Buffer.alloc(8);
      head[0] = type;
      head.writeUInt32BE(body.length, 4);
      return Buffer.concat([head, body]);
    };
    const all = Buffer.concat([frame(1, 'out-1 '), frame(2, 'err-1'), frame(1, 'out-2')]);
    for (const step of [1, 3, 7, all.length]) {
      const got = { stdout: '', stderr: '' };
      const demux = new StreamDemuxer((stream, chunk) => {
        got[stream] += chunk.toString();
      });
      for (let i = 0; i < all.length; i += step) demux.push(all.subarray(i, i + step));
      expect(got).toEqual({ stdout: 'out-1 out-2', stderr: 'err-1' });
    }
  });

  it('parses the output document', () => {
    expect(parseOutput('{"output":{"a":1}}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseOutput('{\n  "output": [1, 2]\n}\n')).toEqual({ ok: true, value: [1, 2] });
    expect(parseOutput('progress 50%\n{"output":null}\n')).toEqual({ ok: true, value: null });
    expect(parseOutput('{"result":1}')).toMatchObject({ ok: false });
  });
});

describe('docker runtime: containers a dead process left behind', () => {
  it('removeExpired removes STF containers a minute past their deadline, and keeps those still within it', async () => {
    const client = new EngineClient(parseDockerHost(dockerHost));
    // What a process killed mid-run leaves: a container of an STF run whose owner will never remove it.
    const make = async (deadline: number) =>
      (
        (await client.call('POST', '/containers/create', {
          Image: images.busybox,
          Cmd: ['/bin/sh', '-c', 'sleep 600'],
          NetworkDisabled: true,
          HostConfig: { NetworkMode: 'none' },
          Labels: { 'wds.stf': 'true', 'wds.deadline': String(deadline) },
        })) as { Id: string }
      ).Id;
    const expired = await make(Date.now() - 120_000);
    const current = await make(Date.now() + 600_000);
    try {
      expect(await rt.removeExpired(60_000)).toBeGreaterThanOrEqual(1);
      const exists = async (id: string) => (await client.request('GET', `/containers/${id}/json`)).status === 200;
      expect(await exists(expired)).toBe(false);
      expect(await exists(current)).toBe(true);
    } finally {
      for (const id of [expired, current]) await client.request('DELETE', `/containers/${id}?force=1`).catch(() => undefined);
    }
  });
});
