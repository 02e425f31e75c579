import { ServiceError } from '@wds/errors';
import { StfError, StfRuntimeBusy, StfRuntimeUnavailable } from '@wds/stf-runtime';
import { describe, expect, it } from 'vitest';
import { runAsUser, runLimits, runStf } from '../src/index.js';
import { config, depsWith, fakeRuntime } from './fakes.js';

const workspace = { id: 'ws-1', ddl_policy_group_id: 'ddl-1', created_by: null };
const version = { stf_id: 'stf-1', runtime: 'javascript' as const, code: Buffer.from('export default () => 1') };
const ok = { output: { ok: true }, logs: [], duration_ms: 3 };

describe('runStf', () => {
  it('runs the version as text for javascript, with its workspace, STF, secrets and limits', async () => {
    const js = fakeRuntime(async () => ok);
    const deps = depsWith({ javascript: js });
    const answer = await runStf(deps, {
      workspace,
      version,
      input: { a: 1 },
      sources: { s: 2 },
      caller: 'user-1',
      subject: { kind: 'stf', stfId: 'stf-1', userId: 'user-1' },
      secrets: { KEY: 'v' },
    });
    expect(answer).toEqual({ success: true, output: { ok: true }, logs: [], duration_ms: 3 });
    const req = js.requests[0];
    expect(req).toMatchObject({ code: 'export default () => 1', input: { a: 1 }, sources: { s: 2 }, caller: 'user-1', workspaceId: 'ws-1', stfId: 'stf-1', secrets: { KEY: 'v' } });
    expect(req?.limits.timeoutMs).toBe(config.STF_TIMEOUT_MS);
    expect(typeof req?.sql).toBe('function');
    // Code that never queries opens no session.
    expect(deps.sql.sessions).toEqual([]);
  });

  it("opens one session at the first sql() call, under the run's subject, and commits it when the run succeeds", async () => {
    const js = fakeRuntime(async (req) => {
      await req.sql?.('SELECT 1');
      await req.sql?.('SELECT 2');
      return ok;
    });
    const deps = depsWith({ javascript: js });
    await runAsUser(deps, { workspace, userId: 'user-1', version, input: null, sources: {} });
    expect(deps.sql.sessions).toEqual([
      {
        caller: { workspaceId: 'ws-1', ddlGroupId: 'ddl-1', isAdmin: false, subject: { kind: 'user', userId: 'user-1' } },
        queries: ['SELECT 1', 'SELECT 2'],
        ended: true,
      },
    ]);
    expect(js.requests[0]?.caller).toBe('user-1');
  });

  it("answers a failure of the user's code as success: false and rolls its statements back", async () => {
    const js = fakeRuntime(async (req) => {
      await req.sql?.('DELETE FROM t');
      throw new StfError('runtime', 'boom', 'at line 1', [{ level: 'log', message: 'before' }]);
    });
    const deps = depsWith({ javascript: js });
    const answer = await runAsUser(deps, { workspace, userId: 'user-1', version, input: null, sources: {} });
    expect(answer).toEqual({ success: false, error: { kind: 'runtime', message: 'boom', details: 'at line 1' }, logs: [{ level: 'log', message: 'before' }] });
    expect(deps.sql.sessions[0]?.ended).toBe(false);
  });

  it('gives a describe run no sql() at all', async () => {
    const js = fakeRuntime(async () => ok);
    await runAsUser(depsWith({ javascript: js }), { workspace, userId: 'u', version, input: null, sources: {}, sql: false });
    expect(js.requests[0]?.sql).toBeUndefined();
  });

  it('is 503 for a runtime this server does not have, naming DOCKER_HOST for docker', async () => {
    const err = await runAsUser(depsWith({}), { workspace, userId: 'u', version: { ...version, runtime: 'docker' }, input: null, sources: {} }).catch((e) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: 'no container engine is configured (DOCKER_HOST)' });
  });

  it('is 429 when the workspace already has its runs waiting, and 503 when the engine is away', async () => {
    const busy = depsWith({ javascript: fakeRuntime(async () => Promise.reject(new StfRuntimeBusy('too many', 'at most 1'))) });
    await expect(runAsUser(busy, { workspace, userId: 'u', version, input: null, sources: {} })).rejects.toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      message: 'too many',
      details: 'at most 1',
    });
    const away = depsWith({ javascript: fakeRuntime(async () => Promise.reject(new StfRuntimeUnavailable('no engine'))) });
    await expect(runAsUser(away, { workspace, userId: 'u', version, input: null, sources: {} })).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The javascript runtime cannot run STFs now',
      details: 'no engine',
    });
  });

  it('passes wasm code as bytes', async () => {
    const wasm = fakeRuntime(async () => ok);
    const code = Buffer.from([0, 97, 115, 109]);
    await runAsUser(depsWith({ wasm }), { workspace, userId: 'u', version: { ...version, runtime: 'wasm', code }, input: null, sources: {} });
    expect(wasm.requests[0]?.code).toBe(code);
  });
});

describe('runLimits', () => {
  it('gives docker its own time and memory, the others STF_TIMEOUT_MS', () => {
    expect(runLimits('docker', config)).toMatchObject({ timeoutMs: 30_000, memoryBytes: 128 * 1024 * 1024 });
    expect(runLimits('wasm', config).timeoutMs).toBe(2_000);
  });
});
