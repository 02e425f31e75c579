// Issue 29 (point 4.3): an STF run whose database connection dies is a database outage, not the user's failure —
// instant-run and workflow execute answer 503 SERVICE_UNAVAILABLE with Retry-After (docs/operations.md, "Losing the
// database"), keep nothing the run wrote, and the next run works; the user's own SQL error stays the user's.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, hex, underscored, until } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
const call = (method: string, path: string, body?: unknown) => h.call(method, path, { token: owner.token, workspace: ws.id, body });

/** An STF of `code` (javascript), and a workflow running it as its one step. */
async function stfAndWorkflow(name: string, code: string): Promise<{ stfId: string; workflowId: string }> {
  const stf = await call('POST', '/api/v1/stfs', { name, version: '1', runtime: 'javascript', code: b64(code) });
  expect(stf.status, JSON.stringify(stf.body)).toBe(201);
  // Workflow steps run as the STF: it may insert into and read notes.
  const group = await h.group(owner.token, ws.id, { name: `stf ${name}`, stf_ids: [stf.body.id] });
  for (const operation of ['insert', 'select']) await h.policy(owner.token, ws.id, { policy_group_id: group, table_name: 'notes', operation });
  const wf = await call('POST', '/api/v1/workflows', { name, stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] });
  expect(wf.status, JSON.stringify(wf.body)).toBe(201);
  return { stfId: stf.body.id, workflowId: wf.body.id };
}

/**
 * Runs `request` while a service connection holds a lock on notes, so the run's INSERT waits on it; then ends the
 * run's backend (the workspace role's, waiting for that lock) with pg_terminate_backend, as a database restart would.
 */
async function withConnectionKilled<T>(request: () => Promise<T>): Promise<T> {
  const service: pg.PoolClient = await h.services.pool.connect();
  try {
    await service.query('BEGIN');
    await service.query(`LOCK TABLE user_data.ws_${underscored(ws.id)}_notes IN ACCESS EXCLUSIVE MODE`);
    const answer = request();
    const pid = await until(async () => {
      await service.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await service.query("SELECT pid FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'", [`wds_ws_${hex(ws.id)}`]);
      return rows[0]?.pid as number | undefined;
    });
    await service.query('SELECT pg_terminate_backend($1)', [pid]);
    await service.query('COMMIT');
    return await answer;
  } finally {
    service.release();
  }
}

const cutOffRows = async () => (await h.sqlOk(owner.token, ws.id, "SELECT count(*)::int AS n FROM notes WHERE body = 'cut off'")).rows[0].n;

beforeAll(async () => {
  h = await Harness.create({ STF_TIMEOUT_MS: '30000' });
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Outage');
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (body text)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['notes']);
});
afterAll(async () => {
  await h?.close();
});

describe('an STF whose database connection dies', () => {
  const uncaught = "sql(\"INSERT INTO notes (body) VALUES ('cut off')\"); return 'written';";
  // Code that catches the failure and carries on must not turn the lost write into a success either.
  const caught = "try { sql(\"INSERT INTO notes (body) VALUES ('cut off')\"); } catch (e) { return { swallowed: String(e) }; } return 'written';";

  it('instant-run answers 503 SERVICE_UNAVAILABLE with Retry-After, keeps nothing, and the next run works', async () => {
    for (const [name, code] of [['uncaught', uncaught], ['caught', caught]] as const) {
      const { stfId } = await stfAndWorkflow(`instant ${name}`, code);
      const r = await withConnectionKilled(() => call('POST', '/api/v1/stfs/instant-run', { stf_id: stfId, input: {} }));
      expect([r.status, r.body?.code, r.headers.get('retry-after')], `${name}: ${JSON.stringify(r.body)}`).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      expect(await cutOffRows()).toBe(0);
      const again = await call('POST', '/api/v1/stfs/instant-run', { stf_id: stfId, input: {} });
      expect([again.status, again.body.success, again.body.output], name).toEqual([200, true, 'written']);
      await h.sqlOk(owner.token, ws.id, "DELETE FROM notes WHERE body = 'cut off'");
    }
  });

  it('workflow execute answers 503 naming the run, which is recorded failed as an outage; the next execution works', async () => {
    for (const [name, code] of [['uncaught', uncaught], ['caught', caught]] as const) {
      const { workflowId } = await stfAndWorkflow(`workflow ${name}`, code);
      const r = await withConnectionKilled(() => call('POST', `/api/v1/workflows/${workflowId}/execute`, {}));
      expect([r.status, r.body?.code, r.headers.get('retry-after')], `${name}: ${JSON.stringify(r.body)}`).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      const details = JSON.parse(r.body.details);
      expect(details).toMatchObject({ run_id: expect.any(String), step: 'stf_steps[0]', kind: 'database_unavailable' });
      const run = (await call('GET', `/api/v1/workflows/${workflowId}/runs/${details.run_id}`)).body;
      expect(run).toMatchObject({ status: 'failed', error: { step: 'stf_steps[0]', kind: 'database_unavailable' } });
      expect(await cutOffRows()).toBe(0);
      const again = await call('POST', `/api/v1/workflows/${workflowId}/execute`, {});
      expect([again.status, again.body], name).toEqual([200, 'written']);
      await h.sqlOk(owner.token, ws.id, "DELETE FROM notes WHERE body = 'cut off'");
    }
  });

  it("the user's own SQL error stays the user's: 200 success false (instant-run), 422 RUNTIME_ERROR (execute)", async () => {
    const { stfId, workflowId } = await stfAndWorkflow('own error', 'return sql("SELECT missing_column FROM notes");');
    const r = await call('POST', '/api/v1/stfs/instant-run', { stf_id: stfId, input: {} });
    expect([r.status, r.body.success, r.body.error?.kind]).toEqual([200, false, 'runtime']);
    const e = await call('POST', `/api/v1/workflows/${workflowId}/execute`, {});
    expect([e.status, e.body.code, JSON.parse(e.body.details).kind]).toEqual([422, 'RUNTIME_ERROR', 'runtime']);
  });
});
