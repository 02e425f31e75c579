import '@wds/testkit';
import { createDb, migrateToLatest, newId, sql, asUuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPolicy, createPolicyGroup, deletePolicyGroup, isInGroup, updatePolicy } from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const ws = newId();
const user = newId();

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'policies' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values({ id: ws, name: 'w' }).execute();
  await sql`CREATE TABLE user_data.${sql.raw(`ws_${ws.replace(/-/g, '_')}_docs`)} (owner_id uuid, status text)`.execute(db);
});
afterAll(() => db.destroy());

describe('policies storage', () => {
  it('keeps the condition as written, checks columns of existing tables, and guards group deletion', async () => {
    const g = await createPolicyGroup(db, ws, { name: 'g', user_ids: [user, user.toUpperCase()], stf_ids: [] });
    expect(g.user_ids).toEqual([user]);
    expect(await isInGroup(db, ws, g.id, user)).toBe(true);
    expect(await isInGroup(db, ws, g.id, newId())).toBe(false);
    const p = await createPolicy(db, ws, { name: 'own', policy_group_id: g.id, mode: 'allow', table_name: 'docs', operation: 'select', condition: { owner_id: '$user_id' } });
    expect(p.condition).toEqual({ owner_id: '$user_id' });
    await expect(updatePolicy(db, ws, asUuid(p.id), { condition: { nope: 1 } })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    // A table that does not exist yet: columns cannot be checked, the condition is still validated.
    await createPolicy(db, ws, { name: 'later', policy_group_id: g.id, mode: 'deny', table_name: 'later', operation: 'delete', condition: { anything: 1 } });
    await expect(deletePolicyGroup(db, ws, asUuid(g.id))).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});
