/**
 * Issue 28, finding 9: one user, many workspaces. Fair sharing is by the workspaces' creator first, then by
 * workspace, so one user's load over any number of their workspaces gets one share; and MAX_WORKSPACES_PER_USER
 * bounds how many they create.
 *
 * Counts are asserted (pg_stat_activity, the runtime's queue statistics), never durations: abusing statements and
 * runs wait on gates the test holds (a table lock, a gate table), and the tests poll for their conditions.
 */
import { workspaceRole, physicalName, USER_SCHEMA } from '@wds/sql-rewriter';
import pg from 'pg';
import { afterAll, beforeAll, test } from 'vitest';
import { describe, expect, Harness, stfQueue, until } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
type User = Awaited<ReturnType<Harness['user']>>;

describe('MAX_WORKSPACES_PER_USER through POST /api/v1/workspaces', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ MAX_WORKSPACES_PER_USER: '3' });
  }, 120_000);
  afterAll(() => h?.close());

  test('one more than the quota is 403 FORBIDDEN; a deleted workspace frees its place; other users are not counted', async () => {
    const a = await h.user('quota-a');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await h.workspace(a.token, `a${i}`)).id);
    const refused = await h.call('POST', '/api/v1/workspaces', { token: a.token, body: { name: 'a3' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FORBIDDEN', error: expect.stringContaining('3 workspaces'), details: expect.stringContaining('MAX_WORKSPACES_PER_USER') });
    const listed = await h.call('GET', '/api/v1/workspaces', { token: a.token });
    expect(listed.body).toHaveLength(3);

    // Workspaces A was added to as an admin are not A's: B's quota, not A's.
    const b = await h.user('quota-b');
    const bws = await h.workspace(b.token, 'b0');
    await h.addMember(b.token, bws.id, a.email, 'admin');
    expect((await h.call('POST', '/api/v1/workspaces', { token: a.token, body: { name: 'a3' } })).status).toBe(403);

    expect((await h.call('DELETE', `/api/v1/workspaces/${ids[0]}`, { token: a.token })).status).toBe(204);
    expect((await h.call('POST', '/api/v1/workspaces', { token: a.token, body: { name: 'a3' } })).status).toBe(201);
    expect((await h.call('POST', '/api/v1/workspaces', { token: a.token, body: { name: 'a4' } })).status).toBe(403);
  });

  test('concurrent creations cannot pass the count together', async () => {
    const c = await h.user('quota-c');
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => h.call('POST', '/api/v1/workspaces', { token: c.token, body: { name: `c${i}` } })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(3);
    expect(answers.filter((r) => r.status === 403)).toHaveLength(5);
    expect((await h.call('GET', '/api/v1/workspaces', { token: c.token })).body).toHaveLength(3);
  });
});

