import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Progress, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { WasmRuntime } from '@wds/stf-runtime';
import wabtInit from 'wabt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually, stfQueue, until, waitForStfQueue } from './support.js';

/**
 * Issue 33, cancellation and progress: a tool call cancelled by its client (notifications/cancelled) or cut by its
 * timeout stops the work itself — the JavaScript guest interrupted, the wasm plugin's worker terminated, a workflow
 * run's remaining steps never started — and frees the runtime's slot, so the workspace's next run starts at once
 * (each harness has one JavaScript worker and one wasm slot, and STFs may run a minute: a second run completing
 * proves the first no longer holds the slot). Long tools report progress to a caller that asks for it.
 */

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const SPIN = 'while (true) {}';

const wabt = await wabtInit();
const wasm = (source: string) => {
  const m = wabt.parseWat('x.wat', source);
  try {
    return Buffer.from(m.toBinary({}).buffer);
  } finally {
    m.destroy();
  }
};
const wasmFixture = (name: string) => wasm(readFileSync(new URL(`../../../packages/stf-runtime/test/fixtures/wasm/${name}.wat`, import.meta.url), 'utf8'));

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };

async function connect(base: string, token: string, workspaceId: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    // Every tool (create_workflow is not in the default set).
    requestInit: { headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspaceId, 'x-mcp-features': 'all' } },
  });
  const client = new Client({ name: 'wds-cancel-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    call: async (name: string, args: Record<string, unknown> = {}, options: { signal?: AbortSignal; onprogress?: (p: Progress) => void } = {}) =>
      (await client.callTool({ name, arguments: args }, undefined, options)) as ToolResult,
    close: () => client.close(),
  };
}
type Connection = Awaited<ReturnType<typeof connect>>;

async function createStf(c: Connection, code: string | Buffer, runtime: 'javascript' | 'wasm' = 'javascript') {
  const r = await c.call('create_stf', { name: `s${Math.random()}`, version: '1', runtime, code: b64(code) });
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  return { id: r.structuredContent.id as string, versionId: r.structuredContent.version.id as string };
}

async function createWorkflow(c: Connection, versionIds: string[]) {
  const r = await c.call('create_workflow', {
    name: `w${Math.random()}`,
    stf_steps: versionIds.map((id) => ({ stf_version_id: id, input_mappings: [] })),
  });
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  return r.structuredContent.id as string;
}

/** The workflow's only run, once it has ended. */
async function endedRun(h: Harness, token: string, workspaceId: string, workflowId: string) {
  const runId = await until(async () => {
    const list = await h.call('GET', `/api/v1/workflows/${workflowId}/runs`, { token, workspace: workspaceId });
    const run = (list.body as { id: string; status: string }[])[0];
    return run && run.status !== 'running' && run.status !== 'queued' ? run.id : undefined;
  });
  return (await h.call('GET', `/api/v1/workflows/${workflowId}/runs/${runId}`, { token, workspace: workspaceId })).body;
}

/** The workspace has no STF run in the JavaScript runtime: its slot is free. */
const jsSlotFree = (h: Harness, workspaceId: string) => waitForStfQueue(h, (q) => (q.workspaces[workspaceId]?.running ?? 0) === 0);

