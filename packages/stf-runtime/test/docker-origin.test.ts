/**
 * Docker STFs written for the origin platform (d6e) run here unchanged (issue 17): an `{"image"}`-only config whose
 * image brings its own ENTRYPOINT and WORKDIR, the SQL callback over HTTP at `api_url` (served by the run's relay
 * container, the STF still without a network), the origin's refusals, and its describe answer. The fixture
 * (test/fixtures/docker/origin-stf) is built offline from its Dockerfile by the engine (docker-images.ts).
 */
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EngineClient, parseDockerHost } from '../src/docker/engine.js';
import { API_URL } from '../src/docker/runtime.js';
import { createDockerRuntime, DEFAULT_LIMITS, type DockerRuntime, StfError, type SqlCallResult, type StfRunRequest } from '../src/index.js';
import { buildFixtureImage } from './docker-images.js';

const dockerHost = inject('dockerHost');
const images = inject('dockerImages');
const FIXTURE = new URL('./fixtures/docker/origin-stf/', import.meta.url).pathname;
const limits = { ...DEFAULT_LIMITS, timeoutMs: 30_000, memoryBytes: 128 * 1024 * 1024 };
const WS = '0190b6a4-7c1e-7a51-9d3e-5f2a1c0d4e01';
const STF = '0190b6a4-7c1e-7a51-9d3e-5f2a1c0d4e02';

/** What the service's workspace SQL throws: a ServiceError (code, HTTP status, details), duck-typed here. */
class RefusedStatement extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly details?: string,
  ) {
    super(message);
  }
}

const INVOICES = [
  { id: 1, amount: 120 },
  { id: 2, amount: 80 },
  { id: 3, amount: 300 },
];

/** The run's SQL, as the harness of docker-runtime.test.ts supplies it: statements recorded, answers from a table. */
function invoiceSql() {
  const statements: string[] = [];
  const sql = async (q: string): Promise<SqlCallResult> => {
    statements.push(q);
    if (/^\s*DROP\b/i.test(q)) throw new RefusedStatement('STF code cannot change the schema', 'DDL_FORBIDDEN', 403, 'DDL is refused inside STF runs');
    const min = /amount >= (\d+)/.exec(q);
    if (min) return INVOICES.filter((r) => r.amount >= Number(min[1]));
    const n = /^SELECT (\d+) AS n$/.exec(q);
    if (n) return [{ n: Number(n[1]) }];
    throw new Error(`unexpected statement ${q}`);
  };
  return { sql, statements };
}

const code = (config: Record<string, unknown>) => Buffer.from(JSON.stringify(config));

function request(image: string, input: unknown, over: Partial<StfRunRequest> = {}): StfRunRequest {
  return { code: code({ image }), input, sources: {}, caller: 'user-1', workspaceId: WS, stfId: STF, secrets: {}, limits, ...over };
}

async function failure(p: Promise<unknown>): Promise<StfError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StfError);
  return err as StfError;
}

/** Containers of this file's runs still on the engine (other test files run theirs, under other workspaces). */
async function containersLeft(): Promise<{ Id: string; Labels?: Record<string, string> }[]> {
  const client = new EngineClient(parseDockerHost(dockerHost));
  const filters = encodeURIComponent(JSON.stringify({ label: ['wds.stf=true', `wds.workspace_id=${WS}`] }));
  return (await client.call('GET', `/containers/json?all=1&filters=${filters}`)) as { Id: string }[];
}

let rt: DockerRuntime;
let image: string;
const workDir = join(tmpdir(), `wds-docker-origin-test-${process.pid}`);

beforeAll(async () => {
  image = await buildFixtureImage(dockerHost, FIXTURE, 'localhost/wds-test-origin-stf', { BASE: images.node });
  rt = createDockerRuntime({ dockerHost, workDir, concurrency: 4, maxRunningPerWorkspace: 4 });
}, 180_000);
afterAll(async () => {
  await rt?.close();
  await rm(workDir, { recursive: true, force: true });
});

