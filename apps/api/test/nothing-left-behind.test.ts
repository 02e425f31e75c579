/**
 * Nothing left behind (issue 14): workflow runs are recorded while they run and settled when their process dies;
 * temp uploads and orphan blobs are swept; the upload request timeout follows MAX_FILE_BYTES.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from '@wds/db';
import { Maintenance } from '@wds/jobs';
import { newRunId, startRun } from '@wds/workflows';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { applyUploadTimeouts, uploadRequestTimeoutMs } from '../src/http-timeouts.js';
import { maintenanceTasks } from '../src/maintenance-work.js';
import { Harness, until } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
/** An HTTP endpoint that answers only once released: a workflow step that is still executing. */
let held: { url: string; release: () => void; close: () => Promise<void> };

const call = (method: string, path: string, body?: unknown) => h.call(method, path, { token: owner.token, workspace: ws.id, body });
/** One round of every sweep this process runs (what the schedule does every interval). */
const sweep = () => new Maintenance({ tasks: maintenanceTasks(h.services) }).runOnce();

beforeAll(async () => {
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1', RUN_HEARTBEAT_INTERVAL_MS: '100' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Leftovers');
  const waiting: http.ServerResponse[] = [];
  let released = false;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (released) res.end('{}');
      else waiting.push(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  held = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release: () => {
      released = true;
      for (const res of waiting.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
});
afterAll(async () => {
  held?.release();
  await held?.close();
  await h?.close();
});

describe('workflow runs', () => {
  let wf: string;
  beforeAll(async () => {
    const stf = await call('POST', '/api/v1/stfs', { name: 'inc', version: '1', runtime: 'javascript', code: b64('return { n: $input.n + 1 };') });
    expect(stf.status).toBe(201);
    const hook = await call('POST', '/api/v1/effects', {
      name: 'slow hook',
      version: '1',
      method: 'POST',
      url: `${held.url}/hook`,
      timeout_secs: 60,
      header_mappings: [],
      body_mappings: [],
    });
    expect(hook.status).toBe(201);
    const w = await call('POST', '/api/v1/workflows', {
      name: 'slow',
      stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }],
      effect_steps: [{ effect_version_id: hook.body.version.id, input_mappings: [] }],
    });
    expect(w.status).toBe(201);
    wf = w.body.id;
  });

  it('a run is recorded as running while a step still executes, with its heartbeat and the steps done so far; a sweep leaves it alone', async () => {
    const executing = call('POST', `/api/v1/workflows/${wf}/execute`, { n: 1 });
    const runId = await until(async () => {
      const runs = await call('GET', `/api/v1/workflows/${wf}/runs`);
      return runs.body.find((r: { status: string }) => r.status === 'running')?.id as string | undefined;
    });
    const running = await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`);
    expect(running.body).toMatchObject({ status: 'running', input: { n: 1 }, output: null, error: null, finished_at: null });
    // The STF step finished, the effect is waiting on the endpoint: the heartbeat records the progress.
    await until(async () => {
      const r = await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`);
      return r.body.steps.length === 1 ? r.body : undefined;
    }).then((r) => expect(r.steps).toEqual([expect.objectContaining({ kind: 'stf', index: 0, status: 'succeeded' })]));
    const first = await heartbeatOf(runId);
    await until(async () => ((await heartbeatOf(runId)) > first ? true : undefined));

    // Alive: a sweep does not touch it.
    await sweep();
    expect((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body.status).toBe('running');

    held.release();
    const done = await executing;
    expect(done.status).toBe(200);
    expect(done.headers.get('x-workflow-run-id')).toBe(runId);
    expect((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body).toMatchObject({ status: 'succeeded', output: { n: 2 } });
  });

  it('a run whose process died (another owner, no heartbeat for 10 min) becomes failed / interrupted at the next sweep', async () => {
    const runId = newRunId();
    await startRun(h.services.db, runId, { id: wf, workspace_id: ws.id }, { n: 5 }, owner.id, randomUUID());
    await sql`UPDATE platform.workflow_runs SET steps = ${JSON.stringify([{ kind: 'stf', index: 0, status: 'succeeded' }])}::jsonb,
                started_at = now() - interval '11 minutes', heartbeat_at = now() - interval '10 minutes' WHERE id = ${runId}`.execute(h.services.db);
    expect((await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body.status).toBe('running');

    await sweep();
    const swept = await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`);
    expect(swept.body).toMatchObject({
      status: 'failed',
      error: { step: 'run', kind: 'interrupted', message: expect.stringMatching(/^interrupted: the process running it stopped/) },
      steps: [{ kind: 'stf', index: 0, status: 'succeeded' }],
    });
    expect(swept.body.finished_at).not.toBeNull();
  });
});

async function heartbeatOf(runId: string): Promise<number> {
  const r = await sql<{ at: Date }>`SELECT heartbeat_at AS at FROM platform.workflow_runs WHERE id = ${runId}`.execute(h.services.db);
  return r.rows[0]!.at.getTime();
}

describe('blob sweeps (filesystem store)', () => {
  const backdate = (path: string, ms: number) => {
    const t = new Date(Date.now() - ms);
    return utimes(path, t, t);
  };
  const blobPath = (key: string) => join(h.blobDir, key.slice(0, 2), key);

  it('removes temp uploads idle past TEMP_UPLOAD_MAX_AGE_MS and orphan blobs past the grace period; keeps the rest', async () => {
    const up = await call('POST', `/api/v1/workspaces/${ws.id}/files`, { filename: 'kept.txt', content_type: 'text/plain', content: b64('kept') });
    expect(up.status).toBe(201);
    const { blob_key: uploaded } = await h.services.db.selectFrom('platform.files').select('blob_key').where('id', '=', up.body.id).executeTakeFirstOrThrow();
    const orphan = (await h.services.blobs.put(Readable.from([Buffer.from('crash between put and record')]))).key;
    const freshOrphan = (await h.services.blobs.put(Readable.from([Buffer.from('an upload about to be recorded')]))).key;
    await backdate(blobPath(uploaded), 2 * 3600_000);
    await backdate(blobPath(orphan), 2 * 3600_000);

    const tmp = join(h.blobDir, 'tmp');
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, `${'a'.repeat(32)}.tmp`), 'a crashed upload, 95 MB in real life');
    await writeFile(join(tmp, `${'b'.repeat(32)}.tmp`), 'an upload still streaming');
    await backdate(join(tmp, `${'a'.repeat(32)}.tmp`), 20 * 60_000);

    await sweep();
    expect(await readdir(tmp)).toEqual([`${'b'.repeat(32)}.tmp`]);
    expect(await h.services.blobs.has(orphan)).toBe(false);
    expect(await h.services.blobs.has(freshOrphan)).toBe(true);
    expect(await h.services.blobs.has(uploaded)).toBe(true);
    const download = await h.call('GET', `/api/v1/workspaces/${ws.id}/files/${up.body.id}/download`, { token: owner.token, workspace: ws.id });
    expect(download.status).toBe(200);
    expect(download.body).toBe('kept');
  });
});

describe('upload request timeout', () => {
  const config = (env: Record<string, string> = {}) => loadConfig(env);

  it('is max(300 s, the base64 body of MAX_FILE_BYTES at UPLOAD_MIN_BYTES_PER_SECOND)', () => {
    // 1 GiB → 1.33 GiB of base64 at 1 MiB/s.
    expect(uploadRequestTimeoutMs(config())).toBe(1366_000);
    expect(uploadRequestTimeoutMs(config({ UPLOAD_MIN_BYTES_PER_SECOND: String(4 * 1024 * 1024) }))).toBe(342_000);
    expect(uploadRequestTimeoutMs(config({ MAX_FILE_BYTES: String(10 * 1024 * 1024) }))).toBe(300_000);
    expect(uploadRequestTimeoutMs(config({ MAX_FILE_BYTES: String(4 * 1024 ** 3) }))).toBe(5462_000);
  });

  it("sets the Node server's requestTimeout (Node's own default would be 300 s whatever the limit)", () => {
    const server = http.createServer();
    expect(server.requestTimeout).toBe(300_000);
    applyUploadTimeouts(server, config());
    expect(server.requestTimeout).toBe(1366_000);
    applyUploadTimeouts(server, config({ MAX_FILE_BYTES: String(4 * 1024 ** 3) }));
    expect(server.requestTimeout).toBe(5462_000);
  });
});