describe("SQL: one user's statements over many workspaces hold one share of the connections", () => {
  let h: Harness;
  let admin: pg.Client;
  beforeAll(async () => {
    // Four connections in all, two per principal (also among others: the shared cap is the same here).
    h = await Harness.create({
      SQL_POOL_MAX: '4',
      SQL_WORKSPACE_CONNECTIONS: '2',
      SQL_WORKSPACE_CONNECTIONS_SHARED: '2',
      SQL_STATEMENT_TIMEOUT_MS: '60000',
      SQL_ACQUIRE_TIMEOUT_MS: '15000',
    });
    admin = new pg.Client({ connectionString: h.url });
    await admin.connect();
  }, 120_000);
  afterAll(async () => {
    await admin?.end();
    await h?.close();
  });

  async function withTable(user: User, name: string) {
    const ws = (await h.workspace(user.token, name)).id;
    await h.sqlOk(user.token, ws, 'CREATE TABLE t (x int)');
    await h.allowAll(user.token, ws, [user.id], ['t']);
    return ws;
  }

  test("another user's SELECT gets a connection while one user's statements in three workspaces wait on a lock", async () => {
    const abuser = await h.user('sql-abuser');
    const spread = [await withTable(abuser, 'a1'), await withTable(abuser, 'a2'), await withTable(abuser, 'a3')];
    const victim = await h.user('sql-victim');
    const mine = await withTable(victim, 'v');

    // Every abusing statement blocks on a lock of its table held here, so it holds its connection until released.
    await admin.query('BEGIN');
    for (const ws of spread) await admin.query(`LOCK TABLE ${USER_SCHEMA}.${physicalName(ws, 't')} IN ACCESS EXCLUSIVE MODE`);
    const roles = spread.map(workspaceRole);
    const blocked = async () =>
      (
        await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ANY($1) AND wait_event_type = 'Lock'`, [roles])
      ).rows[0].n as number;
    // Two statements in each workspace: per workspace, six connections wanted (the pool has four).
    const abuse = spread.flatMap((ws) => [h.sql(abuser.token, ws, 'SELECT count(*) FROM t'), h.sql(abuser.token, ws, 'SELECT count(*) FROM t')]);
    await until(async () => ((await blocked()) >= 2 ? true : undefined));

    const read = await h.sql(victim.token, mine, 'SELECT count(*) AS n FROM t');
    expect(read.status).toBe(200);
    expect(await blocked()).toBe(2);

    await admin.query('COMMIT');
    for (const r of await Promise.all(abuse)) expect([200, 429]).toContain(r.status);
  });
});

/** Notes its start, waits until its workspace's gate table has a row (polled through sql()), then answers. */
const GATED = 'while (sql("SELECT count(*)::int AS n FROM gate")[0].n === 0) {}\nreturn { who: $input };';

describe("STFs: one user's runs over many workspaces hold one share of the workers (javascript, two workers)", () => {
  let h: Harness;
  beforeAll(async () => {
    // Two workers; STF_WORKSPACE_MAX_RUNNING by default half of them: one, for all of one user's workspaces.
    h = await Harness.create({ STF_JS_WORKERS: '2', STF_TIMEOUT_MS: '20000' });
  }, 120_000);
  afterAll(() => h?.close());

  const saveStf = async (user: User, ws: string, code: string) => {
    const r = await h.call('POST', '/api/v1/stfs', { token: user.token, workspace: ws, body: { name: 's', version: '1', runtime: 'javascript', code: b64(code) } });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
    return r.body.id as string;
  };
  const run = (user: User, ws: string, stf: string, input: unknown) =>
    h.call('POST', '/api/v1/stfs/instant-run', { token: user.token, workspace: ws, body: { stf_id: stf, input } });
  const queue = () => stfQueue(h);

  test("another user's run finds a free worker while one user's gated runs in three workspaces wait", async () => {
    const abuser = await h.user('stf-abuser');
    const spread = [];
    for (const name of ['a1', 'a2', 'a3']) {
      const ws = (await h.workspace(abuser.token, name)).id;
      await h.sqlOk(abuser.token, ws, 'CREATE TABLE gate (x int)');
      await h.allowAll(abuser.token, ws, [abuser.id], ['gate']);
      spread.push({ ws, stf: await saveStf(abuser, ws, GATED) });
    }
    const victim = await h.user('stf-victim');
    const mine = (await h.workspace(victim.token, 'v')).id;
    const quick = await saveStf(victim, mine, 'return { n: $input.n + 1 };');

    const abuse = spread.map((s, i) => run(abuser, s.ws, s.stf, `a${i}`));
    const principal = `user:${abuser.id}`;
    await until(async () => {
      const p = queue().principals[principal];
      return p && p.running + p.waiting === 3 ? true : undefined;
    });
    // Per workspace, each of the three would have had a worker of its own (both workers): one for the user.
    expect(queue().principals[principal]).toEqual({ running: 1, waiting: 2 });

    const r = await run(victim, mine, quick, { n: 1 });
    expect(r.body).toMatchObject({ success: true, output: { n: 2 } });

    for (const s of spread) await h.sqlOk(abuser.token, s.ws, 'INSERT INTO gate (x) VALUES (1)');
    for (const a of await Promise.all(abuse)) expect(a.body).toMatchObject({ success: true });
  });
});