describe('docker STFs in the origin platform style', () => {
  it('runs an {"image"}-only config: its ENTRYPOINT in its WORKDIR, SQL over TCP at api_url with real rows', async () => {
    const { sql, statements } = invoiceSql();
    const result = await rt.run(request(image, { operation: 'list_invoices', min_amount: 100 }, { sql }));
    expect(result.output).toEqual({
      status: 'success',
      operation: 'list_invoices',
      data: {
        rows: [
          { id: 1, amount: 120 },
          { id: 3, amount: 300 },
        ],
        count: 2,
      },
    });
    expect(statements).toEqual(['SELECT id, amount FROM invoices WHERE amount >= 100 ORDER BY id']);
    expect(result.logs).toEqual([{ level: 'log', message: 'fetched 2 invoices' }]);
    // Both containers of the run are gone.
    expect(await containersLeft()).toEqual([]);
  });

  it('honours WORKDIR and ENTRYPOINT; a config `command` replaces CMD only and reaches the ENTRYPOINT as arguments', async () => {
    const plain = await rt.run(request(image, { operation: 'network' }));
    expect(plain.output).toMatchObject({ cwd: '/app', argv: [] });
    const withCommand = await rt.run({ ...request(image, { operation: 'ignored' }), code: code({ image, command: ['network', 'extra'] }) });
    expect(withCommand.output).toMatchObject({ cwd: '/app', argv: ['network', 'extra'] });
  });

  it('gives the STF container no route off the host: only lo, no IPv4 route, no IPv6 route but lo', async () => {
    const result = await rt.run(request(image, { operation: 'network' }));
    expect(result.output).toMatchObject({ interfaces: ['lo'], ipv4_routes: [], ipv6_routes_off_lo: [] });
  });

  it('serves the origin path only for this run: other paths, methods, workspaces, STFs and tokens are refused', async () => {
    const { sql, statements } = invoiceSql();
    const result = await rt.run(request(image, { operation: 'probe' }, { sql }));
    const forbidden = (error: string) => ({ status: 403, body: { error, code: 'FORBIDDEN' } });
    const notServed = forbidden("only POST /sql and POST /api/v1/workspaces/<this run's workspace_id>/sql are served here");
    expect(result.output).toEqual({
      own: { status: 200, body: { rows: [{ n: 1 }] } },
      ownNoHeaders: { status: 200, body: { rows: [{ n: 1 }] } },
      wrongPath: notServed,
      root: notServed,
      getMethod: forbidden('use POST'),
      otherWorkspacePath: forbidden("the path's workspace is not this run's workspace_id"),
      otherWorkspaceHeader: forbidden("X-Workspace-ID is not this run's workspace_id"),
      otherStfHeader: forbidden("X-STF-ID is not this run's stf_id"),
      wrongToken: { status: 401, body: { error: 'missing or wrong api_token', code: 'UNAUTHORIZED' } },
      foreignToken: null,
      // The service's SQL error envelope, with the status of its code.
      ddl: { status: 403, body: { error: 'STF code cannot change the schema', code: 'DDL_FORBIDDEN', details: 'DDL is refused inside STF runs' } },
      emptySql: { status: 400, body: { error: 'Invalid request', code: 'VALIDATION_ERROR', details: 'sql: must be a non-empty string' } },
      // Our own form keeps working, over TCP through the relay and over the socket.
      oursOverTcp: { status: 200, body: { rows: [{ n: 2 }] } },
      oursOverSocket: { status: 200, body: { rows: [{ n: 3 }] } },
    });
    // Only the accepted statements reached the workspace.
    expect(statements).toEqual(['SELECT 1 AS n', 'SELECT 1 AS n', 'DROP TABLE invoices', 'SELECT 2 AS n', 'SELECT 3 AS n']);
  });

  it("refuses a token of another run that is still going, and the other run's own calls still work", async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((r) => {
      release = r;
    });
    let handOver: (token: string) => void = () => {};
    const handed = new Promise<string>((r) => {
      handOver = r;
    });
    const holder = rt.run(
      request(image, { operation: 'hold' }, {
        sql: async (q) => {
          const token = /^SELECT 'token:(.+)'$/.exec(q)?.[1];
          if (token) {
            handOver(token);
            return [{ ok: true }];
          }
          if (q === 'WAIT') {
            await released;
            return 0;
          }
          throw new Error(`unexpected ${q}`);
        },
      }),
    );
    try {
      const foreign = await handed;
      const { sql } = invoiceSql();
      const probe = await rt.run(request(image, { operation: 'probe', foreign_token: foreign }, { sql }));
      expect((probe.output as Record<string, unknown>).foreignToken).toEqual({
        status: 401,
        body: { error: 'missing or wrong api_token', code: 'UNAUTHORIZED' },
      });
    } finally {
      release();
    }
    expect((await holder).output).toEqual({ held: true });
  });

  it('answers describe in the origin shape (output.data.input_schema and operations), with no SQL', async () => {
    const result = await rt.run(request(image, { operation: 'describe' }));
    expect(result.output).toEqual(JSON.parse(await readFile(join(FIXTURE, 'describe.json'), 'utf8')));
  });

  it('reports the error document origin STFs print before exiting 1, with stderr as details', async () => {
    const err = await failure(rt.run(request(image, { operation: 'fail' })));
    expect(err.kind).toBe('runtime');
    expect(err.message).toBe('The container exited with code 1: ValidationError: Missing required field: period');
    expect(err.details).toBe('Error: Missing required field: period');
  });

  it('puts the relay on the stdin document: api_url on the run loopback, api_socket kept', async () => {
    const result = await rt.run({
      ...request(images.busybox, null),
      code: code({ image: images.busybox, command: ['/bin/sh', '-c', 'read -r doc; echo "{\\"output\\":$doc}"'] }),
    });
    expect(result.output).toMatchObject({ workspace_id: WS, stf_id: STF, api_url: API_URL, api_socket: '/stf/api.sock' });
    expect(API_URL).toBe('http://127.0.0.1:8080');
  });
});

