import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type DockerRuntime, parseDockerHost } from '@wds/stf-runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Harness, eventually } from './support.js';

/**
 * Issue 33: a docker STF whose MCP call is cancelled (the SDK client's signal: notifications/cancelled) has its
 * container killed and its slot freed. One container slot and a minute per run: a second run completing proves
 * the first no longer holds it. Against podman's Docker-compatible service (scripts/container-engine.sh).
 */
const images = inject('dockerImages');
const b64 = (s: string) => Buffer.from(s).toString('base64');
const docker = (program: string) => b64(JSON.stringify({ image: images.node, command: ['/usr/bin/node', '-e', program] }));

/** The engine's running STF containers (not the relays) of a workspace. */
function runningStfContainers(workspaceId: string): Promise<unknown[]> {
  const address = parseDockerHost(inject('dockerHost'));
  const filters = encodeURIComponent(JSON.stringify({ label: ['wds.role=stf', `wds.workspace_id=${workspaceId}`], status: ['running'] }));
  return new Promise((resolve, reject) => {
    const req = request(
      { ...('socketPath' in address ? { socketPath: address.socketPath } : { host: address.host, port: address.port }), path: `/containers/json?filters=${filters}` },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(JSON.parse(text) as unknown[]));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let h: Harness;
let ws: { id: string };
let client: Client;

beforeAll(async () => {
  h = await Harness.create({ DOCKER_HOST: inject('dockerHost'), STF_DOCKER_TIMEOUT_MS: '60000', STF_DOCKER_CONCURRENCY: '1' });
  const owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Docker cancel');
  const transport = new StreamableHTTPClientTransport(new URL(`${await h.listen()}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id } },
  });
  client = new Client({ name: 'wds-cancel-test', version: '1.0.0' });
  await client.connect(transport);
});
afterAll(async () => {
  await client?.close();
  await h?.close();
});

type ToolResult = { isError?: boolean; structuredContent?: any };
const call = async (name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
  (await client.callTool({ name, arguments: args }, undefined, signal ? { signal } : {})) as ToolResult;

describe('cancelling instant_run_stf of a docker STF', () => {
  it('kills its container and frees the slot: the next run starts at once', async () => {
    const runtime = h.services.runtimes.docker as DockerRuntime;
    const sleeper = (await call('create_stf', { name: 'sleeper', version: '1', runtime: 'docker', code: docker('setInterval(() => {}, 1000)') })).structuredContent;
    const quick = (
      await call('create_stf', { name: 'quick', version: '1', runtime: 'docker', code: docker('console.log(JSON.stringify({ output: 42 }))') })
    ).structuredContent;
    const abort = new AbortController();
    const first = call('instant_run_stf', { stf_id: sleeper.id }, abort.signal);
    first.catch(() => undefined);
    // Its container is up (it would run for a minute).
    await eventually(async () => (await runningStfContainers(ws.id)).length === 1, 60_000);
    abort.abort();
    await expect(first).rejects.toThrow();
    await eventually(async () => (await runningStfContainers(ws.id)).length === 0 && runtime.stats().activeRuns === 0, 30_000);
    expect(runtime.stats().queue.workspaces[ws.id]).toBeUndefined();
    const next = await call('instant_run_stf', { stf_id: quick.id });
    expect(next.structuredContent).toMatchObject({ success: true, output: 42 });
  });
});