describe('cancelling a tool call stops its work and frees its slot', () => {
  let h: Harness;
  let base: string;
  let owner: Awaited<ReturnType<Harness['user']>>;
  let ws: { id: string };
  let c: Connection;
  let quick: { id: string; versionId: string };
  let spin: { id: string; versionId: string };

  beforeAll(async () => {
    // A minute for an STF, one JavaScript worker, one wasm slot: a stuck first run would hold its slot past the test.
    h = await Harness.create({ STF_TIMEOUT_MS: '60000', STF_JS_WORKERS: '1', STF_WASM_CONCURRENCY: '1' });
    base = await h.listen();
    owner = await h.user('owner');
    ws = await h.workspace(owner.token, 'Cancel');
    c = await connect(base, owner.token, ws.id);
    quick = await createStf(c, 'return { n: ($input?.n ?? 0) + 1 };');
    spin = await createStf(c, SPIN);
  });
  afterAll(async () => {
    await c?.close();
    await h?.close();
  });

  it('instant_run_stf of a busy-looping JavaScript STF: cancelled through the SDK, the guest is interrupted and the next run starts at once', async () => {
    const abort = new AbortController();
    const first = c.call('instant_run_stf', { stf_id: spin.id }, { signal: abort.signal });
    first.catch(() => undefined);
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    abort.abort('the user stopped it');
    await expect(first).rejects.toThrow();
    // The slot is given back (the run would otherwise hold it for a minute), and the next run has it.
    await jsSlotFree(h, ws.id);
    const next = await c.call('instant_run_stf', { stf_id: quick.id, input: { n: 41 } });
    expect(next.structuredContent).toMatchObject({ success: true, output: { n: 42 } });
    expect(stfQueue(h).running).toBe(0);
  });

  it('an HTTP client that disconnects from POST /stfs/instant-run stops the run too', async () => {
    const abort = new AbortController();
    const gone = fetch(`${base}/api/v1/stfs/instant-run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id, 'content-type': 'application/json' },
      body: JSON.stringify({ stf_id: spin.id }),
      signal: abort.signal,
    });
    gone.catch(() => undefined);
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    abort.abort();
    await expect(gone).rejects.toThrow();
    await jsSlotFree(h, ws.id);
    const next = await h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_id: quick.id, input: { n: 1 } } });
    expect(next.body).toMatchObject({ success: true, output: { n: 2 } });
  });

  it('an MCP client whose POST carrying the call goes away (no notifications/cancelled) stops the run too', async () => {
    const abort = new AbortController();
    const gone = fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.token}`,
        'x-workspace-id': ws.id,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': (c.client.transport as StreamableHTTPClientTransport).sessionId as string,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 900, method: 'tools/call', params: { name: 'instant_run_stf', arguments: { stf_id: spin.id } } }),
      signal: abort.signal,
    });
    gone.catch(() => undefined);
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    abort.abort();
    await expect(gone).rejects.toThrow();
    await jsSlotFree(h, ws.id);
    expect((await c.call('instant_run_stf', { stf_id: quick.id, input: { n: 3 } })).structuredContent).toMatchObject({ success: true, output: { n: 4 } });
  });

  it('a busy-looping wasm STF: cancelled, its plugin worker is terminated and the slot freed', async () => {
    const runtime = h.services.runtimes.wasm as WasmRuntime;
    const loop = await createStf(c, wasm('(module (memory (export "memory") 1 1) (func (export "run") (result i32) (loop $l (br $l)) (i32.const 0)))'), 'wasm');
    const echo = await createStf(c, wasmFixture('echo'), 'wasm');
    const abort = new AbortController();
    const first = c.call('instant_run_stf', { stf_id: loop.id }, { signal: abort.signal });
    first.catch(() => undefined);
    await eventually(async () => runtime.stats().queue.workspaces[ws.id]?.running === 1, 20_000);
    abort.abort();
    await expect(first).rejects.toThrow();
    await eventually(async () => runtime.stats().activeRuns === 0 && (runtime.stats().queue.workspaces[ws.id]?.running ?? 0) === 0, 20_000);
    const next = await c.call('instant_run_stf', { stf_id: echo.id, input: { hello: 'wasm' } });
    expect(next.structuredContent).toMatchObject({ success: true, output: { echo: { input: { hello: 'wasm' } } } });
  });

  it('execute_workflow cancelled mid-run: the STF under way is stopped, the run ends cancelled, later steps never start', async () => {
    const workflowId = await createWorkflow(c, [quick.versionId, spin.versionId, quick.versionId]);
    const abort = new AbortController();
    const seen: Progress[] = [];
    const first = c.call('execute_workflow', { workflowId, input: { n: 1 } }, { signal: abort.signal, onprogress: (p) => seen.push(p) });
    first.catch(() => undefined);
    // The first step ended (its progress came), and the second, the loop, holds the worker.
    await eventually(async () => seen.length >= 1, 20_000);
    await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
    abort.abort();
    await expect(first).rejects.toThrow();
    const run = await endedRun(h, owner.token, ws.id, workflowId);
    expect(run.status).toBe('cancelled');
    expect(run.steps.map((s: { status: string }) => s.status)).toEqual(['succeeded', 'failed', 'skipped']);
    expect(run.steps[1].error).toMatchObject({ kind: 'cancelled' });
    expect(run.steps[2].duration_ms).toBeUndefined();
    await jsSlotFree(h, ws.id);
    const next = await c.call('instant_run_stf', { stf_id: quick.id, input: { n: 2 } });
    expect(next.structuredContent).toMatchObject({ success: true, output: { n: 3 } });
  });

  it('through the stdio bridge: progress reaches the agent, and a cancellation frees the slot', async () => {
    const key = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'desktop agent' } });
    const agent = new Client({ name: 'desktop', version: '1.0.0' });
    await agent.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['dist/mcp-stdio.js', '--url', base, '--workspace', ws.id, '--features', 'all'],
        env: { PATH: process.env.PATH ?? '', WDS_MCP_KEY: key.body.key },
        stderr: 'pipe',
      }),
    );
    try {
      // What the bridge writes to the agent, recorded as it arrives. (The SDK's per-call onprogress would drop a
      // notification read in the same chunk as the answer: it forgets the call's token on reading the answer, and
      // handles notifications a microtask later. A loaded machine delivers both in one chunk.)
      const seen: Progress[] = [];
      agent.setNotificationHandler(ProgressNotificationSchema, (n) => {
        if (n.params.progressToken === 'bridge-test') seen.push(n.params);
      });
      const r = await agent.callTool({ name: 'instant_run_stf', arguments: { stf_id: quick.id, input: { n: 1 } }, _meta: { progressToken: 'bridge-test' } });
      expect(r.structuredContent).toMatchObject({ success: true, output: { n: 2 } });
      // The notifications read with the answer are handled in microtasks queued before it resolved.
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(seen.map((p) => p.progress)).toEqual([0, 1]);

      const abort = new AbortController();
      const first = agent.callTool({ name: 'instant_run_stf', arguments: { stf_id: spin.id } }, undefined, { signal: abort.signal });
      first.catch(() => undefined);
      await waitForStfQueue(h, (q) => q.workspaces[ws.id]?.running === 1);
      abort.abort();
      await expect(first).rejects.toThrow();
      await jsSlotFree(h, ws.id);
      const next = await agent.callTool({ name: 'instant_run_stf', arguments: { stf_id: quick.id, input: { n: 5 } } });
      expect(next.structuredContent).toMatchObject({ success: true, output: { n: 6 } });
    } finally {
      await agent.close();
    }
  });

  it('progress: instant_run_stf reports its start and its end, execute_workflow each step ended, embeddings each batch', async () => {
    const ran: Progress[] = [];
    const r = await c.call('instant_run_stf', { stf_id: quick.id, input: { n: 9 } }, { onprogress: (p) => ran.push(p) });
    expect(r.structuredContent).toMatchObject({ success: true, output: { n: 10 } });
    expect(ran.map((p) => [p.progress, p.total])).toEqual([
      [0, 1],
      [1, 1],
    ]);

    const workflowId = await createWorkflow(c, [quick.versionId, quick.versionId]);
    const steps: Progress[] = [];
    const w = await c.call('execute_workflow', { workflowId, input: { n: 0 } }, { onprogress: (p) => steps.push(p) });
    expect(w.isError, JSON.stringify(w.structuredContent)).toBeFalsy();
    expect(w.structuredContent).toMatchObject({ n: 2 });
    expect(steps.map((p) => [p.progress, p.total])).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(steps[1]?.message).toBe('2 of 2 steps ended');

    // generate_column_embeddings: a report per batch of rows written (64 a batch), the count so far.
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
    await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
    const values = Array.from({ length: 70 }, (_, i) => `('note ${i}')`).join(', ');
    await h.sqlOk(owner.token, ws.id, `INSERT INTO notes (body) VALUES ${values}`);
    const batches: Progress[] = [];
    const g = await c.call('generate_column_embeddings', { table_name: 'notes', column_name: 'body' }, { onprogress: (p) => batches.push(p) });
    expect(g.structuredContent).toMatchObject({ generated_count: 70 });
    expect(batches.map((p) => [p.progress, p.message])).toEqual([
      [64, '64 rows embedded'],
      [70, '70 rows embedded'],
    ]);

    // Without a progress token the answer is plain JSON, as before.
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.token}`,
        'x-workspace-id': ws.id,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': (c.client.transport as StreamableHTTPClientTransport).sessionId as string,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 901, method: 'tools/call', params: { name: 'instant_run_stf', arguments: { stf_id: quick.id } } }),
    });
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(((await res.json()) as { result: ToolResult }).result.structuredContent).toMatchObject({ success: true });
  });
});

describe("the call's own timeout (MCP_MAX_TIMEOUT_MS) stops the work the same way", () => {
  let h: Harness;
  let owner: Awaited<ReturnType<Harness['user']>>;
  let ws: { id: string };
  let c: Connection;

  beforeAll(async () => {
    h = await Harness.create({ STF_TIMEOUT_MS: '60000', STF_JS_WORKERS: '1', MCP_MAX_TIMEOUT_MS: '1500' });
    owner = await h.user('owner');
    ws = await h.workspace(owner.token, 'Timeout');
    c = await connect(await h.listen(), owner.token, ws.id);
  });
  afterAll(async () => {
    await c?.close();
    await h?.close();
  });

  it('instant_run_stf and execute_workflow past the limit answer TIMEOUT, their work stopped and the slot free', async () => {
    const spin = await createStf(c, SPIN);
    const quick = await createStf(c, 'return 7;');
    const cut = await c.call('instant_run_stf', { stf_id: spin.id });
    expect(cut.isError).toBe(true);
    expect(cut.structuredContent).toMatchObject({ code: 'TIMEOUT', details: expect.stringContaining('it was stopped') });
    await jsSlotFree(h, ws.id);
    expect((await c.call('instant_run_stf', { stf_id: quick.id })).structuredContent).toMatchObject({ success: true, output: 7 });

    const workflowId = await createWorkflow(c, [spin.versionId, quick.versionId]);
    const timedOut = await c.call('execute_workflow', { workflowId, input: null });
    expect(timedOut.structuredContent).toMatchObject({ code: 'TIMEOUT' });
    const run = await endedRun(h, owner.token, ws.id, workflowId);
    expect(run.status).toBe('cancelled');
    expect(run.steps.map((s: { status: string }) => s.status)).toEqual(['failed', 'skipped']);
    await jsSlotFree(h, ws.id);
    expect((await c.call('instant_run_stf', { stf_id: quick.id })).structuredContent).toMatchObject({ success: true, output: 7 });
  });
});