describe('the relay container', () => {
  it('runs hardened: no network of its own, read-only root, no capabilities, no new privileges, nobody, limits', async () => {
    const seen: Record<string, unknown>[] = [];
    const client = new EngineClient(parseDockerHost(dockerHost));
    let inspecting: Promise<void> | undefined;
    const result = await rt.run(
      request(image, { operation: 'hold' }, {
        sql: async (q) => {
          if (q !== 'WAIT') return [];
          // While the run holds: the run's two containers, as the engine describes them.
          inspecting ??= (async () => {
            for (const c of await containersLeft()) {
              const info = (await client.call('GET', `/containers/${c.Id}/json`)) as Record<string, unknown>;
              seen.push(info);
            }
          })();
          await inspecting;
          return 0;
        },
      }),
    );
    expect(result.output).toEqual({ held: true });
    type Info = { Id: string; Config: { User: string; Labels: Record<string, string> }; HostConfig: Record<string, unknown> };
    const infos = seen as unknown as Info[];
    const relay = infos.find((i) => i.Config.Labels['wds.role'] === 'relay');
    const stf = infos.find((i) => i.Config.Labels['wds.role'] === 'stf');
    expect(relay && stf).toBeTruthy();
    for (const c of [relay, stf] as Info[]) {
      expect(c.Config.User).toBe('65534:65534');
      expect(c.Config.Labels).toMatchObject({ 'wds.stf': 'true', 'wds.workspace_id': WS, 'wds.stf_id': STF });
      expect(c.HostConfig).toMatchObject({ ReadonlyRootfs: true, SecurityOpt: ['no-new-privileges'] });
      // The engine lists what it dropped of its default set (podman: without the CAP_ prefix).
      const dropped = (c.HostConfig.CapDrop as string[]).map((x) => x.replace(/^CAP_/, ''));
      expect(dropped).toEqual(expect.arrayContaining(['CHOWN', 'DAC_OVERRIDE', 'NET_BIND_SERVICE', 'NET_RAW', 'SETUID', 'SETGID']));
      expect(c.HostConfig.CapAdd ?? []).toEqual([]);
      expect(c.HostConfig.Memory).toBeGreaterThan(0);
      expect(c.HostConfig.PidsLimit).toBeGreaterThan(0);
    }
    expect((relay as Info).HostConfig.NetworkMode).toBe('none');
    expect((stf as Info).HostConfig.NetworkMode).toBe(`container:${(relay as Info).Id}`);
    expect(await containersLeft()).toEqual([]);
  });

  it('is removed with the run when the run times out, fails, or the image is missing', async () => {
    const { sql } = invoiceSql();
    const timedOut = await failure(
      rt.run({
        ...request(images.busybox, null, { sql, limits: { ...limits, timeoutMs: 2_000 } }),
        code: code({ image: images.busybox, command: ['sleep', '60'] }),
      }),
    );
    expect(timedOut.kind).toBe('timeout');
    const failed = await failure(rt.run(request(image, { operation: 'fail' })));
    expect(failed.kind).toBe('runtime');
    const missing = await failure(rt.run(request('localhost/not-loaded:1', null)));
    expect(missing.kind).toBe('invalid_module');
    expect(await containersLeft()).toEqual([]);
  });

  it('is removed when the runtime is closed during a run', async () => {
    const closing = createDockerRuntime({ dockerHost, workDir });
    const run = closing
      .run({ ...request(images.busybox, null), code: code({ image: images.busybox, command: ['sleep', '60'] }) })
      .then(() => new Error('the run finished'), (e: unknown) => e);
    // Wait until both containers of the run exist, then close.
    for (let i = 0; i < 100 && (await containersLeft()).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    await closing.close();
    expect(String(await run)).toMatch(/closed/);
    expect(await containersLeft()).toEqual([]);
  }, 30_000);

  it('fails the run as the engine not being ready (not the code) when the relay image is missing', async () => {
    const broken = createDockerRuntime({ dockerHost, workDir, relayImage: 'localhost/no-relay-here:1' });
    try {
      const err = await broken.run(request(image, { operation: 'network' })).catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(StfError);
      expect((err as Error).message).toContain('the relay image localhost/no-relay-here:1 is not present');
      expect(await containersLeft()).toEqual([]);
    } finally {
      await broken.close();
    }
  });

  it('removeExpired removes a relay a dead process left, after the STF container sharing its namespace', async () => {
    const client = new EngineClient(parseDockerHost(dockerHost));
    const past = String(Date.now() - 120_000);
    const labels = (role: string) => ({ 'wds.stf': 'true', 'wds.role': role, 'wds.workspace_id': WS, 'wds.deadline': past });
    const relayId = (
      (await client.call('POST', '/containers/create', {
        Image: images.busybox,
        Cmd: ['sleep', '600'],
        Labels: labels('relay'),
        HostConfig: { NetworkMode: 'none' },
      })) as { Id: string }
    ).Id;
    await client.call('POST', `/containers/${relayId}/start`);
    const stfId = (
      (await client.call('POST', '/containers/create', {
        Image: images.busybox,
        Cmd: ['sleep', '600'],
        Labels: labels('stf'),
        HostConfig: { NetworkMode: `container:${relayId}` },
      })) as { Id: string }
    ).Id;
    try {
      // (Another file's removeExpired may take some of them first: what counts is that both are gone.)
      expect(await rt.removeExpired(60_000)).toBeGreaterThanOrEqual(0);
      expect(await containersLeft()).toEqual([]);
    } finally {
      for (const id of [stfId, relayId]) await client.request('DELETE', `/containers/${id}?force=1`).catch(() => undefined);
    }
  });
});
