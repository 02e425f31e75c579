/**
 * The run cache (a @wds/cache TopicCache by workspace, `services.runCache`): instant-run and workflow execution read the version, its secrets, the
 * workflow and its steps' versions from it. A change is seen by the very next request of the process that made it,
 * by another process once the change's message arrives (a second database connection committing with the NOTIFY
 * every change publishes, and a second API process on the same database), and nothing is served from it while the
 * listener is down.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDb, type Db, newId, sql } from '@wds/db';
import { upsertSecret } from '@wds/stfs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
/** Another API process on the same database. */
let other: Harness;
/** A third, whose listener is stopped. */
let deaf: Harness | undefined;
/** Connections of someone else's: another process committing changes directly. */
let raw: pg.Client;
let elsewhere: { db: Db; pool: pg.Pool };
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let hook: { url: string; bodies: string[]; close(): Promise<void> };

const as = (x: Harness) => (method: string, path: string, body?: unknown) => x.call(method, path, { token: owner.token, workspace: ws.id, body });
const call = (method: string, path: string, body?: unknown) => as(h)(method, path, body);

async function stf(code: string): Promise<{ id: string; versionId: string }> {
  const r = await call('POST', '/api/v1/stfs', { name: 's', version: '1', runtime: 'javascript', code: b64(code) });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { id: r.body.id, versionId: r.body.version.id };
}
async function addVersion(x: Harness, id: string, version: string, code: string): Promise<string> {
  const r = await as(x)('POST', `/api/v1/stfs/${id}/versions`, { version, runtime: 'javascript', code: b64(code) });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}
const instantRun = async (x: Harness, body: unknown) => {
  const r = await as(x)('POST', '/api/v1/stfs/instant-run', body);
  return r.status === 200 ? r.body.output : r.status;
};
const execute = async (x: Harness, id: string, input: unknown = {}) => {
  const r = await as(x)('POST', `/api/v1/workflows/${id}/execute`, input);
  return r.status === 200 ? r.body : r.status;
};

/** What another process does: commit a change and, in the same transaction, publish the workspace's topic. */
async function commitElsewhere(statements: { text: string; values?: unknown[] }[]): Promise<void> {
  await raw.query('BEGIN');
  for (const s of statements) await raw.query(s.text, s.values);
  await raw.query("SELECT pg_notify('wds_invalidate', $1)", [`ws:${ws.id}`]);
  await raw.query('COMMIT');
}
/** A version the owner wrote (a run runs a newer version than its workflow accepted only when its own user wrote it). */
const insertVersion = (stfId: string, version: string, code: string) => ({
  text: `INSERT INTO platform.stf_versions (id, stf_id, workspace_id, version, runtime, code, created_by) VALUES ($1, $2, $3, $4, 'javascript', $5, $6)`,
  values: [newId(), stfId, ws.id, version, Buffer.from(code), owner.id],
});

/**
 * Reads until one read saw no invalidation while it ran, so its result is in the cache (messages of this
 * process's own earlier changes arrive a moment after them and drop entries): the next read is served from it.
 */
async function cachedRead<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const generation = h.services.bus.generation;
    const value = await read();
    if (h.services.bus.generation === generation) return value;
  }
  throw new Error('invalidations never stopped');
}

async function eventually<T>(read: () => Promise<T>, expected: T, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  let last: T = await read();
  while (JSON.stringify(last) !== JSON.stringify(expected) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    last = await read();
  }
  expect(last).toEqual(expected);
}

beforeAll(async () => {
  h = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1' });
  other = await Harness.create({ OUTBOUND_ALLOWLIST: '127.0.0.1' }, h.url);
  raw = new pg.Client({ connectionString: h.url });
  await raw.connect();
  elsewhere = createDb(h.url, { max: 1 });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Cached');
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hook = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, close: () => new Promise((r) => server.close(() => r())) };
});
afterAll(async () => {
  await raw?.end();
  await elsewhere?.db.destroy();
  await hook?.close();
  await deaf?.close();
  await other?.close();
  await h?.close();
});

describe('instant-run and the run cache', () => {
  it('in the process that made a change, the very next run sees it', async () => {
    const s = await stf('return ["v1", $env.K ?? null]');
    const newest = () => instantRun(h, { stf_id: s.id });
    const byId = (id: string) => () => instantRun(h, { stf_version_id: id });
    // Before each change the value is in the cache (cachedRead); right after it, the next run must not get it.
    expect(await cachedRead(newest)).toEqual(['v1', null]);
    const v2 = await addVersion(h, s.id, '2', 'return ["v2", $env.K ?? null]');
    expect(await newest()).toEqual(['v2', null]);

    expect(await cachedRead(newest)).toEqual(['v2', null]);
    expect(await cachedRead(byId(s.versionId))).toEqual(['v1', null]);
    expect((await call('POST', `/api/v1/stfs/${s.id}/secrets`, { env_key: 'K', value: 'first' })).status).toBeLessThan(300);
    expect(await newest()).toEqual(['v2', 'first']);
    expect(await byId(s.versionId)()).toEqual(['v1', 'first']);

    expect(await cachedRead(newest)).toEqual(['v2', 'first']);
    await call('POST', `/api/v1/stfs/${s.id}/secrets`, { env_key: 'K', value: 'second' });
    expect(await newest()).toEqual(['v2', 'second']);

    expect(await cachedRead(newest)).toEqual(['v2', 'second']);
    await call('DELETE', `/api/v1/stfs/${s.id}/secrets/K`);
    expect(await newest()).toEqual(['v2', null]);

    expect(await cachedRead(newest)).toEqual(['v2', null]);
    expect(await cachedRead(byId(v2))).toEqual(['v2', null]);
    expect((await call('DELETE', `/api/v1/stfs/${s.id}`)).status).toBeLessThan(300);
    expect(await newest()).toBe(404);
    expect(await byId(v2)()).toBe(404);
  });

  it('another process: a change committed on another connection with its NOTIFY, and one made through another API process', async () => {
    const s = await stf('return ["v1", $env.K ?? null]');
    const newest = () => instantRun(h, { stf_id: s.id });
    expect(await newest()).toEqual(['v1', null]);

    await commitElsewhere([insertVersion(s.id, '2', 'return ["v2", $env.K ?? null]')]);
    await eventually(newest, ['v2', null]);

    // (Each test harness has its own SECRETS_KEY; the processes of one deployment share theirs.)
    await elsewhere.db.transaction().execute(async (trx) => {
      await upsertSecret(trx, h.services.secrets!, s.id, 'K', 'from-other');
      await sql`SELECT pg_notify('wds_invalidate', ${`ws:${ws.id}`})`.execute(trx);
    });
    await eventually(newest, ['v2', 'from-other']);
    await addVersion(other, s.id, '3', 'return ["v3", $env.K ?? null]');
    await eventually(newest, ['v3', 'from-other']);
    await as(other)('DELETE', `/api/v1/stfs/${s.id}`);
    await eventually(newest, 404);
  });

  it('the cache is what serves runs: a write that publishes nothing is not seen until its topic is published', async () => {
    // This is the contract every writer of STFs, versions, secrets, effects and workflows keeps (the route pipeline
    // publishes `ws:<id>` for every change of a workspace); it also shows the tests above exercise the cache.
    const s = await stf('return "v1"');
    expect(await cachedRead(() => instantRun(h, { stf_id: s.id }))).toBe('v1');
    const silent = insertVersion(s.id, '2', 'return "v2"');
    await raw.query(silent.text, silent.values);
    expect(await instantRun(h, { stf_id: s.id })).toBe('v1');
    await raw.query("SELECT pg_notify('wds_invalidate', $1)", [`ws:${ws.id}`]);
    await eventually(() => instantRun(h, { stf_id: s.id }), 'v2');
  });

  it("a workspace's cached versions are never another workspace's", async () => {
    const s = await stf('return "mine"');
    expect(await instantRun(h, { stf_id: s.id })).toBe('mine');
    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    const r = await h.call('POST', '/api/v1/stfs/instant-run', { token: stranger.token, workspace: theirs.id, body: { stf_id: s.id } });
    expect(r.status).toBe(404);
    const byVersion = await h.call('POST', '/api/v1/stfs/instant-run', { token: stranger.token, workspace: theirs.id, body: { stf_version_id: s.versionId } });
    expect(byVersion.status).toBe(404);
  });

  it('with its listener down a process serves nothing from the cache', async () => {
    deaf = await Harness.create({}, h.url);
    const s = await stf('return "v1"');
    expect(await instantRun(deaf, { stf_id: s.id })).toBe('v1');
    await deaf.services.bus.stop();
    // A change whose message can never arrive at this process.
    await raw.query(insertVersion(s.id, '2', 'return "v2"').text, insertVersion(s.id, '2', 'return "v2"').values);
    expect(await instantRun(deaf, { stf_id: s.id })).toBe('v2');
  });
});

describe('workflow execution and the run cache', () => {
  it('in the process that made a change, the very next execution sees it: versions, secrets, the definition, effects, deletion', async () => {
    const a = await stf('return { from: "a1", env: $env.K ?? null }');
    const b = await stf('return { from: "b1" }');
    const e = await call('POST', '/api/v1/effects', {
      name: 'e',
      version: '1',
      url: `${hook.url}/one`,
      method: 'POST',
      header_mappings: [],
      body_mappings: [{ source: { type: 'Variable', value: '$.from' }, target: 'from' }],
    });
    expect(e.status, JSON.stringify(e.body)).toBe(201);
    const created = await call('POST', '/api/v1/workflows', {
      name: 'w',
      stf_steps: [{ stf_version_id: a.versionId, input_mappings: [] }],
      effect_steps: [{ effect_version_id: e.body.version.id, input_mappings: [] }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const wf = created.body.id;
    const run = () => execute(h, wf);
    expect(await cachedRead(run)).toEqual({ from: 'a1', env: null });
    await addVersion(h, a.id, '2', 'return { from: "a2", env: $env.K ?? null }');
    expect(await run()).toEqual({ from: 'a2', env: null });

    expect(await cachedRead(run)).toEqual({ from: 'a2', env: null });
    await call('POST', `/api/v1/stfs/${a.id}/secrets`, { env_key: 'K', value: 'secret-1' });
    expect(await run()).toEqual({ from: 'a2', env: 'secret-1' });

    expect(await cachedRead(run)).toEqual({ from: 'a2', env: 'secret-1' });
    const patched = await call('PATCH', `/api/v1/workflows/${wf}`, { stf_steps: [{ stf_version_id: b.versionId, input_mappings: [] }] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await run()).toEqual({ from: 'b1' });

    expect(await cachedRead(run)).toEqual({ from: 'b1' });
    hook.bodies.length = 0;
    const v2 = await call('POST', `/api/v1/effects/${e.body.id}/versions`, {
      version: '2',
      url: `${hook.url}/two`,
      method: 'POST',
      header_mappings: [],
      body_mappings: [{ source: { type: 'Variable', value: '$.from' }, target: 'second' }],
    });
    expect(v2.status, JSON.stringify(v2.body)).toBe(201);
    await run();
    expect(hook.bodies.map((x) => JSON.parse(x))).toEqual([{ second: 'b1' }]);

    expect(await cachedRead(run)).toEqual({ from: 'b1' });
    await call('DELETE', `/api/v1/stfs/${b.id}`);
    expect(await run()).toBe(422);

    await call('PATCH', `/api/v1/workflows/${wf}`, { stf_steps: [{ stf_version_id: a.versionId, input_mappings: [] }] });
    expect(await cachedRead(run)).toEqual({ from: 'a2', env: 'secret-1' });
    await call('DELETE', `/api/v1/workflows/${wf}`);
    expect(await run()).toBe(404);
  });

  it('another process: a new version committed on another connection, a definition changed through another API process', async () => {
    const a = await stf('return "a1"');
    const b = await stf('return "b1"');
    const created = await call('POST', '/api/v1/workflows', { name: 'w', stf_steps: [{ stf_version_id: a.versionId, input_mappings: [] }] });
    const wf = created.body.id;
    expect(await execute(h, wf)).toBe('a1');

    await commitElsewhere([insertVersion(a.id, '2', 'return "a2"')]);
    await eventually(() => execute(h, wf), 'a2');

    const patched = await as(other)('PATCH', `/api/v1/workflows/${wf}`, { stf_steps: [{ stf_version_id: b.versionId, input_mappings: [] }] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await eventually(() => execute(h, wf), 'b1');
    await as(other)('DELETE', `/api/v1/workflows/${wf}`);
    await eventually(() => execute(h, wf), 404);
  });
});
